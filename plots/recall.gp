# Recall accuracy per architecture: one bar each with its Wilson 95% interval, the architecture and its count in the
# key. Data (dat): index blocks, one per architecture, first line the title; columns position, accuracy, ci_lo,
# ci_hi. Variables: n, colors, xmax.
set title 'In-context recall: accuracy per architecture' font ',14'
set ylabel 'accuracy (contains-match)'
set yrange [0:1.05]
set xrange [-0.7:xmax - 0.3]
unset xtics
set ytics 0.1
set style fill solid 0.6 border lc rgb '#333333'
set boxwidth 0.7
set key outside right top
set rmargin 30
plot for [i=0:n-1] dat index i using 1:2 with boxes lc rgb word(colors, i+1) title columnheader(1), \
     for [i=0:n-1] dat index i using 1:2:3:4 with yerrorbars lc rgb '#222222' pt 0 notitle
