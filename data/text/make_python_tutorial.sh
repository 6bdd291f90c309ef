#!/bin/sh
# Writes data/text/python-tutorial.txt, the second perplexity text (of another kind than the KJV): the Python Tutorial
# of Python 3.11 (PSF-2.0 licence), its reStructuredText sources as Debian's python3.11-doc ships them
# (html/_sources/tutorial/*.rst.txt), index.rst.txt first, then the chapters in its toctree order, separated by a blank
# line. convert/make_data.py keeps tutorial/ out of the conversion corpus. Needs apt-get and dpkg (Debian 12).
set -eu
out=${1:-$(dirname "$0")/python-tutorial.txt}
PKG=python3.11-doc VER=3.11.2-6+deb12u9
SHA256=5b3594189d6ef9a6963ce0347fd307a1cc67620ad697e144db366070e2e146be
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download "$PKG=$VER" >/dev/null 2>&1) || { echo "make_python_tutorial: apt-get download $PKG=$VER failed (apt-get update first?)" >&2; exit 1; }
deb=$(ls "$tmp"/*.deb)
[ "$(sha256sum "$deb" | cut -d' ' -f1)" = "$SHA256" ] || { echo "make_python_tutorial: $deb: sha256 differs from $SHA256" >&2; exit 1; }
dpkg -x "$deb" "$tmp/x"
src=$tmp/x/usr/share/doc/python3.11/html/_sources/tutorial
{
  cat "$src/index.rst.txt"
  for f in $(awk '/^\.\. toctree::/ {t = 1; next} t && /^   [a-z0-9_]+\.rst$/ {print $1}' "$src/index.rst.txt"); do
    printf '\n'
    cat "$src/$f.txt"
  done
} > "$out"
