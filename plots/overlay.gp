# Read last: the figure's texts from txt (written by the driver from the result files, drawn as data, never as
# commands): index 0 the caption's lines at the bottom (y in pixels), index 1 panel titles at their screen
# positions, index 2 row headings (left-aligned, larger).
set origin 0, 0
set size 1, 1
set lmargin at screen 0
set rmargin at screen 1
set tmargin at screen 1
set bmargin at screen 0
unset border
unset tics
set key noautotitle
unset key
unset grid
unset title
unset xlabel
unset ylabel
unset logscale
unset colorbox
set xrange [0:1]
set yrange [0:1]
plot txt index 0 using 1:($2 / h):3 with labels left font ',9' tc rgb '#444444', \
     txt index 1 using 1:2:3 with labels center font ',11' tc rgb '#111111', \
     txt index 2 using 1:2:3 with labels left font ',13' tc rgb '#000000'
unset multiplot
