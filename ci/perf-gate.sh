#!/usr/bin/env bash
# The CI performance gate: builds two revisions, benchmarks them interleaved on the same machine, compares.
#
# Usage: ci/perf-gate.sh BASE_REF HEAD_REF [OUTDIR] [--device cpu]
#        ci/perf-gate.sh --prebuilt BASE_BUILD_DIR HEAD_BUILD_DIR [OUTDIR] [--device cpu]
#
# --prebuilt skips git and the builds and runs the rounds with two existing build folders (each with orthros
# and, for the kernel comparison, bench/kernels/bench_kernels, or kernels/tests/bench_kernels in builds from
# before it moved): for a tree without git history (a copy on a GPU machine), or an A/A check of the gate itself
# (the same folder twice: nothing may come out SLOW).
# Each ref gets a git worktree under a temporary directory and its own Release build (CUDA architectures from
# ORTHROS_CUDA_ARCHS, default 90a; --device cpu builds without CUDA). Then PERF_GATE_ROUNDS rounds (default 8)
# run, in ABBA order (base, head, head, base, ...) so that drift of clocks and temperature falls on both
# revisions alike: each round runs the kernel benchmarks (bench_kernels --quick, GPU only, when both revisions
# have them) and a short `orthros bench` of each revision, each writing its own file. Finally
# `orthros compare` (from HEAD_REF's build, or $ORTHROS_COMPARE) compares the rounds of base against those of
# head (rounds kept apart in the interval: docs/compare.md), and the gate exits with its code:
#   0 nothing SLOW, 1 something SLOW (a regression), 2 inconclusive (cells do not match, all ambiguous);
#   3 the gate itself could not run (no GPU, a build or a benchmark failed).
# Without an NVIDIA GPU it stops with exit 3 unless --device cpu is given (a CPU dry run of the same steps).
#
# Settings (environment): PERF_GATE_ROUNDS (8: compare tests the rounds' medians, and 8 a side can pass Holm), PERF_GATE_REPS (samples per cell per round, 5),
# PERF_GATE_BENCH_ARGS (the bench sweep; default: preset:llama3.2-1b, transformer and orthros, 4K and 16K,
# prefill and decode on cuda; preset:tiny, 256 and 1K on cpu), PERF_GATE_THRESHOLD (percent, 5),
# PERF_GATE_ALPHA (0.05), ORTHROS_CUDA_ARCHS (90a), CJSON_ROOT (passed to CMake).
# OUTDIR (default perf-gate-out) receives every round's JSON, the logs, compare-*.txt and compare-*.md.
set -u -o pipefail

usage() { echo "usage: ci/perf-gate.sh [--prebuilt] BASE HEAD [OUTDIR] [--device cpu]  (refs, or build folders with --prebuilt)" >&2; exit 3; }
DEVICE=cuda
PREBUILT=0
ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --device) [ $# -ge 2 ] || usage; DEVICE=$2; shift 2 ;;
        --device=*) DEVICE=${1#--device=}; shift ;;
        --prebuilt) PREBUILT=1; shift ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) ARGS+=("$1"); shift ;;
    esac
done
[ ${#ARGS[@]} -ge 2 ] && [ ${#ARGS[@]} -le 3 ] || usage
BASE_REF=${ARGS[0]}
HEAD_REF=${ARGS[1]}
OUT=${ARGS[2]:-perf-gate-out}
case "$DEVICE" in cuda|cpu) ;; *) echo "perf-gate: --device must be cuda or cpu (got $DEVICE)" >&2; exit 3 ;; esac

fail() { echo "perf-gate: error: $*" >&2; exit 3; }

if [ "$DEVICE" = cuda ] && ! nvidia-smi -L >/dev/null 2>&1; then
    fail "no NVIDIA GPU here (nvidia-smi -L failed): run the gate on a GPU runner, or pass --device cpu for a CPU dry run"
fi

mkdir -p "$OUT" || fail "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
if [ $PREBUILT = 1 ]; then
    for d in "$BASE_REF" "$HEAD_REF"; do [ -x "$d/orthros" ] || fail "--prebuilt: $d/orthros is not an executable"; done
    BASE_SHA=$(cd "$BASE_REF" && pwd)
    HEAD_SHA=$(cd "$HEAD_REF" && pwd)
else
    REPO=$(git rev-parse --show-toplevel 2>/dev/null) || fail "not inside a git repository"
    cd "$REPO"
    BASE_SHA=$(git rev-parse --verify "$BASE_REF^{commit}" 2>/dev/null) || fail "unknown ref $BASE_REF"
    HEAD_SHA=$(git rev-parse --verify "$HEAD_REF^{commit}" 2>/dev/null) || fail "unknown ref $HEAD_REF"
