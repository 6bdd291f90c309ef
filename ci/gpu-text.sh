#!/usr/bin/env bash
# The text evals of SmolLM2-135M-Instruct on a GPU machine: the model from the cache (or joined from pieces,
# ci/fetch-model.sh --join), orthros built with CUDA (the build folder of ci/gpu.sh, built here when missing), a
# device check (the greedy text of one prompt, and the perplexity of 4K tokens, on the cpu and cuda backends), eval mc
# on cuda against lm-eval's committed log-likelihoods and its timing at 100 questions of ~1K tokens, then the full grid of evals/run_text_grid.sh --full with DEVICE=cuda, resumed in STATE (kept between calls) and
# copied to OUTDIR.
# Usage: ci/gpu-text.sh OUTDIR [--pieces DIR] [--budget S] [--no-grid]
#   --pieces DIR  join the model from DIR/smollm2.xz.part* (ci/fetch-model.sh --split) when the cache lacks it
#   --budget S    stop the grid after S seconds (default 480); run again to resume where it stopped
#   --no-grid     stop after the device check and eval mc's check and timing
# Environment: ORTHROS_GPU_BUILD (default build-gpu), ORTHROS_CUDA_ARCHS (default 90a), STATE (default
# $ORTHROS_GPU_BUILD/text-grid).
set -u -o pipefail

OUT=${1:?usage: ci/gpu-text.sh OUTDIR [--pieces DIR] [--budget S] [--no-grid]}
shift
PIECES= BUDGET=480 GRID=1
while [ $# -gt 0 ]; do
    case "$1" in
        --pieces) [ $# -ge 2 ] || { echo "--pieces needs a folder" >&2; exit 2; }; PIECES=$2; shift 2 ;;
        --budget) [ $# -ge 2 ] || { echo "--budget needs seconds" >&2; exit 2; }
            case "$2" in ''|*[!0-9]*) echo "--budget: a whole number of seconds" >&2; exit 2 ;; esac
            BUDGET=$2; shift 2 ;;
        --no-grid) GRID=0; shift ;;
        *) echo "ci/gpu-text.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
. "$(dirname "$0")/gpu-common.sh"
STATE=${STATE:-$BUILD/text-grid}

if [ -n "$PIECES" ]; then
    MODEL=$(ci/fetch-model.sh --join "$PIECES") || { echo "gpu-text: the model could not be joined" >&2; exit 1; }
else
    MODEL=$(ci/fetch-model.sh) || { echo "gpu-text: no model (ci/fetch-model.sh)" >&2; exit 1; }
fi
if [ ! -x "$BUILD/orthros" ]; then
    step configure "build.log" cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" \
        -DCJSON_ROOT="$CJSON" || exit 1
fi
step build "build.log" cmake --build "$BUILD" -j"$(nproc)" --target orthros || exit 1
B=$BUILD/orthros

# The device check: the greedy text of one prompt on both backends.
PROMPT="The capital of France is Paris. The capital of Japan is"
for dev in cpu cuda; do
    "$B" generate --model "$MODEL" --device "$dev" --prompt "$PROMPT" --max-new 16 >"$OUT/generate-$dev.txt" 2>&1
    echo "generate $dev: rc $? $(tail -1 "$OUT/generate-$dev.txt")"
done
if [ "$(tail -1 "$OUT/generate-cpu.txt" | python3 -c 'import json,sys; print(json.load(sys.stdin)["text"])' 2>&1)" = \
     "$(tail -1 "$OUT/generate-cuda.txt" | python3 -c 'import json,sys; print(json.load(sys.stdin)["text"])' 2>&1)" ]; then
    echo "device check: cpu and cuda generate the same greedy text"
else
    echo "device check: cpu and cuda greedy texts DIFFER (see generate-*.txt)"
fi

