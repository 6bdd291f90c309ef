#!/usr/bin/env bash
# The tensor-parallel GPU run, on a machine with 2 or more NVIDIA GPUs (docs/tensor-parallel.md): builds for
# sm_90a, finds NCCL, and runs these steps (all by default, in this order), leaving logs and JSON in OUTDIR and a
# summary last:
#   tests      the gpu-labelled tests (tensor_parallel_cuda among them: --tp 1 through a one-rank NCCL
#              communicator must equal the plain run bit for bit; --tp 2 against --tp 1 on the fixtures)
#   logits     --tp 2 against --tp 1 logits of the Llama-3.2-1B and 3.1-8B shapes (dummy weights, 256 tokens,
#              transformer and orthros): argmax agreement >= 90% and max error < 2% of the logit range (bf16)
#   allreduce  the all-reduce alone, measured by orthros bench --phase allreduce on the 8B shape's [rows][4096]
#              activation, 1 to 64K rows: bus bandwidth next to the cost model's 450 GB/s
#   bench1b    the Llama-3.2-1B shape, transformer and orthros, prefill and decode, 32K-128K, TP=1 and TP=2
#   bench8b    the same for the Llama-3.1-8B shape
#   1m         the 8B shape, orthros then transformer, prefill at 1M tokens with TP=2 (one repetition each; the
#              transformer cell is about 2.6e17 attention FLOPs, some 7 minutes at 300 TFLOP/s a GPU)
#   70b        the Llama-3.1-70B shape (141 GB of bf16 weights, ~75 GB a GPU at TP=2), transformer and orthros,
#              prefill and decode, 32K-128K with TP=N (no TP=1: it does not fit one GPU); about 5 minutes at TP=2
# Usage: ci/gpu-tp.sh OUTDIR [--steps LIST] [--tp N]
#   ORTHROS_GPU_TESTS=REGEX   run only the gpu tests whose names match (e.g. tensor_parallel)
#   --steps LIST  comma-separated steps from the list above (default: all)
#   --tp N        the tensor-parallel size to compare with TP=1 (default 2)
# Every bench step resumes its result file, so a step cut short by a 10-minute job continues where it
# stopped when called again with the same OUTDIR. A plan for 10-minute calls:
#   ci/gpu-tp.sh OUT --steps tests,logits,allreduce;  ci/gpu-tp.sh OUT --steps bench1b;
#   ci/gpu-tp.sh OUT --steps bench8b (twice if cut short);  ci/gpu-tp.sh OUT --steps 1m;  ci/gpu-tp.sh OUT --steps 70b
# NCCL comes from the nvidia-nccl-cu13 Python package when it is installed (else the system's libnccl.so.2).
# NVLink SHARP stays off: NCCL_NVLS_ENABLE=0 here and in every rank orthros starts.
set -u -o pipefail

OUT=${1:?usage: ci/gpu-tp.sh OUTDIR [--steps LIST] [--tp N]}
shift
STEPS=tests,logits,allreduce,bench1b,bench8b,1m,70b TP=2
while [ $# -gt 0 ]; do
    case "$1" in
        --steps) [ $# -ge 2 ] || { echo "--steps needs a list" >&2; exit 2; }; STEPS=$2; shift 2 ;;
        --tp) [ $# -ge 2 ] || { echo "--tp needs a number" >&2; exit 2; }; TP=$2; shift 2 ;;
        *) echo "ci/gpu-tp.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
