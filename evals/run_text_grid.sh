#!/usr/bin/env bash
# The text evals on SmolLM2-135M-Instruct (ci/fetch-model.sh), every architecture, into OUTDIR:
#   evals/run_text_grid.sh OUTDIR            the small grid of data/results/smollm2-cpu-2026-12-01 (about 100 minutes
#                                            of a loaded 2-core cpu)
#   evals/run_text_grid.sh OUTDIR --full     the full grid: perplexity at 1K-8K (32K tokens), RULER NIAH single at
#                                            1K-8K x 5 depths x 8 samples, the other NIAH variants at 1K-8K x 3 depths
#                                            x 4 samples, variable tracking and common words at 1K-8K x 8 samples,
#                                            recall (data/results/smollm2-h200-2026-12-01: 8 minutes on an H200,
#                                            DEVICE=cuda, through ci/gpu-text.sh)
# Every file is resumable: run it again to finish what a stopped run left. Environment: ORTHROS (the binary,
# default build/orthros), DEVICE (default cpu), MODEL (default the fetched GGUF), WINDOW (swa, default 1024).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: evals/run_text_grid.sh OUTDIR [--full]}
full=0
[ "${2:-}" = "--full" ] && full=1
B=${ORTHROS:-build/orthros}
M=${MODEL:-.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf}
mkdir -p "$out"
C=(--model "$M" --device "${DEVICE:-cpu}" --window "${WINDOW:-1024}" --quiet)
niah() { "$B" eval ruler "${C[@]}" --task niah --needle numbers --max-new 24 --resume "$@"; }
if [ "$full" = 1 ]; then
  "$B" eval ppl "${C[@]}" --text data/text/kjv-genesis-exodus.txt --ctx 1k,2k,4k,8k --max-tokens 32k \
    --json "$out/ppl.json" --resume -o md --table-out "$out/ppl.md"
  niah --variant single --ctx 1k:8k:x2 --depths 0,25,50,75,100 --samples 8 --json "$out/ruler-niah-single.json"
  "$B" eval recall "${C[@]}" --tasks data/text/recall-example.jsonl --max-new 24 --json "$out/recall.json" --resume
  for v in multikey multivalue multiquery; do
    niah --variant $v --max-new 64 --ctx 1k:8k:x2 --depths 0,50,100 --samples 4 --json "$out/ruler-niah-$v.json"
  done
  "$B" eval ruler "${C[@]}" --task vt --ctx 1k:8k:x2 --hops 4 --samples 8 --max-new 30 --json "$out/ruler-vt.json" --resume
  "$B" eval ruler "${C[@]}" --task cwe --ctx 1k:8k:x2 --words 10 --samples 8 --max-new 60 --json "$out/ruler-cwe.json" --resume
  exit 0
fi
# The small grid, in the order it was run (most value first).
"$B" eval ppl "${C[@]}" --text data/text/kjv-genesis-exodus.txt --ctx 1k,4k --max-tokens 4k \
  --json "$out/ppl.json" --resume -o md --table-out "$out/ppl.md"
niah --variant single --ctx 1k --depths 0,50,100 --samples 1 --json "$out/ruler-niah-single.json" \
  --save-prompts "$out/ruler-niah-single.prompts.jsonl"
"$B" eval recall "${C[@]}" --tasks data/text/recall-example.jsonl --max-new 24 --json "$out/recall.json" --resume
niah --variant single --ctx 2k --depths 0,50,100 --samples 1 --json "$out/ruler-niah-single.json"
"$B" eval ruler "${C[@]}" --task vt --ctx 1k --hops 4 --samples 1 --max-new 30 --json "$out/ruler-vt.json" --resume
"$B" eval ruler "${C[@]}" --task cwe --ctx 1k --words 10 --samples 1 --max-new 60 --json "$out/ruler-cwe.json" --resume
for v in multikey multivalue multiquery; do
  niah --variant $v --max-new 64 --ctx 1k --depths 50 --samples 1 --json "$out/ruler-niah-$v.json"
done
niah --variant single --ctx 4k --depths 50 --samples 1 --json "$out/ruler-niah-single.json"
niah --variant single --arch transformer,orthros --ctx 8k --depths 50 --samples 1 --json "$out/ruler-niah-single.json"
