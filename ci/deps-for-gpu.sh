#!/usr/bin/env bash
# Unpacks Debian's cJSON (runtime and headers) into .deps/cjson, for a GPU machine that has no package registry:
# run it here, then carry .deps to that machine; ci/gpu.sh builds against it (CJSON_ROOT) and puts its library on
# LD_LIBRARY_PATH. .deps/ is git-ignored through .git/info/exclude.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.deps/' .git/info/exclude 2>/dev/null || echo '/.deps/' >> .git/info/exclude
mkdir -p .deps
cd .deps
rm -f libcjson*.deb
apt-get download libcjson1 libcjson-dev
rm -rf cjson
for f in libcjson*.deb; do dpkg -x "$f" cjson; done
ls cjson/usr/lib/x86_64-linux-gnu/libcjson.so.1 >/dev/null
echo "cJSON unpacked into $(pwd)/cjson"
