# Needle-in-a-haystack accuracy: depth (y) x context length (x), one panel per architecture, the accuracy as
# colour (red 0 to green 1) and printed in each cell ('not run' where the grid has a hole).
# Data (dat): index blocks, one per architecture, first line a header; columns ix, iy, accuracy (NaN where
# not run), n; ix / iy index the lengths / depths. Variables: n (panels), archs (panel titles), rows, cols,
# xt, yt (tics), subtitle, and those of common.gp.
load plotdir.'/common.gp'
set multiplot layout rows, cols title sprintf("Needle in a haystack: accuracy by depth and context length\n%s", subtitle) font ',14'
set palette defined (0 '#c0392b', 0.5 '#f4d03f', 1 '#1e8449')
set cbrange [0:1]
set cblabel 'accuracy'
set cbtics 0.25
set xlabel 'context length (tokens)'
set ylabel 'needle depth (% of the context)'
eval('set xtics '.xt)
eval('set ytics '.yt)
set xtics nomirror
set ytics nomirror
unset grid
set tics scale 0
set key off
set autoscale fix
do for [i=0:n-1] {
    set title word(archs, i+1) font ',12'
    plot dat index i using 1:2:3 with image, \
         '' index i using 1:2:(($4 > 0) ? sprintf('%.2f', $3) : 'not run') with labels font ',9' tc rgb '#111111'
    unset label 99
}
unset multiplot
