#!/usr/bin/env bash
# Where a kernel's instructions and its warps' time go, on a machine with an NVIDIA GPU and Nsight Compute: COUNT
# launches of the kernels whose names match REGEX inside `orthros bench --phase decode` of a shape (the step's kernels
# launched one by one, ORTHROS_DECODE_GRAPHS=0, so that ncu sees them as kernels), after SKIP such launches, profiled
# with ncu's full set (the source counters among its sections); the report's source page exported as CSV and read by
# bench/kernels/sass_regions.py: per kernel its SASS length, the instructions a warp executes, and its runs of
# instructions with their share of the warps' stall samples (docs/kernels.md, "Where the instructions go").
# Writes OUTDIR/<name>.txt (the runs), <name>.csv.xz (the source page), <name>.ncu-rep.xz (the report) and
# <name>.details.txt (ncu's sections), <name> = <model>-b<batch>-<ctx>-<REGEX, other than letters and digits as _>.
# Usage: ci/gpu-kernel-source.sh OUTDIR REGEX [SPEC [SKIP [COUNT]]]   (from the repository root after a build in
#   $BUILD, default build-gpu; REGEX: letters, digits and _ . * | ^ $, e.g. attn_decode_tma_kernel or gemv2_kernel;
#   SPEC model:batch:ctx, default llama3.2-1b:1:4k; SKIP default 64, past the warm-up's first launches; COUNT
#   default 1; the environment passes through, so ORTHROS_DECODE_* switches profile those modes)
set -u -o pipefail
OUT=${1:?usage: ci/gpu-kernel-source.sh OUTDIR REGEX [model:batch:ctx [SKIP [COUNT]]]}
me=ci/gpu-kernel-source.sh
case "$OUT" in -*) echo "$me: the first argument is OUTDIR, not an option ($OUT)" >&2; exit 2 ;; esac
REGEX=${2:?usage: ci/gpu-kernel-source.sh OUTDIR REGEX [model:batch:ctx [SKIP [COUNT]]]}
SPEC=${3:-llama3.2-1b:1:4k}
SKIP=${4:-64}
COUNT=${5:-1}
BUILD=${BUILD:-build-gpu}
case "$REGEX" in
    *[!A-Za-z0-9_.*\|^\$]*) echo "$me: REGEX takes letters, digits and _ . * | ^ \$ ($REGEX)" >&2; exit 2 ;;
esac
case "$SPEC" in *[!a-z0-9.:-]*|*:*:*:*|*::*|:*|*:) echo "$me: not model:batch:ctx: $SPEC" >&2; exit 2 ;; esac
IFS=: read -r model batch ctx <<<"$SPEC"
[ -n "$model" ] && [ -n "${batch:-}" ] && [ -n "${ctx:-}" ] || { echo "$me: not model:batch:ctx: $SPEC" >&2; exit 2; }
for v in "$SKIP" "$COUNT"; do
    case "$v" in ''|*[!0-9]*) echo "$me: SKIP and COUNT are whole numbers ($v)" >&2; exit 2 ;; esac
done
[ "$COUNT" -ge 1 ] || { echo "$me: COUNT is at least 1" >&2; exit 2; }
command -v ncu >/dev/null || { echo "$me: no ncu on this machine" >&2; exit 1; }
[ -x "$BUILD/orthros" ] || { echo "$me: no $BUILD/orthros (build first)" >&2; exit 1; }
mkdir -p -- "$OUT"
name="$model-b$batch-$ctx-$(printf '%s' "$REGEX" | tr -c 'A-Za-z0-9' '_')"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
pack() { if command -v xz >/dev/null; then xz -9 -c "$1" >"$2.xz"; else gzip -9 -c "$1" >"$2.gz"; fi; }
ORTHROS_DECODE_GRAPHS=0 ncu --set full -k "regex:$REGEX" --launch-skip "$SKIP" --launch-count "$COUNT" \
    -o "$tmp/report" "$BUILD/orthros" bench --model "preset:$model" --device cuda --arch orthros --phase decode \
    --ctx "$ctx" --batch "$batch" --decode-tokens 8 --reps 1 --max-reps 1 --timeout 60 --force \
    --json "$tmp/bench.json" \
    >"$OUT/$name.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] || [ ! -f "$tmp/report.ncu-rep" ]; then
    echo "$me: ncu exited $rc and profiled $([ -f "$tmp/report.ncu-rep" ] && echo something ||
        echo nothing) (see $OUT/$name.log: where no kernel matched, the names it saw are listed there)" >&2
    exit 1
fi
ncu --import "$tmp/report.ncu-rep" >"$OUT/$name.details.txt" 2>&1
if ! ncu --import "$tmp/report.ncu-rep" --page source --csv --print-source sass >"$tmp/source.csv" \
    2>>"$OUT/$name.log"; then
    echo "$me: ncu could not export the source page (see $OUT/$name.log)" >&2
    exit 1
fi
pack "$tmp/source.csv" "$OUT/$name.csv"
pack "$tmp/report.ncu-rep" "$OUT/$name.ncu-rep"
python3 bench/kernels/sass_regions.py "$tmp/source.csv" >"$OUT/$name.txt" || exit 1
echo "$me: $OUT/$name.txt"
