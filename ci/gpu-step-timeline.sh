#!/usr/bin/env bash
# The captured decode step's timeline, on a machine with an NVIDIA GPU (docs/kernels.md, "The step's timeline"):
# Nsight Compute times each kernel alone, so it cannot show what the programmatic dependent launches overlap. This
# configures a second, stamped build (cmake -DORTHROS_STAMPS=ON in $ORTHROS_STAMPS_BUILD, default build-stamps: its
# v3 GEMV and v8 attention kernels read the GPU clock), and for each shape runs orthros bench --phase decode with
# ORTHROS_STEP_STAMPS, which writes one replay's stamps a captured graph (OUTDIR/<model>-b<batch>-<ctx>.stamps), then
# bench/kernels/step_timeline.py: per kind of launch its mean boundary (from the launch before it ending to its first
# block past its wait) and body, what each adds to the step, a layer's sum (OUTDIR/<name>.txt). The bench's ms a step
# (OUTDIR/<name>.json) is the stamped build's: a few clock stores a block more than the default build, and one step
# a graph synchronised to read the stamps; time figures come from the default build, not this one.
# Usage: ci/gpu-step-timeline.sh OUTDIR [SPEC...]   (run from the repository root; SPEC: model:batch:ctx, default
#   llama3.2-1b:1:4k llama3.2-1b:1:128k llama3.1-8b:1:4k; the environment passes through, so ORTHROS_DECODE_*
#   switches time those modes)
set -u -o pipefail
OUT=${1:?usage: ci/gpu-step-timeline.sh OUTDIR [model:batch:ctx ...]}
shift
. "$(dirname "$0")/gpu-common.sh"
SB=${ORTHROS_STAMPS_BUILD:-build-stamps}
[ $# -gt 0 ] || set -- llama3.2-1b:1:4k llama3.2-1b:1:128k llama3.1-8b:1:4k
if ! { cmake -S . -B "$SB" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" -DCJSON_ROOT="$CJSON" \
    -DORTHROS_STAMPS=ON && cmake --build "$SB" -j"$(nproc)" --target orthros; } >"$OUT/build.log" 2>&1; then
    echo "ci/gpu-step-timeline.sh: the stamped build failed (see $OUT/build.log)" >&2; exit 1
fi
rc=0
for spec in "$@"; do
    decode_spec "$spec" || { rc=1; continue; }
    rm -f -- "$OUT/$name.stamps"
    if ! ORTHROS_STEP_STAMPS="$OUT/$name.stamps" "$SB/orthros" bench --model "preset:$model" --device cuda \
        --arch orthros --phase decode --ctx "$ctx" --batch "$batch" --force --decode-tokens 64 --reps 3 --max-reps 5 \
        --timeout 10 --json "$OUT/$name.json" >"$OUT/$name.log" 2>&1; then
        echo "$spec: the bench failed (see $OUT/$name.log)" >&2; rc=1; continue
    fi
    python3 bench/kernels/step_timeline.py "$OUT/$name.stamps" >"$OUT/$name.txt" 2>&1 || rc=1
    cat "$OUT/$name.txt"
done
exit $rc
