# Accuracy heatmaps, one panel per block of dat (niah.gp and mqar.gp set title and ylab first): the accuracy as
# colour (red 0 to green 1, one colour bar for all panels at the right) and printed in each cell ('not run' where
# the grid has a hole); panel titles come from txt (overlay.gp). Data (dat): index blocks, one per panel; columns
# ix, iy, accuracy (NaN where not run), n. Variables: n, nx, ny (grid size), rows, cols, left, right, top,
# bottom (the panel area, screen fractions), xt, yt. Cells are boxes (any grid, a single column too).
set label 1 title at screen 0.5, 1.0 - 30.0 / h center font ',14'
set palette defined (0 '#c0392b', 0.5 '#f4d03f', 1 '#1e8449')
set cbrange [0:1]
set cbtics 0.25
set xtics nomirror
set ytics nomirror
unset grid
set tics scale 0
set key off
set xrange [-0.5:nx-0.5]
set yrange [-0.5:ny-0.5]
set style fill solid 1.0 noborder
pw = (right - left) / cols
ph = (top - bottom) / rows
eval('set xtics '.xt)
eval('set ytics '.yt)
do for [i=0:n-1] {
    r = int(i / cols)
    c = i % cols
    set lmargin at screen left + c * pw + 62.0 / w
    set rmargin at screen left + (c + 1) * pw - 10.0 / w
    set tmargin at screen top - r * ph - 40.0 / h
    set bmargin at screen top - (r + 1) * ph + 60.0 / h
    set xlabel (r == rows - 1 ? 'context length (tokens)' : '')
    set ylabel (c == 0 ? ylab : '')
    if (i == n - 1) {
        set colorbox vertical user origin screen right + 0.03, screen bottom + 60.0 / h size screen 0.02, screen top - bottom - 100.0 / h
        set cblabel 'accuracy'
    } else {
        unset colorbox
    }
    plot dat index i using 1:2:(0.5):(0.5):3 with boxxyerror fc palette, \
         '' index i using 1:2:(($4 > 0) ? sprintf('%.2f', $3) : 'not run') with labels font ',9' tc rgb '#111111'
    unset label 1
}
