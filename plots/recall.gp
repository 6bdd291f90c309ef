# Recall accuracy per configuration: one bar each with its Wilson 95% interval and its count ("24/32") above it; a
# bar of 0 is drawn as a sliver on the axis so that it shows; the configurations name the x tics (a line per
# facet that differs; the bottom margin bm in characters). Data (dat): one row per bar: x, accuracy, ci_lo, ci_hi, colour
# (0xRRGGBB), "label" (its lines split by \n), "count". Variables: xmax, bm.
set title 'In-context recall: accuracy per configuration' font ',14'
set ylabel 'accuracy (contains-match)'
set yrange [0:1.1]
set xrange [-0.7:xmax + 0.7]
set ytics 0, 0.1, 1
set style fill solid 0.7 border lc rgb '#333333'
set key noautotitle
unset key
set grid noxtics
set xtics nomirror font ',10' scale 0
set bmargin bm
plot dat using 1:($2 > 0.012 ? $2 : 0.012):(0.7):5:xtic(6) with boxes lc rgb variable, \
     dat using 1:2:3:4 with yerrorbars lc rgb '#222222' pt 0 lw 1.2, \
     dat using 1:($4 + 0.025):7 with labels font ',10' tc rgb '#111111'
