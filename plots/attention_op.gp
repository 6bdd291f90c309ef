# One layer's causal attention op alone (not a model's prefill): TFLOP/s vs context length of the project's kernels
# (bench_kernels: each head dim's default version) beside the PyTorch SDPA anchors (flash, cuDNN; grey) per head dim.
# Data (dat): index blocks, first line the title; columns ctx, tflops.
# Variables: n, colors, dashes, points, widths, sizes, xt, yt, yr.
set title 'Attention op alone: achieved TFLOP/s vs context length' font ',14'
set logscale x 2
set logscale y 10
set xlabel 'context length (tokens)'
set ylabel 'TFLOP/s (log scale)'
eval('set xtics '.xt)
eval('set ytics '.yt)
eval('set yrange '.yr)
set offsets graph 0.03, graph 0.03, 0, 0
set key outside right top
set rmargin rm
plot for [i=0:n-1] dat index i using 1:2 with linespoints lw real(word(widths, i+1)) ps real(word(sizes, i+1)) \
     lc rgb word(colors, i+1) dt int(word(dashes, i+1)) pt int(word(points, i+1)) title columnheader(1)
