# Needle-in-a-haystack accuracy: depth (y) x context length (x), a row per variant, a panel per architecture and
# configuration. The drawing is heatmap.gp's, read after this.
title = 'Needle in a haystack: accuracy by needle depth and context length'
ylab = 'needle depth (% of the context)'
