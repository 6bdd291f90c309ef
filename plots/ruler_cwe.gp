# RULER common-words extraction on a text model: RULER's partial score by the words asked for (y) and context
# length (x), a panel per architecture and configuration. The drawing is heatmap.gp's, read after this.
title = 'RULER common-words extraction: partial score by words asked and context length'
ylab = 'common words asked for'
