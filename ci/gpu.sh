#!/usr/bin/env bash
# The whole GPU run, on a machine with an NVIDIA GPU (the lent H200): configure and build with CUDA, run the
# gpu-labelled tests, run compute-sanitizer memcheck over the GPU test program, run the kernel benchmarks,
# and leave every log in OUTDIR. A short summary table is printed last.
# Without --quick it also runs the PyTorch SDPA anchors (kernels/bench/anchors.py) and the end-to-end bench of
# the Llama-3.2-1B and Llama-3.1-8B shapes (transformer against orthros), all in the same device run.
# Usage: ci/gpu.sh OUTDIR [--quick] [--no-tests] [--gate] [--recipe BUDGET_S]
#   (run from the repository root; cJSON from .deps/cjson if present)
#   --no-tests   skip ctest and memcheck (a later call of the same session, after a run that tested this tree)
#   --gate       the perf gate's A/A check: ci/perf-gate.sh --prebuilt on this build twice (nothing may be SLOW)
#   --recipe S   orthros bench --recipe reproduce-21.9x --cell-budget S, resuming data/results/reproduce-21.9x
#                (copy OUTDIR/recipe back into the repository to keep it)
# A device command is limited to 10 minutes: split a long session into calls with these switches.
set -u -o pipefail

OUT=${1:?usage: ci/gpu.sh OUTDIR [--quick] [--no-tests] [--gate] [--recipe BUDGET_S]}
shift
QUICK= TESTS=1 GATE=0 RECIPE=
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=--quick; shift ;;
        --no-tests) TESTS=0; shift ;;
        --gate) GATE=1; shift ;;
        --recipe) [ $# -ge 2 ] || { echo "--recipe needs a budget in seconds" >&2; exit 2; }; RECIPE=$2; shift 2 ;;
        *) echo "ci/gpu.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${ORTHROS_GPU_BUILD:-build-gpu}
ARCHS=${ORTHROS_CUDA_ARCHS:-90a}
. ci/gpu-common.sh

{
    echo "date: $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv 2>&1
    nvcc --version 2>&1 | tail -2
    cmake --version | head -1
    git rev-parse HEAD 2>/dev/null || true
} | tee "$OUT/env.txt"

step configure build.log cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" \
    -DCJSON_ROOT="$CJSON" || { echo "configure failed"; exit 1; }
step build build.log cmake --build "$BUILD" -j"$(nproc)" --target test_cuda_ops bench_kernels || { echo "build failed"; exit 1; }
# The rest of the project, so that ctest -L gpu sees every gpu-labelled test; its failure is reported, not fatal.
step build_all build.log cmake --build "$BUILD" -j"$(nproc)"

TESTBIN=$BUILD/kernels/tests/test_cuda_ops
if [ $TESTS = 0 ]; then
    status[ctest_gpu]="skipped (--no-tests)"
    status[memcheck]="skipped (--no-tests)"
else
# timeout signals the whole process group, so a kernel that hangs (a deadlocked barrier in an untested
# kernel) costs minutes, not the whole 10-minute device call, and the steps after it still run.
step ctest_gpu ctest.log timeout -k 10 "${ORTHROS_GPU_TEST_TIMEOUT:-180}" ctest --test-dir "$BUILD" -L gpu -V --output-on-failure
if [ "${status[ctest_gpu]%% *}" = rc=124 ]; then
    status[memcheck]="skipped (the gpu tests timed out: a kernel hangs)"
elif command -v compute-sanitizer >/dev/null; then
    # The long cases are skipped under the sanitizer (ORTHROS_TEST_QUICK): every kernel still runs.
    step memcheck memcheck.log env ORTHROS_TEST_QUICK=1 timeout 420 compute-sanitizer --tool memcheck \
        --error-exitcode 9 "$TESTBIN"
else
    status[memcheck]="skipped (no compute-sanitizer)"
fi
fi
step bench bench.log timeout -k 10 "${ORTHROS_GPU_BENCH_TIMEOUT:-300}" "$BUILD/kernels/tests/bench_kernels" "$OUT/bench_kernels.json" $QUICK

if [ "$QUICK" != "--quick" ]; then
    # Anchors side by side in the same run: PyTorch SDPA flash and cuDNN on the same shapes.
    if python3 -c 'import torch' 2>/dev/null; then
        step anchors anchors.log python3 kernels/bench/anchors.py "$OUT/anchors.json"
    else
        status[anchors]="skipped (no PyTorch)"
    fi
    # End to end: the Llama-3.2-1B shape, transformer against orthros, prefill to 128K and decode.
    step e2e_1b e2e.log "$BUILD/orthros" bench --model preset:llama3.2-1b --device cuda --arch transformer,orthros \
        --ctx 4k:128k:x2 --phase prefill,decode --reps 3 --max-reps 5 --timeout 20 --json "$OUT/bench-llama3.2-1b.json"
    step e2e_8b e2e.log "$BUILD/orthros" bench --model preset:llama3.1-8b --device cuda --arch transformer,orthros \
        --ctx 4k:32k:x2 --phase prefill,decode --reps 3 --max-reps 5 --timeout 20 --json "$OUT/bench-llama3.1-8b.json"
fi

if [ $GATE = 1 ]; then
    # A/A: the same build on both sides, interleaved; any SLOW here is a false alarm of the gate.
    step gate gate.log ci/perf-gate.sh --prebuilt "$BUILD" "$BUILD" "$OUT/gate"
    case "${status[gate]}" in "rc=1 "*) echo "perf-gate A/A: a false SLOW" | tee -a "$OUT/gate.log" ;; esac
fi
if [ -n "$RECIPE" ]; then
    mkdir -p "$OUT/recipe"
    cp data/results/reproduce-21.9x/*.json "$OUT/recipe/" 2>/dev/null
    anchors=()
    [ -f "$OUT/anchors.json" ] && anchors=(--anchors "$OUT/anchors.json")
    step recipe recipe.log "$BUILD/orthros" bench --recipe reproduce-21.9x --device cuda --cell-budget "$RECIPE" \
        --out-dir "$OUT/recipe" "${anchors[@]}"
fi

echo
echo "==== summary ($OUT) ===="
printf '%-12s %s\n' step result
for s in configure build build_all ctest_gpu memcheck bench anchors e2e_1b e2e_8b gate recipe; do printf '%-12s %s\n' "$s" "${status[$s]:-not run}"; done
grep -E "passed, .* failed" "$OUT/ctest.log" | tail -1
grep -E "ERROR SUMMARY" "$OUT/memcheck.log" | tail -1
[ -f "$OUT/bench.log" ] && grep -E "^(op|ceiling|attn)" "$OUT/bench.log"
[ -f "$OUT/e2e.log" ] && grep -E "^(arch|transformer|orthros|speedup)" "$OUT/e2e.log"
fail=0
for s in configure build ctest_gpu memcheck bench; do case "${status[$s]:-}" in "rc=0 "*|skipped*) ;; *) fail=1 ;; esac; done
case "${status[gate]:-}" in "rc=1 "*) fail=1 ;; esac
exit $fail