want() { case ",$STEPS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
. "$(dirname "$0")/gpu-common.sh"
export NCCL_NVLS_ENABLE=0
NCCL_DIR=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
if [ -n "$NCCL_DIR" ] && [ -f "$NCCL_DIR/libnccl.so.2" ]; then
    export LD_LIBRARY_PATH=$NCCL_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
    NCCL_DIR="(not found in the nvidia-nccl-cu13 package; the system's libnccl.so.2, if any)"
fi

{
    echo "date: $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv 2>&1
    echo "-- how the GPUs are linked (nvidia-smi topo -m):"
    nvidia-smi topo -m 2>&1
    echo "-- NCCL: $NCCL_DIR"
    nvcc --version 2>&1 | tail -2
    run_commit
} | tee "$OUT/env.txt"
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$GPUS" -lt "$TP" ]; then
    echo "ci/gpu-tp.sh: --tp $TP needs $TP GPUs; nvidia-smi lists $GPUS" | tee -a "$OUT/env.txt"
    exit 1
fi

step configure build.log cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" \
    -DCJSON_ROOT="$CJSON" || { echo "configure failed"; exit 1; }
step build build.log cmake --build "$BUILD" -j"$(nproc)" || { echo "build failed"; exit 1; }
BIN=$BUILD/orthros

if want tests; then
    step tests ctest.log timeout -k 10 "${ORTHROS_GPU_TEST_TIMEOUT:-420}" ctest --test-dir "$BUILD" -L gpu -V \
        --output-on-failure ${ORTHROS_GPU_TESTS:+-R "$ORTHROS_GPU_TESTS"}
fi

if want logits; then
    # 256 prompt tokens; the files hold float32 [position][vocab].
    TOK=$(python3 -c 'print(",".join(str((i * 7919 + 13) % 128000) for i in range(256)))')
    logits_pair() { # logits_pair MODEL ARCH
        local name; name=$(basename "${1#preset:}")-$2
        timeout -k 10 300 "$BIN" logits --model "$1" --arch "$2" --device cuda --tokens "$TOK" --tp 1 \
            --out "$OUT/logits-$name-tp1.f32" &&
            timeout -k 10 300 "$BIN" logits --model "$1" --arch "$2" --device cuda --tokens "$TOK" --tp "$TP" \
                --out "$OUT/logits-$name-tp$TP.f32" &&
            python3 - "$OUT/logits-$name-tp1.f32" "$OUT/logits-$name-tp$TP.f32" "$name" <<'EOF'
import sys, numpy as np
a, b = (np.fromfile(p, dtype=np.float32).reshape(256, -1) for p in sys.argv[1:3])
agree = float((a.argmax(1) == b.argmax(1)).mean())
rel = float(np.abs(a - b).max() / (a.max() - a.min()))
ok = agree >= 0.9 and rel < 0.02 and np.isfinite(b).all()
print(f"{sys.argv[3]}: TP vs TP=1 argmax agreement {agree:.3f}, max abs err {np.abs(a - b).max():.4g} "
      f"({100 * rel:.3f}% of the logit range): {'PASS' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
EOF
        local rc=$?
        rm -f "$OUT/logits-$name-tp1.f32" "$OUT/logits-$name-tp$TP.f32"
        return $rc
    }
    logits_all() {
        local rc=0
        for m in preset:llama3.2-1b preset:llama3.1-8b; do
            for a in transformer orthros; do logits_pair "$m" "$a" || rc=1; done
        done
        return $rc
    }
    step logits logits.log logits_all
fi

if want allreduce; then
    step allreduce allreduce.log "$BIN" bench --model preset:llama3.1-8b --device cuda --tp "$TP" --arch transformer \
        --phase allreduce --ctx 1:64k:x4 --reps 5 --max-reps 20 --json "$OUT/allreduce-llama3.1-8b-tp$TP.json" --resume
fi

bench_pair() { # bench_pair MODEL NAME: TP=1 and TP=N side by side, 32K-128K, resumable
    local rc=0
    for t in 1 "$TP"; do
        "$BIN" bench --model "$1" --device cuda --tp "$t" --arch transformer,orthros --phase prefill,decode \
            --ctx 32k:128k:x2 --reps 3 --max-reps 5 --timeout 20 --json "$OUT/bench-$2-tp$t.json" --resume || rc=1
    done
    return $rc
}
want bench1b && step bench1b bench.log bench_pair preset:llama3.2-1b llama3.2-1b
want bench8b && step bench8b bench.log bench_pair preset:llama3.1-8b llama3.1-8b

if want 1m; then
    # One repetition each, orthros first: a call cut short by the transformer cell keeps the orthros one.
    run_1m() {
        local rc=0
        for a in orthros transformer; do
            "$BIN" bench --model preset:llama3.1-8b --device cuda --tp "$TP" --arch "$a" --phase prefill --ctx 1m \
                --warmup 0 --reps 1 --max-reps 1 --json "$OUT/bench-llama3.1-8b-1m-tp$TP.json" --resume || rc=1
        done
        return $rc
    }
    step 1m 1m.log run_1m
fi

if want 70b; then
    step 70b bench.log "$BIN" bench --model preset:llama3.1-70b --device cuda --tp "$TP" --arch transformer,orthros \
        --phase prefill,decode --ctx 32k:128k:x2 --reps 2 --max-reps 3 --timeout 30 \
        --json "$OUT/bench-llama3.1-70b-tp$TP.json" --resume
fi

# Scaling: TP=N over TP=1 per cell, from whatever the result files hold so far.
python3 - "$OUT" "$TP" > "$OUT/scaling.md" <<'EOF'
import json, os, sys
out, tp = sys.argv[1], int(sys.argv[2])
def cells(path):
    try:
        r = json.load(open(path))
    except (OSError, ValueError):
        return {}
    return {(m["arch"], m["phase"], m["ctx"], m["batch"]): m["stats"]["median"]
            for m in r.get("measurements", []) if "stats" in m}
print(f"# TP={tp} against TP=1 (median seconds; efficiency = speedup / {tp})\n")
for name in ("llama3.2-1b", "llama3.1-8b", "llama3.1-70b"):  # (70B: no TP=1 file, one GPU cannot hold it)
    a, b = cells(f"{out}/bench-{name}-tp1.json"), cells(f"{out}/bench-{name}-tp{tp}.json")
    if not a and not b:
        continue
    print(f"## {name}\n\n| arch | phase | ctx | TP=1 s | TP={tp} s | speedup | efficiency |\n|---|---|---|---|---|---|---|")
    for k in sorted(set(a) | set(b), key=lambda k: (k[0], k[1], k[2], k[3])):
        t1, t2 = a.get(k), b.get(k)
        sp = f"{t1 / t2:.2f}x" if t1 and t2 else "-"
        ef = f"{100 * t1 / t2 / tp:.0f}%" if t1 and t2 else "-"
        f = lambda t: f"{t:.4g}" if t else "not run"
        print(f"| {k[0]} | {k[1]} | {k[2]} | {f(t1)} | {f(t2)} | {sp} | {ef} |")
    print()
ar = f"{out}/allreduce-llama3.1-8b-tp{tp}.json"
if os.path.exists(ar):
    print(f"## All-reduce, [rows][4096] bf16 over {tp} GPUs\n\n| rows | bytes | median us | bus GB/s | of the cost model's 450 GB/s |\n|---|---|---|---|---|")
    for m in json.load(open(ar)).get("measurements", []):
        if "stats" in m:
            bus = 2 * (tp - 1) / tp * m["cost"]["bytes"] / m["stats"]["median"] / 1e9
            print(f"| {m['ctx']} | {m['cost']['bytes']:.0f} | {1e6 * m['stats']['median']:.1f} | {bus:.1f} | {100 * bus / 450:.0f}% |")
    print()
one = cells(f"{out}/bench-llama3.1-8b-1m-tp{tp}.json")
if one:
    print(f"## llama3.1-8b prefill at 1M tokens, TP={tp}\n")
    for k, t in sorted(one.items()):
        print(f"- {k[0]}: {t:.2f} s")
    if ("transformer", "prefill", 1048576, 1) in one and ("orthros", "prefill", 1048576, 1) in one:
        print(f"- speedup of orthros over transformer: {one[('transformer', 'prefill', 1048576, 1)] / one[('orthros', 'prefill', 1048576, 1)]:.1f}x")
EOF

echo
echo "==== summary ($OUT) ===="
printf '%-12s %s\n' step result
for s in configure build tests logits allreduce bench1b bench8b 1m 70b; do printf '%-12s %s\n' "$s" "${status[$s]:-not run}"; done
[ -f "$OUT/ctest.log" ] && grep -E "tests passed|tensor_parallel" "$OUT/ctest.log" | tail -4
[ -f "$OUT/logits.log" ] && grep -E "PASS|FAIL" "$OUT/logits.log"
cat "$OUT/scaling.md"
fail=0
for s in configure build tests logits allreduce bench1b bench8b 1m 70b; do
    case "${status[$s]:-}" in ""|"rc=0 "*) ;; *) fail=1 ;; esac
done
exit $fail
