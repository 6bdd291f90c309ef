# Prefill latency of the whole model vs context length, log-log: one line per architecture (the median, with the
# bootstrap 95% interval of the median as error bars); when nskip is 1 the last block holds the cells that were
# not run, drawn as crosses on the top edge. Data (dat): index blocks, first line the title; columns ctx,
# median_s, ci_lo_s, ci_hi_s. Variables: n, colors, dashes, points, xt, yt, yr, nskip.
set title 'Prefill latency vs context length' font ',14'
set logscale x 2
set logscale y 10
set xlabel 'context length (tokens)'
set ylabel 'time per prefill (s, log scale)'
eval('set xtics '.xt)
eval('set ytics '.yt)
eval('set yrange '.yr)
set offsets graph 0.03, graph 0.03, 0, 0
set key inside left top
m = n - nskip
plot for [i=0:m-1] dat index i using 1:2:3:4 with yerrorlines lw (1.5 + 2.0*(m-1-i)/m) ps (1.5 - 0.6*i/m) \
         lc rgb word(colors, i+1) dt int(word(dashes, i+1)) pt int(word(points, i+1)) title columnheader(1), \
     for [i=m:n-1] dat index i using 1:2 with points pt 2 ps 2 lc rgb '#888888' title columnheader(1)
