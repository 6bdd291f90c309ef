# Decode time per step vs KV-cache length: one line per architecture, the median with the bootstrap 95%
# interval of the median as error bars. Linear time axis from 0, so that differences keep their size.
# Data (dat): index blocks, first line the title; columns ctx, median_s, ci_lo_s, ci_hi_s.
# Variables: n, colors, dashes, points, xt, subtitle, ylab, and those of common.gp.
w = 1250
load plotdir.'/common.gp'
# Earlier series are drawn wider, with bigger markers, so that a curve lying on another stays visible.
set title sprintf("Decode time per token vs cache length\n%s", subtitle) font ',14'
set logscale x 2
set xlabel 'KV-cache length (tokens)'
set ylabel ylab
eval('set xtics '.xt)
set offsets graph 0.03, graph 0.03, graph 0.08, 0
set yrange [0:*]
set key outside right top
plot for [i=0:n-1] dat index i using 1:($2*1e3):($3*1e3):($4*1e3) with yerrorlines lw (1.5 + 2.0*(n-1-i)/n) ps (1.5 - 0.6*i/n) \
     lc rgb word(colors, i+1) dt int(word(dashes, i+1)) pt int(word(points, i+1)) title columnheader(1)