# Perplexity of the first 4K tokens at 1K windows, transformer and orthros, on both backends.
for dev in cpu cuda; do
    "$B" eval ppl --model "$MODEL" --device "$dev" --arch transformer,orthros --text data/text/kjv-genesis-exodus.txt \
        --ctx 1k --max-tokens 4k --quiet --json "$OUT/ppl-check-$dev.json" >"$OUT/ppl-check-$dev.txt" 2>&1
    echo "ppl check $dev: rc $?"
done
python3 - "$OUT/ppl-check-cpu.json" "$OUT/ppl-check-cuda.json" <<'PY' || echo "ppl check: no comparison"
import json, sys
cpu, cuda = ({c["arch"]: c["ppl"] for c in json.load(open(p))["cells"]} for p in sys.argv[1:3])
for arch in cpu:
    print(f"ppl check {arch}: cpu {cpu[arch]:.4f} cuda {cuda[arch]:.4f} (cuda/cpu {cuda[arch] / cpu[arch]:.5f})")
PY

# eval mc on cuda (issue 26): lm-eval's log-likelihoods of the committed task files (evals/tests/mc/reference.json,
# made on the cpu in fp32) against the cuda backend's (bf16), then the timing of 100 questions of ~1K tokens, with the
# choices decoded from copies of the prefilled context (decode) and each prefilled whole (prefill).
for f in arc hellaswag piqa openbookqa winogrande generic; do
    "$B" eval mc --model "$MODEL" --device cuda --arch transformer --tasks "evals/tests/mc/$f.jsonl" --quiet \
        --json "$OUT/mc-check-$f.json" >"$OUT/mc-check-$f.txt" 2>&1 || echo "mc check $f: FAILED (mc-check-$f.txt)"
done
python3 - "$OUT" <<'PY' || echo "mc check: no comparison"
import json, sys
ref = {(r["file"], r["shots"]): r for r in json.load(open("evals/tests/mc/reference.json"))["runs"]}
for (file, shots), r in ref.items():
    if shots:
        continue
    name = file.split("/")[-1][:-6]
    c = json.load(open(f"{sys.argv[1]}/mc-check-{name}.json"))["cells"][0]
    d = max(abs(a - b) for q, rec in zip(r["questions"], c["records"]) for a, b in zip(q["loglikelihoods"], rec["loglikelihoods"]))
    print(f"mc check {name}: cuda acc {c['acc']:.4f} (lm-eval fp32 {r['acc']:.4f}), log-likelihoods within {d:.3g}")
PY
python3 evals/make_mc_long.py >"$OUT/mc-long.jsonl"
for score in decode prefill; do
    "$B" eval mc --model "$MODEL" --device cuda --arch transformer,orthros --tasks "$OUT/mc-long.jsonl" --score "$score" \
        --quiet --json "$OUT/mc-long-$score.json" >"$OUT/mc-long-$score.txt" 2>&1 || echo "mc timing $score: FAILED"
    python3 - "$OUT/mc-long-$score.json" "$score" <<'PY' || true
import json, sys
for c in json.load(open(sys.argv[1]))["cells"]:
    print(f"mc timing {sys.argv[2]} {c['arch']}: {c['n']} questions of up to {c['ctx']} tokens in {c['elapsed_s']:.2f} s, acc {c['acc']:.3f}")
PY
done

[ "$GRID" = 1 ] || { echo "grid: not run (--no-grid)"; exit 0; }
mkdir -p "$STATE"
start=$(date +%s)
timeout --signal=INT "$BUDGET" env ORTHROS="$B" DEVICE=cuda MODEL="$MODEL" evals/run_text_grid.sh "$STATE" --full \
    >"$OUT/grid.log" 2>&1
rc=$?
case $rc in
    0) how=done ;;
    124) how="stopped at the budget: run again to resume" ;;
    *) how="FAILED (grid.log)" ;;
esac
echo "grid: rc $rc after $(( $(date +%s) - start )) s, $how"
tail -5 "$OUT/grid.log"
mkdir -p "$OUT/text"
cp "$STATE"/*.json "$STATE"/*.md "$OUT/text/" 2>/dev/null
ls -la "$OUT/text"
