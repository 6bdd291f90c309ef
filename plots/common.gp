# Settings shared by every figure, loaded first by each script.
# Variables (gnuplot -e): fmt ('png' or 'svg'), out (the output file), corner (GPU and commit, drawn in the
# bottom right corner), w and h (size in pixels; default 1000 x 650).
if (!exists('w')) w = 1000
if (!exists('h')) h = 650
if (fmt eq 'svg') {
    set terminal svg size w, h dynamic noenhanced font 'Sans,13' background rgb 'white'
} else {
    set terminal pngcairo size w, h noenhanced font 'Sans,11' background rgb 'white'
}
set output out
set encoding utf8
set border lw 1 lc rgb '#333333'
set grid xtics ytics mytics lc rgb '#dddddd' lw 1 dt 1, lc rgb '#eeeeee' lw 1 dt 1
set key opaque box lw 1 lc rgb '#bbbbbb' samplen 3 spacing 1.1 font ',10'
set key autotitle columnheader
set bmargin 5
set label 99 corner at screen 0.995, 0.015 right font ',9' tc rgb '#555555' front
