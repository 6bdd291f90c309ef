# Prefill latency of the whole model vs context length, log-log: one line per architecture and configuration (the
# median, with the bootstrap 95% interval of the median as error bars); when nskip is 1 the last block holds the
# cells that were not run, drawn as crosses on the top edge. Data (dat): index blocks, first line the title;
# columns ctx, median_s, ci_lo_s, ci_hi_s. Variables: n, colors, dashes, points, widths, sizes, xt, yt, yr, nskip.
set title 'Prefill latency vs context length' font ',14'
set logscale x 2
set logscale y 10
set xlabel 'context length (tokens)'
set ylabel 'time per prefill (s, log scale)'
eval('set xtics '.xt)
eval('set ytics '.yt)
eval('set yrange '.yr)
set offsets graph 0.03, graph 0.03, 0, 0
set key outside right top
set rmargin rm
m = n - nskip
# (an empty iteration in a plot list makes gnuplot warn: the cells not run are plotted only when there are some)
if (nskip) {
    plot for [i=0:m-1] dat index i using 1:2:3:4 with yerrorlines lw real(word(widths, i+1)) ps real(word(sizes, i+1)) \
             lc rgb word(colors, i+1) dt int(word(dashes, i+1)) pt int(word(points, i+1)) title columnheader(1), \
         dat index m using 1:2 with points pt 2 ps 2 lc rgb '#888888' title columnheader(1)
} else {
    plot for [i=0:m-1] dat index i using 1:2:3:4 with yerrorlines lw real(word(widths, i+1)) ps real(word(sizes, i+1)) \
             lc rgb word(colors, i+1) dt int(word(dashes, i+1)) pt int(word(points, i+1)) title columnheader(1)
}
