#!/bin/sh
# Writes data/text/kjv-genesis-exodus.txt, the text `orthros eval ppl` is run on in data/results: Genesis and Exodus
# of the King James Version (1611; public domain, see Debian's bible-kjv-text copyright file), dumped by Debian's
# `bible` program (apt-get install bible-kjv), one paragraph per chapter under its heading, verse numbers dropped.
set -eu
out=${1:-$(dirname "$0")/kjv-genesis-exodus.txt}
bible -l100000 "gen1:1-exo40:38" | awk '
  /^[A-Z][a-z]+ [0-9]+$/ { if (para != "") print para "\n"; print $0 "\n"; para = ""; next }
  /^ *[0-9]+ / { sub(/^ *[0-9]+ /, ""); para = para == "" ? $0 : para " " $0 }
  END { if (para != "") print para }' > "$out"
