# Needle-in-a-haystack accuracy: depth (y) x context length (x), one panel per (architecture, variant). The
# drawing is heatmap.gp's, read after this.
title = 'Needle in a haystack: accuracy by needle depth and context length'
ylab = 'needle depth (% of the context)'
