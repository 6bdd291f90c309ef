# Achieved TFLOP/s (left) and TB/s (right) of every measurement, from the stated cost model over the median, per
# GPU when pergpu is 1 (a tensor-parallel world's rate over its ranks), against the one-GPU ceilings measured in
# each run (a GEMM and a device copy; docs/bench.md), dashed. The key sits below the panels.
# Data (dat): index blocks, first line the title: blocks 0..m-1 the measurements (columns ctx, tflops, tbps), then
# ng GEMM ceilings (tbps NaN), then nc copy ceilings (tflops NaN), each two points across the x range.
# Variables: n, m, ng, nc, pergpu, colors, dashes, points, widths, sizes, xt, yt1, yr1, yt2, yr2.
set logscale x 2
set logscale y 10
set xlabel 'context length (tokens)'
eval('set xtics '.xt)
set offsets graph 0.03, graph 0.03, 0, 0
set tmargin at screen 0.92
set bmargin at screen 0.42
set key at screen 0.07, screen 0.31 left top horizontal maxcols 2 font ',10' width 2
set ylabel (pergpu ? 'TFLOP/s per GPU (log scale)' : 'TFLOP/s (log scale)')
eval('set ytics '.yt1)
eval('set yrange '.yr1)
set lmargin at screen 0.07
set rmargin at screen 0.45
set title (pergpu ? 'compute: cost-model FLOPs / median time / GPUs' : 'compute: cost-model FLOPs / median time') font ',13'
plot for [i=0:m+ng-1] dat index i using 1:2 with linespoints lw real(word(widths, i+1)) ps real(word(sizes, i+1)) \
         lc rgb word(colors, i+1) dt int(word(dashes, i+1)) pt int(word(points, i+1)) title columnheader(1)
set ylabel (pergpu ? 'TB/s per GPU (log scale)' : 'TB/s (log scale)')
eval('set ytics '.yt2)
eval('set yrange '.yr2)
set lmargin at screen 0.57
set rmargin at screen 0.98
set key at screen 0.57, screen 0.31 left top horizontal maxcols 1 font ',10' width 2
set title (pergpu ? 'memory: cost-model bytes / median time / GPUs' : 'memory: cost-model bytes / median time') font ',13'
# (an empty iteration in a plot list makes gnuplot warn: the copy ceilings are plotted only when there are some)
if (nc > 0) {
    plot for [i=0:m-1] dat index i using 1:3 with linespoints lw real(word(widths, i+1)) ps real(word(sizes, i+1)) \
             lc rgb word(colors, i+1) dt int(word(dashes, i+1)) pt int(word(points, i+1)) notitle, \
         for [i=m+ng:n-1] dat index i using 1:3 with lines lw real(word(widths, i+1)) lc rgb word(colors, i+1) \
             dt int(word(dashes, i+1)) title columnheader(1)
} else {
    plot for [i=0:m-1] dat index i using 1:3 with linespoints lw real(word(widths, i+1)) ps real(word(sizes, i+1)) \
             lc rgb word(colors, i+1) dt int(word(dashes, i+1)) pt int(word(points, i+1)) notitle
}
