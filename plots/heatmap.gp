# Accuracy heatmaps (niah.gp, mqar.gp and ruler_*.gp set title and ylab first): a row of panels per variant, a
# panel per configuration; the value as colour (red 0 to green 1, one colour bar for all panels at the right) and
# printed in each cell ('-' where the row's grid has a hole); panel titles and row headings come from txt
# (overlay.gp). Data (dat): index blocks, one per panel; columns ix, iy, value (NaN where not run), n.
# Variables: n (panels); per panel, as words: pl, pr, pt, pb (its box, screen fractions); per panel i: nx<i>,
# ny<i> (its grid size), xt<i>, yt<i> (its tics), pc<i> (its column: the first has the y label); cbx, cby, cbw, cbh
# (the colour bar). Cells are boxes (any grid, a single column too).
set label 1 title at screen 0.5, 1.0 - 28.0 / h center font ',14'
set palette defined (0 '#c0392b', 0.5 '#f4d03f', 1 '#1e8449')
set cbrange [0:1]
set cbtics 0.25
set xtics nomirror
set ytics nomirror
unset grid
set tics scale 0
set key off
set style fill solid 1.0 noborder
set xlabel 'context length (tokens)' font ',10' offset 0, 0.6
do for [i=0:n-1] {
    nx = value('nx'.i)
    ny = value('ny'.i)
    set xrange [-0.5:nx-0.5]
    set yrange [-0.5:ny-0.5]
    eval('set xtics '.value('xt'.i))
    eval('set ytics '.value('yt'.i))
    set lmargin at screen real(word(pl, i+1))
    set rmargin at screen real(word(pr, i+1))
    set tmargin at screen real(word(pt, i+1))
    set bmargin at screen real(word(pb, i+1))
    set ylabel (value('pc'.i) == 0 ? ylab : '') font ',10'
    if (i == n - 1) {
        set colorbox vertical user origin screen cbx, screen cby size screen cbw, screen cbh
        set cblabel 'score (0 to 1)'
    } else {
        unset colorbox
    }
    plot dat index i using 1:2:(0.5):(0.5):3 with boxxyerror fc palette, \
         '' index i using 1:2:(($4 > 0) ? sprintf('%.2f', $3) : '-') with labels font ',9' tc rgb '#111111'
    unset label 1
}
