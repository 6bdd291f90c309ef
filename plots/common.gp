# Settings shared by every figure, read first. The driver (plots/plot.c) sets before it: fmt ('png', 'svg' or
# 'pdf'), out, dat and txt (the figure's output, data and text files, fixed names in the output folder), and the
# figure's own variables (numbers, colours and tic lists only). w and h: size in pixels (default 1000 x 620).
if (!exists('w')) w = 1000
if (!exists('h')) h = 620
if (fmt eq 'svg') {
    set terminal svg size w, h dynamic noenhanced font 'Sans,13' background rgb 'white'
} else {
    if (fmt eq 'pdf') {
        set terminal pdfcairo size w/100.0, h/100.0 noenhanced font 'Sans,9'
    } else {
        set terminal pngcairo size w, h noenhanced font 'Sans,11' background rgb 'white'
    }
}
set output out
set encoding utf8
set border lw 1 lc rgb '#333333'
set grid xtics ytics mytics lc rgb '#dddddd' lw 1 dt 1, lc rgb '#eeeeee' lw 1 dt 1
set key opaque box lw 1 lc rgb '#bbbbbb' samplen 3 spacing 1.1 font ',10'
set key autotitle columnheader
set bmargin 6
set multiplot
