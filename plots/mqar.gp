# Multi-query associative recall: accuracy vs number of key-value pairs, one line per (architecture, context
# length), with the Wilson 95% interval as error bars.
# Data (dat): index blocks, one per series, first line the title; columns pairs, accuracy, ci_lo, ci_hi.
# Variables: n, colors, dashes, points, xt, subtitle, and those of common.gp.
w = 1250
load plotdir.'/common.gp'
# Earlier series are drawn wider, with bigger markers, so that a curve lying on another stays visible.
set title sprintf("Multi-query associative recall: accuracy vs number of pairs\n%s", subtitle) font ',14'
set logscale x 2
set xlabel 'key-value pairs in the context'
set ylabel 'accuracy (Wilson 95% interval)'
eval('set xtics '.xt)
set offsets graph 0.03, graph 0.03, graph 0.04, graph 0.04
set yrange [-0.02:1.05]
set ytics 0.1
set key outside right top
plot for [i=0:n-1] dat index i using 1:2:3:4 with yerrorlines lw (1.5 + 2.0*(n-1-i)/n) ps (1.5 - 0.6*i/n) lc rgb word(colors, i+1) \
     dt int(word(dashes, i+1)) pt int(word(points, i+1)) title columnheader(1)
