# RULER variable tracking on a text model: RULER's partial score by hops (y) and context length (x), a panel per
# architecture and configuration. The drawing is heatmap.gp's, read after this.
title = 'RULER variable tracking: partial score by chain hops and context length'
ylab = 'hops (assignments after the first)'
