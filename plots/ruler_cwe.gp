# RULER common-words extraction on a text model: accuracy by the words asked for (y) and context length (x), one
# panel per architecture. The drawing is heatmap.gp's, read after this.
title = 'RULER common-words extraction: accuracy by words asked and context length'
ylab = 'common words asked for'
