# RULER needle in a haystack on a text model: accuracy by needle depth (y) and context length (x), one panel per
# (architecture, variant, needle kind). The drawing is heatmap.gp's, read after this.
title = 'RULER needle in a haystack (text): accuracy by needle depth and context length'
ylab = 'needle depth (% of the haystack)'
