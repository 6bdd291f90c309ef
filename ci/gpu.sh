#!/usr/bin/env bash
# The whole GPU run, on a machine with an NVIDIA GPU: configure and build with CUDA, run the
# gpu-labelled tests, run compute-sanitizer memcheck over the GPU test program section by section within a budget
# (ORTHROS_MEMCHECK_BUDGET seconds, default 420; ORTHROS_MEMCHECK_SECTIONS picks sections), run the kernel benchmarks,
# and leave every log in OUTDIR (file names of letters, digits and ._- only, at most two folders deep).
# Without --quick it also runs the PyTorch SDPA anchors (bench/kernels/anchors.py) and the end-to-end bench of
# the Llama-3.2-1B and Llama-3.1-8B shapes (transformer against orthros), all in the same GPU run; with it the gpu
# tests run their quick cases (ORTHROS_TEST_QUICK=1: every kernel, the long shapes left out).
# The gpu tests' limit: ORTHROS_GPU_TEST_TIMEOUT seconds (default 420 with --quick, 900 without: the whole suite
# then takes most of a 10-minute job, so split the run with --skip); past it the step reports rc=124 and
# ctest.log names the test that was running.
# The summary printed last: each step's status, the kernels that spill registers (OUTDIR/spills.txt, from the
# build's ptxas warnings), the test and memcheck counts, the kernel table of
# bench/kernels/summary.py (every kernel version against SDPA flash and cuDNN of the same run, as ratios, the
# copy / read / GEMM ceilings and the default kernel versions; also in OUTDIR/summary.txt), the end-to-end lines.
# Usage: ci/gpu.sh OUTDIR [--quick] [--no-tests] [--skip STEPS] [--gate] [--recipe BUDGET_S] [--decode MODES]
#                 [--e2e-recipe]
#   (run from the repository root; cJSON from .deps/cjson if present)
#   --no-tests   skip ctest and memcheck (a later call of the same session, after a run that tested this tree)
#   --skip S     skip the comma-separated steps S of: tests (ctest only), memcheck, bench, anchors, e2e (to split
#                a run over 10-minute calls: --skip memcheck,bench,anchors,e2e; then --skip tests,bench,anchors,e2e;
#                then --no-tests --skip e2e; then --no-tests --skip bench,anchors)
#   --gate       the perf gate's A/A check: ci/perf-gate.sh --prebuilt on this build twice (nothing may be SLOW)
#   --recipe S   orthros bench --recipe reproduce-21.9x --cell-budget S into OUTDIR/recipe, resuming the files
#                already there (a run of the same commit: bench refuses cells of other code); copy OUTDIR/recipe
#                into data/results to keep it
#   --e2e-recipe the end-to-end figures of a prompt then generated tokens: orthros bench --recipe e2e into
#                OUTDIR/e2e-recipe (report.md: time to first token, per output token and total, P 32K / 128K, N 128 /
#                1024, transformer against orthros), and `orthros generate` of 512 tokens on the 1B shape, its
#                tokens a second in OUTDIR/generate.log. With --decode default,fused-graphs-nohead8 and --no-tests
#                --skip bench,anchors,e2e: whole-model decode's figure set (docs/kernels.md), about 5 minutes
#   --decode M   the decode modes side by side (docs/kernels.md, "Whole-model decode"): for each mode of M (all, or
#                a comma-separated list of default (no switch set: the backend's default), default-lt (the default
#                with ORTHROS_GEMM_LT=1: cuBLAS's products of 1-16 rows through cuBLASLt, tuned; not in "all"),
#                plain, graphs, graphs-gemv,
#                fused-graphs, fused-graphs-pdl, fused-graphs-v1, fused-graphs-v2, fused-graphs-v3, fused-graphs-v4,
#                fused-graphs-v5: the fused step with gemv.cu's version 1, 2, 3, 4 or 5 (v5: the fused step up to batch
#                16, its ring kernel at 9-16; fused-graphs-v5s4, -v5s8: 4 or 8 ring slots a warp, not in "all");
#                fused-graphs-v6: with version 6 (v5's tiles from TMA stages, batch 9-16, sm_90; fused-graphs-v6bulk:
#                its stages as bulk copies a row; fused-graphs-v6wg: its stages read by wgmma, sm_90a; neither in
#                "all"); fused-graphs-head8: the head of a greedy step through an int8 copy, the exact argmax kept
#                (ORTHROS_DECODE_HEAD8=1; the default, whose screen is the integer one 4 deep, -head8id4) with its
#                fp32 screen 2 deep (ORTHROS_HEAD8_DP4A=0, ORTHROS_HEAD8_DEPTH=2), -head8d3, -head8d4: 3 or 4 deep,
#                -head8i, -head8id3, -head8id4: its integer screen (ORTHROS_HEAD8_DP4A=1) 2, 3 or 4 deep,
#                fused-graphs-nohead8: ORTHROS_DECODE_HEAD8=0 (the bf16 head), fused-graphs-head8one: the default's
#                screen with the selection in its launch (ORTHROS_HEAD8_ONE_LAUNCH=1; none of the eight in "all");
#                fused-graphs-head8nopf, -head8even: the default's screen without its warps' next rows asked into L2
#                (ORTHROS_HEAD8_NEXT_PF=0), or on its grid cut to whole rounds (ORTHROS_HEAD8_EVEN=1; not in "all");
#                fused-graphs-attnearly: the attention's tile that holds the newest key asked before its dependency
#                wait but for the rows q/k/v writes (ORTHROS_DECODE_ATTN_EARLY=1; measured slower; not in "all");
#                fused-graphs-kvpf8, -kvpf16: with
#                ORTHROS_DECODE_KVPF_MB=8 or 16 (batch 1: the q/k/v product asks the layer's K and V caches, each
#                up to that size, into L2 for the attention; not in "all");
#                fused-graphs takes the default, 3; fused-graphs-chain:
#                with ORTHROS_DECODE_CHAIN=1; fused-graphs-attn7, -attn8: with ORTHROS_ATTN_DECODE_VERSION=7 or 8
#                (the decode attention's combine kernel, or its clusters); fused-graphs-attno: with
#                ORTHROS_DECODE_ATTN_O=1 (O in the attention's clusters); fused-graphs-qkvattn: with
#                ORTHROS_DECODE_QKV_ATTN=1 (q/k/v in the attention's clusters); fused-graphs-opdl0, ... -opdl3: with
#                ORTHROS_DECODE_O_PDL=0, 1, 2 or 3 (O after the attention a dependent launch asking nothing first, the
#                default with the late launches; asking its weights into L2 first; and the attention asking them too;
#                the attention asking O's first ORTHROS_DECODE_L2PF_MB once its blocks' streams are asked);
#                the dependent launches, both on by default on sm_90: fused-graphs-apdl (ORTHROS_DECODE_ATTN_PDL=1
#                alone: the attention a dependent launch of q/k/v), -pdllate (ORTHROS_DECODE_PDL_LATE=1 alone: every
#                product a dependent launch, let launch at its predecessor's last group), -pdllate-apdl (both),
#                -nopdllate (neither), -pdllate2 (PDL_LATE=2: the first group asked into L2 before the wait),
#                -lead1, -lead2, -lead3 (ORTHROS_DECODE_PDL_LEAD=N: the late launch N block rounds earlier);
#                fused-graphs-fill1, -fill2, -fill3: with ORTHROS_GEMV_FILL=1, 2 or 3 (v3's KW rule; 3 the
#                default); fused-graphs-kw1, -kw2,
#                -kw4: with ORTHROS_GEMV_KW=1, 2 or 4 (v3's slices a group forced); fused-graphs-mlp: with
#                ORTHROS_DECODE_MLP=1 (gate/up and down in one launch); fused-graphs-mlpring: with
#                ORTHROS_DECODE_MLP=2 (the same, its weights streamed through a ring); fused-graphs-chainring: with
#                ORTHROS_DECODE_CHAIN_RING=1 (the chain's products streamed through a ring); fused-graphs-l2pf, -l2pf-last,
#                -l2pf32: with ORTHROS_DECODE_L2PF=1, =2 and =1 with ORTHROS_DECODE_L2PF_MB=32; fused-graphs-early0,
#                ... -early63: with ORTHROS_GEMV_EARLY=0 to 63 (bit 4 refused), v3's early loads, not in "all";
#                fused-graphs-qkvb1 ... -qkvb4096: with ORTHROS_GEMV_QKV_BLOCKS=N, the q/k/v grid capped at N blocks
#                and its dependent let launch as it starts, not in "all"; fused-graphs-areg160: with
#                ORTHROS_ATTN_DECODE_REGS=160, v8 held to 160 registers; -qkvbN-areg160: both; fused-graphs-alean,
#                -nolean: with ORTHROS_ATTN_DECODE_LEAN=1 or 0, v8's softmax in its lean form (the default) or as
#                written (not in "all"); fused-graphs-apush: with ORTHROS_ATTN_DECODE_PUSH=1, v8's merge pushed to
#                each cluster's rank 0 (not in "all"); fused-graphs-arelax, -norelax: with
#                ORTHROS_ATTN_DECODE_RELAXED=1 or 0, v8's barriers that only keep shared memory alive arriving relaxed
#                (the default) or with cluster.sync's release (not in "all"); fused-graphs-claim1 ...
#                -claim999999: with ORTHROS_ATTN_DECODE_CLAIM=N, v8's tiles claimed a stage in calls of N keys or more
#                (not in "all");
#                fused-graphs-carve0 ... -carve100: with
#                ORTHROS_GEMV_CARVEOUT=N, gemv.cu's launches asking N% of the largest shared memory (0: the
#                largest L1; 85: the decode attention's split; not in "all"); fused-graphs-balance0,
#                -balance1: with ORTHROS_GEMV_BALANCE=0 or 1, a product of more block rounds than block slots on the
#                fewest blocks that keep its waves, every block the same rounds or one fewer)
#                orthros decode of the 1B shape at batch 1 (4K, 128K) and 16 (4K, 32K) and of the 8B shape at batch 1
#                (4K) and 16 (4K, 32K), into
#                OUTDIR/decode/<model>-b<batch>-<mode>.json; the PyTorch anchor (bench/kernels/decode_anchor.py, a
#                CUDA graph by hand) into OUTDIR/decode_anchor.json, and through torch.compile for the batch-1 targets
#                into OUTDIR/decode_anchor_compiled.json; bench/kernels/decode_summary.py sets them side by
#                side against the floor and the issue's targets (OUTDIR/decode_summary.txt), and where gnuplot is,
#                orthros plot draws them (OUTDIR/decode/figs: decode_step, decode_latency). Every mode is about a
#                minute on an H200, the anchor 30 s and its compiled form 3 minutes: over 10-minute calls, split the
#                modes (the summary reads every file in OUTDIR/decode, and each anchor runs once, when its file is
#                missing); DECODE_SPECS (space-separated model:batch:ctxs, e.g. "llama3.2-1b:1:4k,128k") runs
#                those shapes instead of the default four
# A device command is limited to 10 minutes: split a long session into calls with these switches.
set -u -o pipefail

