# RULER needle in a haystack on a text model: RULER's partial score by needle depth (y) and context length (x), a
# row per variant and needle kind, a panel per architecture and configuration. The drawing is heatmap.gp's, read
# after this.
title = 'RULER needle in a haystack (text): partial score by needle depth and context length'
ylab = 'needle depth (% of the haystack)'
