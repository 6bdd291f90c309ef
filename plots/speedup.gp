# Speedup of each architecture over transformer vs context length (median(transformer) / median(arch)), with the
# bootstrap 95% interval of the ratio (rounds, then samples) as a band; the paper's 21.9x prefill claim (when claim
# is 1: the speedups come within reach of it) and parity. The key sits outside, clear of both lines.
# Data (dat): index blocks, one per series, first line the title; columns ctx, speedup, ci_lo, ci_hi.
# Variables: n, colors, dashes, points, widths, sizes, xt, yt, yr, claim.
set title 'Speedup over transformer vs context length' font ',14'
set logscale x 2
set logscale y 10
set xlabel 'context length (tokens)'
set ylabel 'speedup over transformer (log scale)'
eval('set xtics '.xt)
eval('set ytics '.yt)
eval('set yrange '.yr)
set offsets graph 0.03, graph 0.03, 0, 0
set key outside right top
set rmargin rm
if (claim) {
    plot for [i=0:n-1] dat index i using 1:3:4 with filledcurves fs transparent solid 0.15 noborder \
             lc rgb word(colors, i+1) notitle, \
         for [i=0:n-1] dat index i using 1:2 with linespoints lw real(word(widths, i+1)) ps real(word(sizes, i+1)) \
             lc rgb word(colors, i+1) dt int(word(dashes, i+1)) pt int(word(points, i+1)) title columnheader(1), \
         21.9 with lines lw 2 dt 2 lc rgb '#222222' title '21.9x (the paper''s prefill claim)', \
         1 with lines lw 1 lc rgb '#888888' title 'parity (1x)'
} else {
    plot for [i=0:n-1] dat index i using 1:3:4 with filledcurves fs transparent solid 0.15 noborder \
             lc rgb word(colors, i+1) notitle, \
         for [i=0:n-1] dat index i using 1:2 with linespoints lw real(word(widths, i+1)) ps real(word(sizes, i+1)) \
             lc rgb word(colors, i+1) dt int(word(dashes, i+1)) pt int(word(points, i+1)) title columnheader(1), \
         1 with lines lw 1 lc rgb '#888888' title 'parity (1x)'
}