OUT=${1:?usage: ci/gpu.sh OUTDIR [--quick] [--no-tests] [--skip STEPS] [--gate] [--recipe BUDGET_S] [--decode MODES] [--e2e-recipe]}
shift
QUICK= TESTS=1 GATE=0 RECIPE= SKIP=, DECODE= E2E_RECIPE=0
# the modes --decode all runs (and the usage names, with fused-graphs-earlyN and -qkvbN)
decode_modes=default,plain,graphs,graphs-gemv,fused-graphs,fused-graphs-pdl,fused-graphs-v1,fused-graphs-v2,fused-graphs-v3,fused-graphs-v4,fused-graphs-v5,fused-graphs-v6,fused-graphs-chain,fused-graphs-attn7,fused-graphs-attn8,fused-graphs-attno,fused-graphs-qkvattn,fused-graphs-opdl0,fused-graphs-opdl1,fused-graphs-opdl2,fused-graphs-opdl3,fused-graphs-apdl,fused-graphs-pdllate,fused-graphs-pdllate-apdl,fused-graphs-nopdllate,fused-graphs-pdllate2,fused-graphs-lead1,fused-graphs-lead2,fused-graphs-lead3,fused-graphs-fill1,fused-graphs-fill2,fused-graphs-fill3,fused-graphs-kw1,fused-graphs-kw2,fused-graphs-kw4,fused-graphs-mlp,fused-graphs-mlpring,fused-graphs-chainring,fused-graphs-l2pf,fused-graphs-l2pf-last,fused-graphs-l2pf32,fused-graphs-areg160,fused-graphs-balance0,fused-graphs-balance1
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=--quick; shift ;;
        --no-tests) TESTS=0; shift ;;
        --skip) [ $# -ge 2 ] || { echo "--skip needs a list of steps" >&2; exit 2; }
            case ",$2," in *[!a-z0-9,]*) echo "--skip: steps are tests, memcheck, bench, anchors, e2e" >&2; exit 2 ;; esac
            SKIP=",$2,"; shift 2 ;;
        --gate) GATE=1; shift ;;
        --recipe) [ $# -ge 2 ] || { echo "--recipe needs a budget in seconds" >&2; exit 2; }; RECIPE=$2; shift 2 ;;
        --e2e-recipe) E2E_RECIPE=1; shift ;;
        --decode) [ $# -ge 2 ] || { echo "--decode needs modes: all or $decode_modes,fused-graphs-earlyN (N 0-63 without bit 4),fused-graphs-qkvbN (N 1-4096)" >&2; exit 2; }
            DECODE=$2; [ "$DECODE" = all ] && DECODE=$decode_modes
            case ",$DECODE," in *[!a-z0-9,-]*) echo "--decode: modes are ${decode_modes//,/, }, fused-graphs-earlyN (N 0-63 without bit 4), fused-graphs-qkvbN (N 1-4096)" >&2; exit 2 ;; esac
            shift 2 ;;
        *) echo "ci/gpu.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
