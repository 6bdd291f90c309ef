#!/usr/bin/env bash
# Where a decode step's time goes, on a machine with an NVIDIA GPU and Nsight Compute: for each shape, orthros bench
# --phase decode once plainly (its ms a step, OUTDIR/<name>.json) and once under ncu, every kernel node of the
# replayed step graphs (the NVTX range "decode graph replay") timed alone with the caches and clocks left as they
# run (--cache-control none --clock-control none); then bench/kernels/decode_profile.py: per kernel of one layer
# its mean time, the kernels outside the layers, their sum against the step's time (the rest: the boundaries
# between kernels). OUTDIR/<model>-b<batch>-<ctx>.txt, the raw ncu table as .csv.gz beside it.
# Usage: ci/gpu-decode-profile.sh OUTDIR [SPEC...]   (run from the repository root after a build in $BUILD,
#   default build-gpu; SPEC: model:batch:ctx, default llama3.2-1b:1:4k llama3.2-1b:1:128k llama3.1-8b:1:4k;
#   the environment passes through, so ORTHROS_DECODE_* switches profile those modes)
set -u -o pipefail
OUT=${1:?usage: ci/gpu-decode-profile.sh OUTDIR [model:batch:ctx ...]}
shift
build=${BUILD:-}
. "$(dirname "$0")/gpu-common.sh" # OUT made and absolute, the repository root the folder, decode_spec
BUILD=${build:-build-gpu}
[ $# -gt 0 ] || set -- llama3.2-1b:1:4k llama3.2-1b:1:128k llama3.1-8b:1:4k
command -v ncu >/dev/null || { echo "ci/gpu-decode-profile.sh: no ncu on this machine" >&2; exit 1; }
[ -x "$BUILD/orthros" ] || { echo "ci/gpu-decode-profile.sh: no $BUILD/orthros (build first)" >&2; exit 1; }
rc=0
for spec in "$@"; do
    decode_bench "$spec" || { rc=1; continue; }
    tmp=$(mktemp -d)
    if ncu --graph-profiling node --cache-control none --clock-control none --nvtx \
        --nvtx-include "decode graph replay/" --launch-count 800 --metrics gpu__time_duration.sum --print-units base \
        --csv --page raw --log-file "$tmp/ncu.csv" \
        "${bench[@]}" --decode-tokens 8 --reps 1 --max-reps 1 --timeout 60 --json "$tmp/ncu-bench.json" \
        >>"$OUT/$name.log" 2>&1; then
        python3 bench/kernels/decode_profile.py "$tmp/ncu.csv" "$OUT/$name.json" >"$OUT/$name.txt" 2>&1 || rc=1
        gzip -c "$tmp/ncu.csv" >"$OUT/$name.csv.gz"
    else
        echo "$spec: ncu failed (see $OUT/$name.log)" >&2; rc=1
        [ -f "$tmp/ncu.csv" ] && tail -20 "$tmp/ncu.csv" >>"$OUT/$name.log"
    fi
    rm -rf "$tmp"
done
exit $rc
