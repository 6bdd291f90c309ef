# RULER variable tracking on a text model: accuracy by hops (y) and context length (x), one panel per architecture.
# The drawing is heatmap.gp's, read after this.
title = 'RULER variable tracking: accuracy by chain hops and context length'
ylab = 'hops (assignments after the first)'