skipped() { case "$SKIP" in *",$1,"*) return 0 ;; esac; return 1; }
. "$(dirname "$0")/gpu-common.sh"

{
    echo "date: $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv 2>&1
    nvcc --version 2>&1 | tail -2
    cmake --version | head -1
    run_commit
} | tee "$OUT/env.txt"

# Warnings are errors here as in ci/test.sh (ORTHROS_WERROR=OFF for a toolchain that warns where CI's does not).
step configure build.log cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" \
    -DCJSON_ROOT="$CJSON" -DORTHROS_WERROR="${ORTHROS_WERROR:-ON}" || { echo "configure failed"; exit 1; }
step build build.log cmake --build "$BUILD" -j"$(nproc)" --target test_cuda_ops bench_kernels || { echo "build failed"; exit 1; }
# The rest of the project, so that ctest -L gpu sees every gpu-labelled test; its failure is reported, not fatal.
step build_all build.log cmake --build "$BUILD" -j"$(nproc)"

# shellcheck disable=SC2034 # (read by memcheck_sections, ci/gpu-common.sh)
TESTBIN=$BUILD/kernels/tests/test_cuda_ops
if [ $TESTS = 0 ]; then
    status[ctest_gpu]="skipped (--no-tests)"
    status[memcheck]="skipped (--no-tests)"
else
# timeout signals the whole process group, so a kernel that hangs (a deadlocked barrier in an untested
# kernel) costs minutes, not the whole of a 10-minute job, and the steps after it still run.
if [ "$QUICK" = "--quick" ]; then test_env=(ORTHROS_TEST_QUICK=1) test_limit=420; else test_env=() test_limit=900; fi
if skipped tests; then
    status[ctest_gpu]="skipped (--skip)"
