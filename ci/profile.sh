#!/usr/bin/env bash
# One op's kernels under Nsight Compute, on a machine with an NVIDIA GPU: builds bench_kernels (sm_90a) if
# needed, runs `bench_kernels --quick --only OP` under ncu, and leaves the report and a per-kernel text
# summary (duration, achieved DRAM throughput, SM and tensor-pipe utilisation) and every launch's details
# (memory workload, warp stalls, occupancy) in OUTDIR. For the questions a
# timing cannot answer: which of an op's launches takes the time, and whether it is bound by memory,
# latency or math.
# Usage: ci/profile.sh OUTDIR OP [KERNEL_REGEX] [LAUNCHES]
#   OP            attn_full_prefill, attn_full_decode, attn_linear_prefill, attn_linear_decode, or decode_step: every
#                 kernel of whole-model decode steps (`orthros bench --phase decode` of PROFILE_MODEL, default
#                 preset:llama3.2-1b, at PROFILE_CTX, default 4k, and PROFILE_BATCH, default 1; inside the NVTX range
#                 "decode"), with the decode modes of the environment (ORTHROS_DECODE_GRAPHS, _FUSED, _PDL,
#                 ORTHROS_GEMV): which kernels of a step take its time, against the step's time in a plain run;
#                 or head8: the greedy head through its int8 copy alone (its screen and select kernels, kernels/head8.cu;
#                 `bench_kernels --only gemv --gemv-kind fused-head8 --gemv-proj head`, the 1B and 8B heads at batch 1-4)
#   KERNEL_REGEX  which kernels to profile (ncu -k regex:...; default: the op's own kernels)
#   LAUNCHES      how many launches to profile (default 24; decode_step 400, two steps or more)
set -u -o pipefail
OUT=${1:?usage: ci/profile.sh OUTDIR OP [KERNEL_REGEX] [LAUNCHES]}
OP=${2:?usage: ci/profile.sh OUTDIR OP [KERNEL_REGEX] [LAUNCHES]}
case "$OP" in # the op's own kernels (not the ceilings' copy and GEMM that every run starts with)
    attn_full_prefill) DEFAULT_REGEX='attn_prefill' ;;
    attn_full_decode) DEFAULT_REGEX='attn_decode' ;;
    attn_linear_prefill) DEFAULT_REGEX='lin_|featurize' ;;
    attn_linear_decode) DEFAULT_REGEX='linear|lin_' ;;
    decode_step) DEFAULT_REGEX='.' ;;
    head8) DEFAULT_REGEX='head8_(approx|select)' ;;
    *) echo "profile: unknown op $OP" >&2; exit 2 ;;
esac
REGEX=${3:-$DEFAULT_REGEX}
if [ "$OP" = decode_step ]; then COUNT=${4:-400}; else COUNT=${4:-24}; fi
. "$(dirname "$0")/gpu-common.sh"
command -v ncu >/dev/null || { echo "profile: no ncu (Nsight Compute) on PATH" >&2; exit 3; }
TARGET=bench_kernels PROG=$BUILD/bench/kernels/bench_kernels
[ "$OP" = decode_step ] && TARGET=orthros PROG=$BUILD/orthros
if [ ! -x "$PROG" ]; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" \
        -DCJSON_ROOT="$CJSON" >"$OUT/build.log" 2>&1 &&
        cmake --build "$BUILD" -j"$(nproc)" --target "$TARGET" >>"$OUT/build.log" 2>&1 ||
        { echo "profile: build failed (see $OUT/build.log)" >&2; exit 3; }
fi
if [ "$OP" = decode_step ]; then
    # a prefill to the depth, then decode steps; only the kernels inside the "decode" range count
    RUN=("$PROG" bench --model "preset:${PROFILE_MODEL:-llama3.2-1b}" --device cuda --arch orthros --phase decode
        --ctx "${PROFILE_CTX:-4k}" --batch "${PROFILE_BATCH:-1}" --decode-tokens 8 --reps 1 --max-reps 1
        --json "$OUT/$OP-bench.json" --force)
    FILTER=(--nvtx --nvtx-include "decode/")
elif [ "$OP" = head8 ]; then
    RUN=("$PROG" "$OUT/$OP-bench.json" --quick --only gemv --gemv-kind fused-head8 --gemv-proj head)
    FILTER=()
else
    RUN=("$PROG" "$OUT/$OP-bench.json" --quick --only "$OP")
    FILTER=()
fi
# --set basic (duration, throughput breakdown, launch and occupancy figures) plus the memory workload, warp
# stall and scheduler sections; -c bounds the replays; --clock-control none leaves the clocks as they run.
timeout -k 10 "${ORTHROS_PROFILE_TIMEOUT:-420}" ncu --clock-control none --set basic \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats -k "regex:$REGEX" -c "$COUNT" \
    ${FILTER[@]+"${FILTER[@]}"} -o "$OUT/$OP" -f "${RUN[@]}" >"$OUT/$OP-ncu.log" 2>&1
rc=$?
if [ -f "$OUT/$OP.ncu-rep" ]; then
    ncu -i "$OUT/$OP.ncu-rep" --print-summary per-kernel >"$OUT/$OP-summary.txt" 2>&1
    ncu -i "$OUT/$OP.ncu-rep" --page details >"$OUT/$OP-details.txt" 2>&1
fi
tail -40 "$OUT/$OP-summary.txt" 2>/dev/null
echo "profile: ncu exit $rc; report $OUT/$OP.ncu-rep, summary $OUT/$OP-summary.txt"
exit $rc
