# Perplexity vs window length (log x): one line per architecture and configuration, the bootstrap 95% interval
# over windows as error bars (a cell of one window has none). Data (dat): index blocks, first line the title;
# columns window, ppl, ci_lo, ci_hi. Variables: n, colors, dashes, points, widths, sizes, xt, yt, yr.
set title 'Perplexity vs window length' font ',14'
set logscale x 2
set logscale y 10
set xlabel 'window length (tokens)'
set ylabel 'perplexity (log scale)'
eval('set xtics '.xt)
eval('set ytics '.yt)
eval('set yrange '.yr)
set offsets graph 0.05, graph 0.05, 0, 0
set key outside right top
set rmargin rm
plot for [i=0:n-1] dat index i using 1:2:3:4 with yerrorlines lw real(word(widths, i+1)) ps real(word(sizes, i+1)) \
         lc rgb word(colors, i+1) dt int(word(dashes, i+1)) pt int(word(points, i+1)) title columnheader(1)