fi
ROUNDS=${PERF_GATE_ROUNDS:-8}
REPS=${PERF_GATE_REPS:-5}
ARCHS=${ORTHROS_CUDA_ARCHS:-90a}
if [ "$DEVICE" = cuda ]; then
    BENCH_ARGS=${PERF_GATE_BENCH_ARGS:---model preset:llama3.2-1b --arch transformer,orthros --ctx 4k,16k --phase prefill,decode}
    CUDA_OPT=(-DORTHROS_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$ARCHS")
else
    BENCH_ARGS=${PERF_GATE_BENCH_ARGS:---model preset:tiny --arch transformer,orthros --ctx 256,1k --phase prefill,decode --decode-tokens 8}
    CUDA_OPT=(-DORTHROS_CUDA=OFF)
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/perf-gate.XXXXXX") || fail "mktemp failed"
cleanup() {
    if [ $PREBUILT = 0 ]; then
        git -C "$REPO" worktree remove --force "$TMP/base" >/dev/null 2>&1
        git -C "$REPO" worktree remove --force "$TMP/head" >/dev/null 2>&1
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT

build() { # build NAME SHA: worktree and Release build of SHA in $TMP/NAME
    local name=$1 sha=$2 wt=$TMP/$1
    echo "perf-gate: building $name ($sha)" >&2
    git worktree add --detach "$wt" "$sha" >"$OUT/build-$name.log" 2>&1 || fail "git worktree add for $name failed (see $OUT/build-$name.log)"
    ORTHROS_GIT_COMMIT=$sha cmake -S "$wt" -B "$wt/build" -DCMAKE_BUILD_TYPE=Release "${CUDA_OPT[@]}" \
        ${CJSON_ROOT:+-DCJSON_ROOT="$CJSON_ROOT"} >>"$OUT/build-$name.log" 2>&1 || fail "configure of $name failed (see $OUT/build-$name.log)"
    cmake --build "$wt/build" -j"$(nproc)" --target orthros >>"$OUT/build-$name.log" 2>&1 || fail "build of $name failed (see $OUT/build-$name.log)"
    if [ "$DEVICE" = cuda ]; then
        cmake --build "$wt/build" -j"$(nproc)" --target bench_kernels >>"$OUT/build-$name.log" 2>&1 ||
            echo "perf-gate: $name has no bench_kernels target; kernels are not compared" >&2
    fi
}
declare -A BUILD_DIR
if [ $PREBUILT = 1 ]; then
    BUILD_DIR[base]=$BASE_SHA
    BUILD_DIR[head]=$HEAD_SHA
else
    build base "$BASE_SHA"
    build head "$HEAD_SHA"
    BUILD_DIR[base]=$TMP/base/build
    BUILD_DIR[head]=$TMP/head/build
fi

# The kernel benchmark of a build folder (bench/kernels/; kernels/tests/ in builds from before it moved there).
declare -A KERNELS_BIN
for name in base head; do
    for rel in bench/kernels/bench_kernels kernels/tests/bench_kernels; do
        if [ -x "${BUILD_DIR[$name]}/$rel" ]; then KERNELS_BIN[$name]=${BUILD_DIR[$name]}/$rel; break; fi
    done
done
KERNELS=0
if [ "$DEVICE" = cuda ] && [ -n "${KERNELS_BIN[base]:-}" ] && [ -n "${KERNELS_BIN[head]:-}" ]; then
    KERNELS=1
fi

run_one() { # run_one NAME ROUND
    local name=$1 r=$2 bin=${BUILD_DIR[$1]}/orthros
    mkdir -p "$OUT/$name"
    if [ $KERNELS = 1 ]; then
        "${KERNELS_BIN[$name]}" "$OUT/$name/kernels-r$r.json" --quick >>"$OUT/$name/kernels.log" 2>&1 ||
            fail "bench_kernels of $name failed in round $r (see $OUT/$name/kernels.log)"
    fi
    # shellcheck disable=SC2086 # BENCH_ARGS is a list of options
    "$bin" bench --device "$DEVICE" $BENCH_ARGS --warmup 1 --reps "$REPS" --max-reps "$REPS" \
        --json "$OUT/$name/bench-r$r.json" >>"$OUT/$name/bench.log" 2>&1 ||
        fail "orthros bench of $name failed in round $r (see $OUT/$name/bench.log)"
}
for r in $(seq 1 "$ROUNDS"); do
    echo "perf-gate: round $r of $ROUNDS" >&2
    if [ $((r % 2)) = 1 ]; then run_one base "$r"; run_one head "$r"; else run_one head "$r"; run_one base "$r"; fi
done

list() { # list NAME KIND: the round files, comma-separated
    local files=() r
    for r in $(seq 1 "$ROUNDS"); do files+=("$OUT/$1/$2-r$r.json"); done
    (IFS=,; echo "${files[*]}")
}
COMPARE=${ORTHROS_COMPARE:-${BUILD_DIR[head]}/orthros}
"$COMPARE" compare --help >/dev/null 2>&1 || fail "$COMPARE has no compare command (set ORTHROS_COMPARE to an orthros that has)"
status=0
kinds=(bench)
[ $KERNELS = 1 ] && kinds=(kernels bench)
for k in "${kinds[@]}"; do
    "$COMPARE" compare "$(list base "$k")" "$(list head "$k")" --threshold "${PERF_GATE_THRESHOLD:-5}" \
        --alpha "${PERF_GATE_ALPHA:-0.05}" --markdown "$OUT/compare-$k.md" --json "$OUT/compare-$k.json" | tee "$OUT/compare-$k.txt"
    rc=${PIPESTATUS[0]}
    echo "perf-gate: $k: compare exit $rc" >&2
    # The gate's code: 1 if any comparison found a regression, else 2 if any was inconclusive, else 0.
    if [ "$rc" = 1 ] || { [ "$rc" = 2 ] && [ "$status" = 0 ]; }; then status=$rc; fi
    [ "$rc" -gt 2 ] && fail "compare failed ($rc)"
done
echo "perf-gate: $BASE_REF ($BASE_SHA) -> $HEAD_REF ($HEAD_SHA): exit $status; results in $OUT" >&2
exit "$status"
