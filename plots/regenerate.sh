#!/usr/bin/env bash
# Regenerates every committed figure of data/results from its folder's result files (the inputs of each are
# listed here, as each folder's NOTES.md names them), with build/orthros: `plots/regenerate.sh [BUILD_DIR]`.
# Old figures of a folder are removed first, so that a figure no longer made does not linger.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build}/orthros"
R=data/results
fig() { # fig OUT_DIR FILE...
  local out="$1"; shift
  rm -f "$out"/*.png "$out"/*.dat "$out"/*.txt
  "$bin" plot "$@" --out "$out"
}
fig $R/evals-h200-2026-11-29/figs $R/evals-h200-2026-11-29/{niah-single,niah-multikey,niah-multivalue,niah-multiquery,niah-1m,mqar}.json
fig $R/h200-2026-11-29b/figs $R/h200-2026-11-29b/{bench-llama3.2-1b,bench-llama3.1-8b,anchors}.json
fig $R/reproduce-21.9x-2026-12-01/figs $R/reproduce-21.9x-2026-12-01/{llama3.2-1b,llama3.1-8b,llama3.1-8b-tp2}.json \
    $R/h200-2026-12-01/anchors.json $R/h200-2026-12-01-linear-v6/bench_kernels.json
fig $R/reproduce-21.9x-2026-12-01b/figs $R/reproduce-21.9x-2026-12-01b/{llama3.2-1b,llama3.1-8b,llama3.1-8b-tp2}.json \
    $R/h200-2026-12-01-decode-v7/{anchors,bench_kernels}.json
fig $R/reproduce-21.9x-2026-12-01c/figs $R/reproduce-21.9x-2026-12-01c/{llama3.2-1b,llama3.1-8b,llama3.1-8b-tp2}.json \
    $R/h200-2026-12-01-v7-defaults/{anchors,bench_kernels}.json
fig $R/tp-h200x2-2026-12-01/figures-1b $R/tp-h200x2-2026-12-01/bench-llama3.2-1b-{tp1,tp2}.json
fig $R/tp-h200x2-2026-12-01/figures-8b $R/tp-h200x2-2026-12-01/bench-llama3.1-8b-{tp1,tp2,1m-tp2}.json
fig $R/smollm2-h200-2026-12-01/figures $R/smollm2-h200-2026-12-01/{ppl,recall,ruler-niah-single,ruler-niah-multikey,ruler-niah-multivalue,ruler-niah-multiquery,ruler-vt,ruler-cwe}.json
fig $R/h200-2026-12-02-decode-v3/e2e/figs $R/h200-2026-12-02-decode-v3/e2e/llama3.2-1b-{n128,n1024}.json
F=$R/h200-2026-12-03-final/figures-41712a6/e2e
fig $F/figs $F/llama3.2-1b-{n128,n1024}.json
F=$R/h200-2026-12-03-default43/figures-83bd9d7/e2e
fig $F/figs $F/llama3.2-1b-{n128,n1024}.json
F=$R/h200-2026-12-04-sass/figures-d960530/e2e
fig $F/figs $F/llama3.2-1b-{n128,n1024}.json
F=$R/h200-2026-12-04-pdllate/figures-09052e5/e2e
fig $F/figs $F/llama3.2-1b-{n128,n1024}.json
F=$R/h200-2026-12-04-pdllate/figures-7c0efcb/e2e
fig $F/figs $F/llama3.2-1b-{n128,n1024}.json
# the decode step against its floor and PyTorch (decode_step), with the decode files' other figures
for F in $R/h200-2026-12-04-pdllate/figures-7c0efcb $R/h200-2026-12-06c-default/figures-b00169d; do
  fig $F/decode/figs $F/decode/llama3.2-1b-b{1,16}-default.json $F/decode/llama3.1-8b-b{1,16}-default.json \
      $F/decode_anchor{,_compiled}.json
done
G=$R/smollm2-converted-h200-2026-12-01/grid
fig $R/smollm2-converted-h200-2026-12-01/figures $G/{base,control,conv,conv-tail16,conv-tail64,conv-hybrid}-ppl-kjv.json \
    $G/{base,control,conv,conv-hybrid}-recall.json $G/*-niah-*.json $G/*-vt.json $G/*-cwe.json
fig $R/smollm2-converted-h200-2026-12-01/figures-python $G/{base,control,conv,conv-tail16,conv-tail64,conv-hybrid}-ppl-python.json
G3=$R/smollm2-converted-h200-2026-12-02/grid
fig $R/smollm2-converted-h200-2026-12-02/figures $G/{base,control}-ppl-kjv.json $G3/{conv,conv-tail64,ablation}-ppl-kjv.json \
    $G/{base,control}-recall.json $G3/conv-recall.json $G/base-niah-*.json $G3/*-niah-*.json $G/base-vt.json \
    $G3/conv-vt.json $G/base-cwe.json $G3/conv-cwe.json
fig $R/smollm2-converted-h200-2026-12-02/figures-python $G/{base,control}-ppl-python.json \
    $G3/{conv,conv-tail64,ablation}-ppl-python.json
G4=$R/smollm2-converted-h200-2026-12-02b/grid
fig $R/smollm2-converted-h200-2026-12-02b/figures $G/base-ppl-kjv.json $G3/conv-ppl-kjv.json \
    $G4/{conv-tail16,conv-hybrid,l4096,l4096-tail64}-ppl-kjv.json $G/base-niah-single.json $G3/conv-niah-single.json \
    $G4/{conv-tail16,conv-hybrid,l4096,l4096-tail64}-niah-single.json $G/base-recall.json $G3/conv-recall.json \
    $G4/{conv-hybrid,l4096}-recall.json
fig $R/smollm2-converted-h200-2026-12-02b/figures-python $G/base-ppl-python.json $G3/conv-ppl-python.json \
    $G4/{conv-tail16,conv-hybrid,l4096,l4096-tail64}-ppl-python.json
G5=$R/smollm2-converted-h200-2026-12-02d/grid
fig $R/smollm2-converted-h200-2026-12-02d/figures $G/base-ppl-kjv.json $G3/conv-ppl-kjv.json \
    $G5/conv-24M-before{,-tail64}-ppl-kjv.json $G/base-niah-single.json $G3/conv-niah-single.json \
    $G5/conv-24M-before{,-tail16,-tail64}-niah-single.json $G/base-recall.json $G3/conv-recall.json \
    $G5/conv-24M-before{,-tail16,-tail64}-recall.json
fig $R/smollm2-converted-h200-2026-12-02d/figures-python $G/base-ppl-python.json $G3/conv-ppl-python.json \
    $G5/conv-24M-before-ppl-python.json
# The conversion's data efficiency (convert/efficiency.py: quality against conversion tokens; pipeline summaries
# beside the grid files; S6 before S5: a job in several summaries takes the last one's figures, and S5's
# s1-24M-before ran alone on the GPU, S6's beside a grid).
S1=$R/smollm2-converted-h200-2026-12-01 S2=$R/smollm2-converted-h200-2026-12-01b S3=$R/smollm2-converted-h200-2026-12-02
S4=$R/smollm2-converted-h200-2026-12-02b S5=$R/smollm2-converted-h200-2026-12-02d S6=$R/smollm2-converted-h200-2026-12-02e
python3 convert/efficiency.py --out $S3/efficiency --base $S1/grid/base --summary $S1/convert/summary.json \
    --summary $S2/convert/summary.json --summary $S3/convert/summary.json --summary $S4/convert/summary.json \
    --summary $S6/convert/summary.json --summary $S5/convert/summary.json \
    --point 16M=$S1/grid/conv \
    --point 4M=$S2/grid/conv-4M --point 1M=$S2/grid/conv-1M --point 4M-before=$S2/grid/conv-4M-before \
    --point 16M-before=$S3/grid/conv --point 4M-L4096=$S2/grid/conv-4M-L4096 --point 4M-O7168=$S2/grid/conv-4M-O7168 \
    --point 16M-L4096-before=$S4/grid/l4096 --point 24M-before=$S5/grid/conv-24M-before \
    --control 16M=$S1/grid/control --control 24M=$S6/grid/control \
    >/dev/null
