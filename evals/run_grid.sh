#!/usr/bin/env bash
# The full recall grid of issue 5 on one GPU: the analytic checkpoint, NIAH (every variant) over 1K..128K x
# depths 0..100 step 10, MQAR over pairs 1..64 x 1K..128K, and a 1M NIAH spot check, for transformer, orthros,
# linear, swa and hybrid; then the transformers cross-check (evals/check_hf.py) when Python has transformers.
# Every command resumes, so a rerun after an interruption finishes the grid without redoing cells.
#
#   evals/run_grid.sh OUTDIR
# Environment: ORTHROS (binary, default build/orthros), DEVICE (cuda), SAMPLES (override the counts), and for a
# quick smaller grid NIAH_CTX, DEPTHS, MQAR_CTX, PAIRS, BIG_CTX (the spot check; empty skips it).
#
# Sample counts (about 5 minutes on one H200): 10 per single-needle cell, 5 per cell of the other variants and
# of MQAR, 2 per 1M cell. hybrid runs with --hybrid-every 2: the checkpoint has 2 layers, so the default 4
# would make every layer linear; with 2 its retrieval layer (layer 1) is the full one.
set -euo pipefail
out=${1:?usage: evals/run_grid.sh OUTDIR}
bin=${ORTHROS:-build/orthros}
dev=${DEVICE:-cuda}
mkdir -p "$out"
archs=transformer,orthros,linear,swa,hybrid
common=(--device "$dev" --arch "$archs" --hybrid-every 2 --seed 1 --resume)
t0=$(date +%s)

[ -f "$out/model/config.json" ] || "$bin" make-model analytic-recall --out "$out/model" --max-context 1m 2>&1 |
    tee "$out/make-model.log"

for v in single multikey multivalue multiquery; do
    n=${SAMPLES:-$([ $v = single ] && echo 10 || echo 5)}
    "$bin" eval niah --model "$out/model" --variant $v --ctx "${NIAH_CTX:-1k:128k:x2}" --depths "${DEPTHS:-0:100:+10}" --samples "$n" \
        "${common[@]}" --json "$out/niah-$v.json" 2> >(tee "$out/niah-$v.log" >&2)
done
"$bin" eval mqar --model "$out/model" --pairs "${PAIRS:-1:64:x2}" --ctx "${MQAR_CTX:-1k,8k,32k,128k}" --samples "${SAMPLES:-5}" \
    "${common[@]}" --json "$out/mqar.json" 2> >(tee "$out/mqar.log" >&2)
# 1M tokens: the full-attention prefill is the long pole (about 64 times 128K), so three depths, two samples.
big=${BIG_CTX-1m}
[ -z "$big" ] || "$bin" eval niah --model "$out/model" --variant single --ctx "$big" --depths 0,50,100 --samples 2 \
    "${common[@]}" --json "$out/niah-1m.json" 2> >(tee "$out/niah-1m.log" >&2)

if python3 -c "import torch, transformers" 2>/dev/null; then
    python3 evals/check_hf.py --orthros "$bin" --model "$out/model" --device "$dev" --work "$out/check_hf" \
        --ctx 1k,8k --mqar-ctx 1k,8k --samples 2 2>&1 | tee "$out/check_hf.log"
else
    echo "check_hf: skipped (no torch + transformers in this Python)" | tee "$out/check_hf.log"
fi
echo "grid done in $(( $(date +%s) - t0 )) s; results in $out"