else
    step ctest_gpu ctest.log env "${test_env[@]}" timeout -k 10 "${ORTHROS_GPU_TEST_TIMEOUT:-$test_limit}" \
        ctest --test-dir "$BUILD" -L gpu -V --output-on-failure
fi
if [ "${status[ctest_gpu]%% *}" = rc=124 ]; then
    status[memcheck]="skipped (the gpu tests ran past ${ORTHROS_GPU_TEST_TIMEOUT:-$test_limit} s: a kernel that hangs,"
    status[memcheck]+=" or a suite longer than the limit; ctest.log's last lines name the test)"
elif skipped memcheck; then
    status[memcheck]="skipped (--skip)"
elif command -v compute-sanitizer >/dev/null; then
    memcheck_sections
else
    status[memcheck]="skipped (no compute-sanitizer)"
fi
fi
if skipped bench; then
    status[bench]="skipped (--skip)"
else
    step bench bench.log timeout -k 10 "${ORTHROS_GPU_BENCH_TIMEOUT:-300}" "$BUILD/bench/kernels/bench_kernels" "$OUT/bench_kernels.json" $QUICK
fi

if [ "$QUICK" != "--quick" ]; then
    # Anchors side by side in the same run: PyTorch SDPA flash and cuDNN on the same shapes.
    if skipped anchors; then
        status[anchors]="skipped (--skip)"
    elif python3 -c 'import torch' 2>/dev/null; then
        step anchors anchors.log python3 bench/kernels/anchors.py "$OUT/anchors.json"
    else
        status[anchors]="skipped (no PyTorch)"
    fi
    # End to end: the Llama-3.2-1B shape, transformer against orthros, prefill to 128K and decode.
    if skipped e2e; then
        status[e2e_1b]="skipped (--skip)"
        status[e2e_8b]="skipped (--skip)"
        status[e2e_window]="skipped (--skip)"
    else
    step e2e_1b e2e.log "$BUILD/orthros" bench --model preset:llama3.2-1b --device cuda --arch transformer,orthros \
        --ctx 4k:128k:x2 --phase prefill,decode --reps 3 --max-reps 5 --timeout 20 --json "$OUT/bench-llama3.2-1b.json"
    step e2e_8b e2e.log "$BUILD/orthros" bench --model preset:llama3.1-8b --device cuda --arch transformer,orthros \
        --ctx 4k:32k:x2 --phase prefill,decode --reps 3 --max-reps 5 --timeout 20 --json "$OUT/bench-llama3.1-8b.json"
    # A converted model's local window (docs/converted-models.md): orthros prefill with a window of 64, against the
    # window-0 orthros cells of bench-llama3.2-1b.json (the target: within 10% at 128K).
    step e2e_window e2e.log "$BUILD/orthros" bench --model preset:llama3.2-1b --device cuda --arch orthros --ctx 32k:128k:x2 \
        --phase prefill --local-window 64 --reps 3 --max-reps 5 --timeout 20 --json "$OUT/bench-llama3.2-1b-window64.json"
    fi
fi

if [ $GATE = 1 ]; then
    # A/A: the same build on both sides, interleaved; any SLOW here is a false alarm of the gate.
    step gate gate.log ci/perf-gate.sh --prebuilt "$BUILD" "$BUILD" "$OUT/gate"
    case "${status[gate]}" in "rc=1 "*) echo "perf-gate A/A: a false SLOW" | tee -a "$OUT/gate.log" ;; esac
fi
if [ -n "$RECIPE" ]; then
    mkdir -p "$OUT/recipe"
    anchors=()
    [ -f "$OUT/anchors.json" ] && anchors=(--anchors "$OUT/anchors.json")
    step recipe recipe.log "$BUILD/orthros" bench --recipe reproduce-21.9x --device cuda --cell-budget "$RECIPE" \
        --out-dir "$OUT/recipe" "${anchors[@]}"
fi

