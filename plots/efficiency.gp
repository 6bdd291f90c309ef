# Data efficiency of the conversion (convert/efficiency.py): two panels against conversion tokens (log x). Left: KJV
# perplexity at 1K and 8K windows (log y); right: RULER NIAH single (partial score %) at 1K and 4K. The base
# transformer is a line across each panel, the budgets of the recipe a line through their points, a variant at two
# budgets or more a line of its own, the length study's other variants markers, each drawn a little right of its
# budget (x 1.18, 1.39, ...) so that they do not overlap, a dotted line joining a variant's two windows, the control
# transformers (tuned with a budget's stage-2 tokens) a line through the tokens they saw. Data:
# left.dat and right.dat, index blocks, first line the title, columns tokens, value. Variables (numbers and words of
# the script only): nl, nr (blocks), cl/cr colours, dl/dr dash types, wl/wr line widths, pl/pr point types (0: line
# only).
set logscale x 10
set format x '%.0s%c'
set xlabel 'tokens (a conversion: both stages; a control: its own)' offset 0,0.3
set key outside bottom center horizontal maxrows 6 font ',9'
set bmargin 14
set size 0.5, 1
set origin 0, 0
set title 'Perplexity (Genesis + Exodus, KJV) vs conversion tokens' font ',12'
set logscale y 10
set ylabel 'perplexity (log scale)'
plot for [i=0:nl-1] 'left.dat' index i using 1:2 \
     with linespoints lw real(word(wl, i+1)) lc rgb word(cl, i+1) dt int(word(dl, i+1)) \
     pt int(word(pl, i+1)) ps 1.4 title columnheader(1)
set origin 0.5, 0
unset logscale y
set yrange [0:105]
set title 'RULER NIAH single vs conversion tokens' font ',12'
set ylabel 'partial score (%)'
plot for [i=0:nr-1] 'right.dat' index i using 1:2 \
     with linespoints lw real(word(wr, i+1)) lc rgb word(cr, i+1) dt int(word(dr, i+1)) \
     pt int(word(pr, i+1)) ps 1.4 title columnheader(1)
unset multiplot
