# The whole decode step of each shape (model, batch, cache depth) against its floor and the PyTorch decode-step
# anchors: ms a step of the batch on a log axis, a category per shape.
# Data (dat): index 0 the shapes, first line a header: x, the floor in seconds (the bytes a step reads over the run's
# read ceiling), the shape's name (drawn as its tic label); then a block per series, first line the title: x (the
# category, spread by series), median_s, ci95_lo_s, ci95_hi_s, a note drawn above the point (every other series'
# a line higher, so that neighbours' notes do not overlap).
# Variables: n, colors, points, sizes, yt, yr, nshape, rm.
set title 'Decode step per shape: ours against the floor and PyTorch' font ',14'
set logscale y 10
set ylabel 'time per decode step of the batch (ms, log scale)'
eval('set ytics '.yt)
eval('set yrange '.yr)
set xrange [-0.6:nshape-0.4]
set xtics nomirror rotate by -20 font ',10'
set grid noxtics
set key outside right top
set rmargin rm
plot dat index 0 using ($1-0.42):($2*1e3):(0.84):(0) with vectors nohead lw 2 dt 1 lc rgb '#222222' \
         title 'floor: the bytes a step reads / read ceiling', \
     dat index 0 using 1:($2*1e3):xtic(3) with dots lc rgb '#222222' notitle, \
     for [i=1:n] dat index i using 1:($2*1e3):($3*1e3):($4*1e3) with yerrorbars lw real(word(widths, i)) \
         ps real(word(sizes, i)) pt int(word(points, i)) lc rgb word(colors, i) title columnheader(1), \
     for [i=1:n] dat index i using 1:($2*1e3):5 with labels offset char 0, 1.3 + 1.1 * ((i + 1) % 2) font ',9' \
         tc rgb word(colors, i) notitle
