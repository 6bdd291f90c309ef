# Achieved TFLOP/s (left) and TB/s (right) of every measurement, from the stated cost model over the median,
# against the ceilings measured in the same run (an n^3 GEMM and a device copy; docs/bench.md).
# Data (dat): index blocks, one per (arch, phase) series, first line the title; columns ctx, tflops, tbps.
# Ceilings (ceil): index blocks, one per result file, first line the title; columns ctx, gemm_tflops,
# copy_tbps (two rows spanning the file's lengths). Variables: n, nc, colors, dashes, points, xt, subtitle,
# and those of common.gp.
w = 1500
h = 680
load plotdir.'/common.gp'
# Earlier series are drawn wider, with bigger markers, so that a curve lying on another stays visible.
# Two panels of equal size side by side and one legend, for both, on the right.
set multiplot title sprintf("Achieved throughput against the measured ceilings\n%s", subtitle) font ',14'
set tmargin at screen 0.82
set bmargin at screen 0.14
set logscale x 2
set logscale y 10
set format y '%g'
set xlabel 'context length (tokens)'
eval('set xtics '.xt)
# Log y: the range hugs the data (no extension to the next decade), plus a small margin.
set autoscale yfix
set offsets graph 0.03, graph 0.03, graph 0.06, graph 0.06
unset key
set ylabel 'TFLOP/s (log scale)'
set lmargin at screen 0.05
set rmargin at screen 0.34
set title 'compute: FLOPs of the cost model / median time'
plot for [i=0:n-1] dat index i using 1:2 with linespoints lw (1.5 + 2.0*(n-1-i)/n) ps (1.5 - 0.6*i/n) lc rgb word(colors, i+1) \
         dt int(word(dashes, i+1)) pt int(word(points, i+1)) title columnheader(1), \
     for [j=0:nc-1] ceil index j using 1:2 with lines lw 3 lc rgb '#222222' dt j+1 title columnheader(1)
set ylabel 'TB/s (log scale)'
set lmargin at screen 0.41
set rmargin at screen 0.70
set key at screen 0.995, 0.82 right top nobox noopaque
set title 'memory: bytes of the cost model / median time'
unset label 99
plot for [i=0:n-1] dat index i using 1:3 with linespoints lw (1.5 + 2.0*(n-1-i)/n) ps (1.5 - 0.6*i/n) lc rgb word(colors, i+1) \
         dt int(word(dashes, i+1)) pt int(word(points, i+1)) title columnheader(1), \
     for [j=0:nc-1] ceil index j using 1:3 with lines lw 3 lc rgb '#222222' dt j+1 title columnheader(1)
unset multiplot
