#!/usr/bin/env bash
# One decode switch against the default in the order a b b a: ci/gpu-ab.sh OUTDIR VAR=VALUE [model:batch:ctx ...]
# builds the tree (BUILD, target orthros), then runs `orthros bench --phase decode` of each shape (default: the 1B
# shape at batch 1 and 4K and 128K keys, the 8B shape at batch 1 and 4K) four times, round a1 with VAR unset (the
# default), b1 and b2 with VAR=VALUE, a2 unset again, 64 tokens a sample (OUT/<model>-b<batch>-<ctx>-<round>.json
# and .log), and writes OUT/ab.txt (bench/kernels/decode_ab.py: each shape's four medians, b against a and each
# side's own spread, so that a difference inside the rounds' spread is not read as a gain; the kernels line of each
# side, which names the switch where the backend took it). VAR is one of the backend's ORTHROS_ switches and VALUE a
# number; anything else is refused before the build. Exit 0 when every round ran.
set -u -o pipefail
OUT=${1:?usage: ci/gpu-ab.sh OUTDIR VAR=VALUE [model:batch:ctx ...]}
shift
. "$(dirname "$0")/gpu-common.sh"
SW=${1:-}
case "$SW" in
    ORTHROS_*=*) ;;
    *) echo "ci/gpu-ab.sh: the second argument is VAR=VALUE, a switch of the backend (ORTHROS_...=N): '$SW'" >&2
       exit 2 ;;
esac
VAR=${SW%%=*} VAL=${SW#*=}
case "$VAR" in *[!A-Z0-9_]*) echo "ci/gpu-ab.sh: not a switch's name: '$VAR'" >&2; exit 2 ;; esac
case "$VAL" in "" | *[!0-9]* | ?????*) echo "ci/gpu-ab.sh: $VAR's value is not a number: '$VAL'" >&2; exit 2 ;; esac
shift
[ $# -gt 0 ] || set -- llama3.2-1b:1:4k llama3.2-1b:1:128k llama3.1-8b:1:4k
for spec in "$@"; do decode_spec "$spec" || exit 2; done
if ! { cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" -DCJSON_ROOT="$CJSON" \
    && cmake --build "$BUILD" -j"$(nproc)" --target orthros; } >"$OUT/build.log" 2>&1; then
    echo "ci/gpu-ab.sh: the build failed (see $OUT/build.log)" >&2; exit 1
fi
rc=0
for round in a1 b1 b2 a2; do
    case $round in a*) envs=(-u "$VAR") ;; *) envs=("$VAR=$VAL") ;; esac
    for spec in "$@"; do
        decode_spec "$spec"
        rm -f -- "$OUT/$name-$round.json" # a failed round leaves no file of an earlier run for the table
        decode_bench "$spec" "$round" "${envs[@]}" || { rc=1; continue; }
        echo "$round $spec: $(grep -m1 'a step against' "$OUT/$name-$round.log")"
    done
done
python3 bench/kernels/decode_ab.py "$OUT" "$VAR=$VAL" | tee "$OUT/ab.txt" || rc=1
exit $rc
