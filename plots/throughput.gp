# Achieved TFLOP/s (left) and TB/s (right) of every measurement, from the stated cost model over the median,
# against the ceilings measured in the same run (a GEMM and a device copy; docs/bench.md), dashed.
# Data (dat): index blocks, one per (arch, phase) series, first line the title; columns ctx, tflops, tbps.
# Variables: n, colors, dashes, points, xt, yt1, yr1, yt2, yr2, gemm, copy (-1: not measured).
set logscale x 2
set logscale y 10
set xlabel 'context length (tokens)'
eval('set xtics '.xt)
set offsets graph 0.03, graph 0.03, 0, 0
set tmargin at screen 0.90
set bmargin at screen 0.14
set key inside left top font ',9'
set ylabel 'TFLOP/s (log scale)'
eval('set ytics '.yt1)
eval('set yrange '.yr1)
set lmargin at screen 0.07
set rmargin at screen 0.45
set title 'compute: cost-model FLOPs / median time' font ',13'
plot for [i=0:n-1] dat index i using 1:2 with linespoints lw (1.5 + 2.0*(n-1-i)/n) ps (1.5 - 0.6*i/n) lc rgb word(colors, i+1) \
         dt int(word(dashes, i+1)) pt int(word(points, i+1)) title columnheader(1), \
     (gemm > 0 ? gemm : 1/0) with lines lw 2 dt 2 lc rgb '#222222' title 'GEMM ceiling'
set ylabel 'TB/s (log scale)'
eval('set ytics '.yt2)
eval('set yrange '.yr2)
set lmargin at screen 0.57
set rmargin at screen 0.98
set title 'memory: cost-model bytes / median time' font ',13'
plot for [i=0:n-1] dat index i using 1:3 with linespoints lw (1.5 + 2.0*(n-1-i)/n) ps (1.5 - 0.6*i/n) lc rgb word(colors, i+1) \
         dt int(word(dashes, i+1)) pt int(word(points, i+1)) notitle, \
     (copy > 0 ? copy : 1/0) with lines lw 2 dt 2 lc rgb '#222222' title 'copy ceiling'