if [ -n "$DECODE" ]; then
    mkdir -p "$OUT/decode"
    # the fused step under graphs, gemv.cu only where the fused ops take it: every fused-graphs-* mode's base
    fused=(ORTHROS_DECODE_GRAPHS=1 ORTHROS_DECODE_FUSED=1 ORTHROS_GEMV=0)
    for mode in ${DECODE//,/ }; do
        case $mode in
            # every switch unset, whatever the caller's environment holds
            default) envs=(-u ORTHROS_DECODE_GRAPHS -u ORTHROS_DECODE_FUSED -u ORTHROS_GEMV -u ORTHROS_DECODE_PDL
                           -u ORTHROS_GEMV_VERSION -u ORTHROS_GEMV5_STAGES -u ORTHROS_DECODE_L2PF -u ORTHROS_DECODE_L2PF_MB
                           -u ORTHROS_DECODE_ATTN_O -u ORTHROS_DECODE_O_PDL -u ORTHROS_DECODE_ATTN_PDL -u ORTHROS_GEMM_LT
                           -u ORTHROS_GEMV_EARLY -u ORTHROS_DECODE_PDL_LATE -u ORTHROS_DECODE_MLP
                           -u ORTHROS_DECODE_CHAIN -u ORTHROS_DECODE_CHAIN_RING -u ORTHROS_ATTN_DECODE_VERSION
                           -u ORTHROS_GEMV_KW -u ORTHROS_GEMV_FILL -u ORTHROS_DECODE_PDL_LEAD
                           -u ORTHROS_GEMV_QKV_BLOCKS -u ORTHROS_ATTN_DECODE_REGS -u ORTHROS_ATTN_DECODE_LEAN
                           -u ORTHROS_ATTN_DECODE_PUSH -u ORTHROS_ATTN_DECODE_RELAXED -u ORTHROS_GEMV_BALANCE
                           -u ORTHROS_GEMV_CARVEOUT -u ORTHROS_ATTN_DECODE_CLAIM
                           -u ORTHROS_DECODE_QKV_ATTN -u ORTHROS_DECODE_HEAD8 -u ORTHROS_HEAD8_DEPTH
                           -u ORTHROS_HEAD8_DP4A -u ORTHROS_HEAD8_ONE_LAUNCH -u ORTHROS_DECODE_KVPF_MB
                           -u ORTHROS_DECODE_ATTN_EARLY -u ORTHROS_HEAD8_NEXT_PF -u ORTHROS_HEAD8_EVEN) ;;
            # the default with cuBLAS's products of 1-16 rows through cuBLASLt, tuned per shape (batch 9-16's step)
            default-lt) envs=(-u ORTHROS_DECODE_GRAPHS -u ORTHROS_DECODE_FUSED -u ORTHROS_GEMV ORTHROS_GEMM_LT=1) ;;
            plain) envs=(ORTHROS_DECODE_GRAPHS=0 ORTHROS_DECODE_FUSED=0 ORTHROS_GEMV=0) ;;
            graphs) envs=(ORTHROS_DECODE_GRAPHS=1 ORTHROS_DECODE_FUSED=0 ORTHROS_GEMV=0) ;;
            graphs-gemv) envs=(ORTHROS_DECODE_GRAPHS=1 ORTHROS_DECODE_FUSED=0 ORTHROS_GEMV=1) ;;
            fused-graphs) envs=("${fused[@]}") ;;
            fused-graphs-pdl) envs=("${fused[@]}" ORTHROS_DECODE_PDL=1) ;;
            fused-graphs-v1) envs=("${fused[@]}" ORTHROS_GEMV_VERSION=1) ;;
            fused-graphs-v2) envs=("${fused[@]}" ORTHROS_GEMV_VERSION=2) ;;
            fused-graphs-v3) envs=("${fused[@]}" ORTHROS_GEMV_VERSION=3) ;;
            fused-graphs-v4) envs=("${fused[@]}" ORTHROS_GEMV_VERSION=4) ;;
            fused-graphs-v5) envs=("${fused[@]}" ORTHROS_GEMV_VERSION=5) ;;
            fused-graphs-v5s4) envs=("${fused[@]}" ORTHROS_GEMV_VERSION=5 ORTHROS_GEMV5_STAGES=4) ;;
            fused-graphs-v5s8) envs=("${fused[@]}" ORTHROS_GEMV_VERSION=5 ORTHROS_GEMV5_STAGES=8) ;;
            fused-graphs-v6) envs=("${fused[@]}" ORTHROS_GEMV_VERSION=6) ;;
            fused-graphs-v6bulk) envs=("${fused[@]}" ORTHROS_GEMV_VERSION=6 ORTHROS_GEMV6_BULK=1) ;;
            fused-graphs-v6wg) envs=("${fused[@]}" ORTHROS_GEMV_VERSION=6 ORTHROS_GEMV6_WGMMA=1) ;;
            fused-graphs-head8) envs=("${fused[@]}" ORTHROS_DECODE_HEAD8=1 ORTHROS_HEAD8_DP4A=0 ORTHROS_HEAD8_DEPTH=2) ;;
            fused-graphs-nohead8) envs=("${fused[@]}" ORTHROS_DECODE_HEAD8=0) ;;
            fused-graphs-head8one) envs=("${fused[@]}" ORTHROS_DECODE_HEAD8=1 ORTHROS_HEAD8_DP4A=1 ORTHROS_HEAD8_DEPTH=4
                                         ORTHROS_HEAD8_ONE_LAUNCH=1) ;;
            fused-graphs-attnearly) envs=("${fused[@]}" ORTHROS_DECODE_ATTN_EARLY=1) ;;
            fused-graphs-head8nopf) envs=("${fused[@]}" ORTHROS_HEAD8_NEXT_PF=0) ;;
            fused-graphs-head8even) envs=("${fused[@]}" ORTHROS_HEAD8_EVEN=1) ;;
            fused-graphs-head8d3 | fused-graphs-head8d4) envs=("${fused[@]}" ORTHROS_DECODE_HEAD8=1 ORTHROS_HEAD8_DP4A=0
                                                          ORTHROS_HEAD8_DEPTH="${mode#fused-graphs-head8d}") ;;
            fused-graphs-head8i) envs=("${fused[@]}" ORTHROS_DECODE_HEAD8=1 ORTHROS_HEAD8_DP4A=1 ORTHROS_HEAD8_DEPTH=2) ;;
            fused-graphs-head8id3 | fused-graphs-head8id4) envs=("${fused[@]}" ORTHROS_DECODE_HEAD8=1 ORTHROS_HEAD8_DP4A=1
                                                            ORTHROS_HEAD8_DEPTH="${mode#fused-graphs-head8id}") ;;
            fused-graphs-kvpf8 | fused-graphs-kvpf16) envs=("${fused[@]}" ORTHROS_DECODE_KVPF_MB="${mode#fused-graphs-kvpf}") ;;
            fused-graphs-chain) envs=("${fused[@]}" ORTHROS_DECODE_CHAIN=1) ;;
            fused-graphs-attn7) envs=("${fused[@]}" ORTHROS_ATTN_DECODE_VERSION=7) ;;
            fused-graphs-attn8) envs=("${fused[@]}" ORTHROS_ATTN_DECODE_VERSION=8) ;;
            fused-graphs-attno) envs=("${fused[@]}" ORTHROS_DECODE_ATTN_O=1) ;;
            fused-graphs-qkvattn) envs=("${fused[@]}" ORTHROS_DECODE_QKV_ATTN=1) ;;
            fused-graphs-opdl[0123]) envs=("${fused[@]}" ORTHROS_DECODE_O_PDL=${mode#fused-graphs-opdl}) ;;
            # the dependent launches (both on by default on sm_90): each alone, both, neither, the late one asking
            # its first group into L2 before its wait
            fused-graphs-apdl) envs=("${fused[@]}" ORTHROS_DECODE_ATTN_PDL=1 ORTHROS_DECODE_PDL_LATE=0) ;;
            fused-graphs-pdllate) envs=("${fused[@]}" ORTHROS_DECODE_PDL_LATE=1 ORTHROS_DECODE_ATTN_PDL=0) ;;
            fused-graphs-pdllate-apdl) envs=("${fused[@]}" ORTHROS_DECODE_PDL_LATE=1 ORTHROS_DECODE_ATTN_PDL=1) ;;
            fused-graphs-nopdllate) envs=("${fused[@]}" ORTHROS_DECODE_PDL_LATE=0 ORTHROS_DECODE_ATTN_PDL=0) ;;
            fused-graphs-pdllate2) envs=("${fused[@]}" ORTHROS_DECODE_PDL_LATE=2) ;;
            fused-graphs-lead[123]) envs=("${fused[@]}" ORTHROS_DECODE_PDL_LEAD=${mode#fused-graphs-lead}) ;;
            fused-graphs-fill[123]) envs=("${fused[@]}" ORTHROS_GEMV_FILL=${mode#fused-graphs-fill}) ;;
            fused-graphs-kw[124]) envs=("${fused[@]}" ORTHROS_GEMV_KW=${mode#fused-graphs-kw}) ;;
            fused-graphs-mlp) envs=("${fused[@]}" ORTHROS_DECODE_MLP=1) ;;
            fused-graphs-mlpring) envs=("${fused[@]}" ORTHROS_DECODE_MLP=2) ;;
            fused-graphs-chainring) envs=("${fused[@]}" ORTHROS_DECODE_CHAIN_RING=1) ;;
            fused-graphs-l2pf) envs=("${fused[@]}" ORTHROS_DECODE_L2PF=1) ;;
            fused-graphs-l2pf-last) envs=("${fused[@]}" ORTHROS_DECODE_L2PF=2) ;;
            fused-graphs-l2pf32) envs=("${fused[@]}" ORTHROS_DECODE_L2PF=1
                                 ORTHROS_DECODE_L2PF_MB=32) ;;
            fused-graphs-early[0-9] | fused-graphs-early[1-5][0-9] | fused-graphs-early6[0-3]) envs=("${fused[@]}" ORTHROS_GEMV_EARLY="${mode#fused-graphs-early}") ;;
            # (past 4096 the backend refuses it, and the run says why); -areg160: v8 held to 160 registers too
            fused-graphs-areg160) envs=("${fused[@]}" ORTHROS_ATTN_DECODE_REGS=160) ;;
            fused-graphs-alean) envs=("${fused[@]}" ORTHROS_ATTN_DECODE_LEAN=1) ;;
            fused-graphs-nolean) envs=("${fused[@]}" ORTHROS_ATTN_DECODE_LEAN=0) ;;
            fused-graphs-apush) envs=("${fused[@]}" ORTHROS_ATTN_DECODE_PUSH=1) ;;
            fused-graphs-arelax) envs=("${fused[@]}" ORTHROS_ATTN_DECODE_RELAXED=1) ;;
            fused-graphs-norelax) envs=("${fused[@]}" ORTHROS_ATTN_DECODE_RELAXED=0) ;;
            fused-graphs-claim[1-9] | fused-graphs-claim[1-9][0-9] | fused-graphs-claim[1-9][0-9][0-9] | \
                fused-graphs-claim[1-9][0-9][0-9][0-9] | fused-graphs-claim[1-9][0-9][0-9][0-9][0-9] | \
                fused-graphs-claim[1-9][0-9][0-9][0-9][0-9][0-9])
                envs=("${fused[@]}" ORTHROS_ATTN_DECODE_CLAIM="${mode#fused-graphs-claim}") ;;
            fused-graphs-carve[0-9] | fused-graphs-carve[1-9][0-9] | fused-graphs-carve100)
                envs=("${fused[@]}" ORTHROS_GEMV_CARVEOUT="${mode#fused-graphs-carve}") ;;
            fused-graphs-balance[01]) envs=("${fused[@]}" ORTHROS_GEMV_BALANCE=${mode#fused-graphs-balance}) ;;
            fused-graphs-qkvb[1-9]*-areg160)
                n=${mode#fused-graphs-qkvb}; n=${n%-areg160}
                case $n in *[!0-9]* | ?????*) echo "--decode: no mode $mode" | tee -a "$OUT/decode.log"; continue ;; esac
                envs=("${fused[@]}" ORTHROS_GEMV_QKV_BLOCKS="$n" ORTHROS_ATTN_DECODE_REGS=160) ;;
            fused-graphs-qkvb[1-9] | fused-graphs-qkvb[1-9][0-9] | fused-graphs-qkvb[1-9][0-9][0-9] | \
                fused-graphs-qkvb[1-4][0-9][0-9][0-9])
                envs=("${fused[@]}" ORTHROS_GEMV_QKV_BLOCKS="${mode#fused-graphs-qkvb}") ;;
            *) echo "--decode: no mode $mode" | tee -a "$OUT/decode.log"; continue ;;
        esac
        ok=0
        for spec in ${DECODE_SPECS:-llama3.2-1b:1:4k,128k llama3.2-1b:16:4k,32k llama3.1-8b:1:4k llama3.1-8b:16:4k,32k}; do
            case "$spec" in *[!a-z0-9.:,-]*) echo "DECODE_SPECS: $spec is not model:batch:ctxs" | tee -a "$OUT/decode.log"; continue ;; esac
            IFS=: read -r model batch ctxs <<<"$spec"
            # 64 steps a sample from depth ctx; transformer decodes the same way (full attention over the cache)
            step "decode_$mode" decode.log env "${envs[@]}" "$BUILD/orthros" bench --model "preset:$model" --device cuda \
                --arch orthros --phase decode --ctx "$ctxs" --batch "$batch" --decode-tokens 64 --reps 5 --max-reps 10 \
                --timeout 10 --json "$OUT/decode/$model-b$batch-$mode.json" --force && ok=$((ok + 1))
        done
        status[decode_$mode]="$ok runs passed"
    done
    if [ -f "$OUT/decode_anchor.json" ]; then
        status[decode_anchor]="skipped (OUTDIR/decode_anchor.json is there)"
    elif python3 -c 'import torch' 2>/dev/null; then
        step decode_anchor decode.log python3 bench/kernels/decode_anchor.py "$OUT/decode_anchor.json"
    else
        status[decode_anchor]="skipped (no PyTorch)"
    fi
    # The stronger anchor: the same step through torch.compile, for the three batch-1 targets (a minute of compiling
    # each), once.
    if [ -f "$OUT/decode_anchor_compiled.json" ]; then
        status[decode_anchor_compiled]="skipped (OUTDIR/decode_anchor_compiled.json is there)"
    elif python3 -c 'import torch' 2>/dev/null; then
        step decode_anchor_compiled decode.log timeout -k 10 420 python3 bench/kernels/decode_anchor.py \
            "$OUT/decode_anchor_compiled.json" --compile --only llama3.2-1b:1:4096,llama3.2-1b:1:131072,llama3.1-8b:1:4096
    else
        status[decode_anchor_compiled]="skipped (no PyTorch)"
    fi
    anchor_json=()
    for f in decode_anchor decode_anchor_compiled; do [ -f "$OUT/$f.json" ] && anchor_json+=("$OUT/$f.json"); done
    python3 bench/kernels/decode_summary.py "$OUT/decode" ${anchor_json[@]+"${anchor_json[@]}"} >"$OUT/decode_summary.txt" 2>&1
    # the same as figures (orthros plot: decode_step, each shape against its floor and the anchors), where gnuplot is
    if command -v "${ORTHROS_GNUPLOT:-gnuplot}" >/dev/null 2>&1; then
        step decode_figs decode-figs.log "$BUILD/orthros" plot "$OUT"/decode/*.json ${anchor_json[@]+"${anchor_json[@]}"} \
            --out "$OUT/decode/figs"
    else
        status[decode_figs]="skipped (no gnuplot: orthros plot OUTDIR/decode/*.json OUTDIR/decode_anchor*.json draws them)"
    fi
fi
if [ $E2E_RECIPE = 1 ]; then
    step e2e_recipe e2e-recipe.log "$BUILD/orthros" bench --recipe e2e --device cuda --reps 3 --max-reps 5 --timeout 20 \
        --out-dir "$OUT/e2e-recipe"
    # the token ids generated from 8 prompt tokens (dummy weights: their values say nothing; stderr has tokens/s)
    step generate generate.log timeout -k 10 120 "$BUILD/orthros" generate --model preset:llama3.2-1b --arch orthros \
        --tokens 1,2,3,4,5,6,7,8 --device cuda --max-new 512
fi

echo
echo "==== summary ($OUT) ===="
printf '%-12s %s\n' step result
for s in configure build build_all ctest_gpu memcheck bench anchors e2e_1b e2e_8b e2e_window gate recipe e2e_recipe generate \
    decode_default decode_default-lt decode_plain decode_graphs decode_graphs-gemv decode_fused-graphs decode_fused-graphs-pdl \
    decode_fused-graphs-v1 decode_fused-graphs-v2 decode_fused-graphs-v3 decode_fused-graphs-v4 decode_fused-graphs-v5 decode_fused-graphs-v5s4 decode_fused-graphs-v5s8 decode_fused-graphs-v6 decode_fused-graphs-v6bulk decode_fused-graphs-v6wg decode_fused-graphs-head8 decode_fused-graphs-head8d3 decode_fused-graphs-head8d4 decode_fused-graphs-head8i decode_fused-graphs-head8id3 decode_fused-graphs-head8id4 decode_fused-graphs-nohead8 decode_fused-graphs-head8one decode_fused-graphs-head8nopf decode_fused-graphs-head8even decode_fused-graphs-attnearly decode_fused-graphs-kvpf8 decode_fused-graphs-kvpf16 decode_fused-graphs-chain decode_fused-graphs-attn7 decode_fused-graphs-attn8 decode_fused-graphs-attno decode_fused-graphs-qkvattn decode_fused-graphs-opdl0 decode_fused-graphs-opdl1 decode_fused-graphs-opdl2 decode_fused-graphs-opdl3 decode_fused-graphs-apdl decode_fused-graphs-pdllate decode_fused-graphs-pdllate-apdl decode_fused-graphs-nopdllate decode_fused-graphs-pdllate2 decode_fused-graphs-lead1 decode_fused-graphs-lead2 decode_fused-graphs-lead3 decode_fused-graphs-fill1 decode_fused-graphs-fill2 decode_fused-graphs-fill3 decode_fused-graphs-kw1 decode_fused-graphs-kw2 decode_fused-graphs-kw4 decode_fused-graphs-mlp decode_fused-graphs-mlpring decode_fused-graphs-chainring decode_fused-graphs-l2pf \
    decode_fused-graphs-l2pf-last decode_fused-graphs-l2pf32 decode_fused-graphs-areg160 decode_fused-graphs-alean decode_fused-graphs-nolean decode_fused-graphs-apush decode_fused-graphs-arelax decode_fused-graphs-norelax \
    decode_fused-graphs-balance0 decode_fused-graphs-balance1 \
    $(for m in ${DECODE//,/ }; do case $m in fused-graphs-early* | fused-graphs-qkvb* | fused-graphs-carve* | fused-graphs-claim*) echo "decode_$m" ;; esac; done) \
    decode_anchor \
    decode_anchor_compiled decode_figs; do
    case "$s" in decode_* | e2e_recipe | generate) [ -n "${status[$s]:-}" ] || continue ;; esac
    printf '%-12s %s\n' "$s" "${status[$s]:-not run}"
done
# Register spills of the kernels this build compiled (ptxas -warn-spills; a fresh build lists every kernel).
grep -h "Registers are spilled" "$OUT/build.log" 2>/dev/null | sort -u >"$OUT/spills.txt"
if grep -q "Building CUDA object" "$OUT/build.log" 2>/dev/null; then
    echo "register spills: $(wc -l <"$OUT/spills.txt") kernel(s) (OUTDIR/spills.txt; of the CUDA files this build compiled)"
else
    echo "register spills: not known (this build compiled no CUDA file; a fresh build folder lists them)"
fi
grep -E "passed, .* failed" "$OUT/ctest.log" 2>/dev/null | tail -1
# (ctest -V prefixes each line of a test's output with its number.)
grep -E "^([0-9]+: )?(FAIL|SKIP)" "$OUT/ctest.log" 2>/dev/null | head -20
[ -s "$OUT/memcheck.txt" ] && echo "memcheck by section: $(tr '\n' ';' <"$OUT/memcheck.txt")"
grep -E "^([0-9]+: )?(prefill kernel version|decode kernel version|linear prefill version)" "$OUT/ctest.log" 2>/dev/null
# The kernel table: ours (default and best version) against flash and cuDNN of the same run, as ratios.
if [ -f "$OUT/bench_kernels.json" ] && command -v python3 >/dev/null; then
    anchors_json=()
    [ -f "$OUT/anchors.json" ] && anchors_json=("$OUT/anchors.json")
    python3 bench/kernels/summary.py "$OUT/bench_kernels.json" ${anchors_json[@]+"${anchors_json[@]}"} >"$OUT/summary.txt" 2>&1
    echo
    cat "$OUT/summary.txt"
elif [ -f "$OUT/bench.log" ]; then
    grep -E "^(op|ceiling|attn)" "$OUT/bench.log"
fi
[ -f "$OUT/e2e.log" ] && grep -E "^(arch|transformer|orthros|speedup)" "$OUT/e2e.log"
# The decode modes side by side (--decode): each against the floor, the targets and PyTorch.
[ -f "$OUT/decode_summary.txt" ] && { echo; cat "$OUT/decode_summary.txt"; }
# --e2e-recipe: the speedups end to end and generate's rate
[ -f "$OUT/e2e-recipe.log" ] && grep -E "^speedup|time to first token" "$OUT/e2e-recipe.log"
[ -f "$OUT/generate.log" ] && grep -E "^orthros generate:" "$OUT/generate.log"
fail=0
# (memcheck "incomplete": every section it reached was clean, the budget ended first; its status names the rest)
for s in configure build ctest_gpu memcheck bench; do case "${status[$s]:-}" in "rc=0 "*|skipped*|incomplete*) ;; *) fail=1 ;; esac; done
for s in e2e_recipe generate; do case "${status[$s]:-}" in "" | "rc=0 "*) ;; *) fail=1 ;; esac; done
case "${status[gate]:-}" in "rc=1 "*) fail=1 ;; esac
exit $fail
