# Multi-query associative recall accuracy: key-value pairs (y) x context length (x), a panel per architecture and
# configuration. The drawing is heatmap.gp's, read after this.
title = 'Multi-query associative recall: accuracy by pairs and context length'
ylab = 'key-value pairs in the context'
