# Prefill latency vs context length, log-log: one line per architecture (the median, with the bootstrap 95%
# interval of the median as error bars), and the PyTorch SDPA anchors (attention op only, dashed) when given.
# Data (dat): index blocks, one per series; each block's first line holds its title; columns ctx, median_s,
# ci_lo_s, ci_hi_s. Variables: n (blocks), colors / dashes / points (one word per block), xt (xtics),
# subtitle, and those of common.gp.
w = 1250
load plotdir.'/common.gp'
# Earlier series are drawn wider, with bigger markers, so that a curve lying on another stays visible.
set title sprintf("Prefill latency vs context length\n%s", subtitle) font ',14'
set logscale x 2
set logscale y 10
set format y '%g'
set xlabel 'context length (tokens)'
set ylabel 'time per prefill (s, log scale)'
eval('set xtics '.xt)
# Log y: the range hugs the data (no extension to the next decade), plus a small margin.
set autoscale yfix
set offsets graph 0.03, graph 0.03, graph 0.06, graph 0.06
set key outside right top
plot for [i=0:n-1] dat index i using 1:2:3:4 with yerrorlines lw (1.5 + 2.0*(n-1-i)/n) ps (1.5 - 0.6*i/n) lc rgb word(colors, i+1) \
     dt int(word(dashes, i+1)) pt int(word(points, i+1)) title columnheader(1)
