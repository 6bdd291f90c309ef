#!/usr/bin/env bash
# The quality grid of a converted SmolLM2-135M (issue 25; convert/README.md) beside its base transformer and the
# controls, into OUTDIR, every file resumable (run it again to finish what a stopped run left):
#   evals/run_converted_grid.sh OUTDIR RUNS
# RUNS is the folder of convert/pipeline.py's jobs (s2-16M/adapter: the converted model; ctl-16M/adapter: the control
# transformer, LoRA-tuned on the same data and steps; s2-B-SUFFIX/adapter: the length study's variants of the first
# budget (pipeline.py --rope-offset-max, --fm-before, --long), run as conv-SUFFIX (16M) or conv-B-SUFFIX; s2lin-16M/adapter: the ablation
# tuned in the linear phase only; s2-4M, s2-1M: the smaller conversion budgets). Set CONV to use another converted model (for example the committed
# data/models/smollm2-135m-orthros, or RUNS/s2-16M-before/adapter), ABLATION for another ablation
# (RUNS/s2lin-16M-before/adapter) and CONTROL for another control (RUNS/ctl-24M/adapter).
#
# The full grid (perplexity on both held-out texts at 1K-8K over 32K tokens; RULER NIAH single / multikey / multivalue
# / multiquery at 1K-8K x 5 depths; variable tracking; common words; the recall file) for: the base as transformer,
# the converted model as orthros (tail 1), as linear, as hybrid (every 4th layer full) and the control as transformer.
# The short grid (both perplexities, NIAH single, the recall file) for the converted model as orthros with tails 16 and 64, the
# length study's variants, the ablation, and the 4M and 1M conversions as orthros and linear. The configurations run as parallel processes
# (JOBS, default 6): quality figures do not depend on timing. Environment: ORTHROS (default build/orthros), DEVICE
# (default cuda), BASE (default the fetched GGUF), ONLY (configuration names to run, comma-separated), SAMPLES (NIAH single samples per cell, default 8); for a quick check
# on a cpu: CTX (RULER lengths, default 1k:8k:x2), PPL_CTX (default 1k,2k,4k,8k), PPL_TOKENS (default 32k), DEPTHS
# (default 0,25,50,75,100). TAILS_FULL=1 gives the converted model's tails 16 and 64 the full grid instead of the
# short one (their files resume: the short grid's perplexity and NIAH single are kept).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: evals/run_converted_grid.sh OUTDIR RUNS}
runs=${2:?usage: evals/run_converted_grid.sh OUTDIR RUNS}
B=${ORTHROS:-build/orthros}
BASE=${BASE:-.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf}
CONV=${CONV:-$runs/s2-16M/adapter}
ABLATION=${ABLATION:-$runs/s2lin-16M/adapter}
CONTROL=${CONTROL:-$runs/ctl-16M/adapter}
case "$BASE$CONV$ABLATION$CONTROL" in *'|'*) echo "grid: BASE, CONV, ABLATION and CONTROL may not hold a '|'" >&2; exit 2 ;; esac
JOBS=${JOBS:-6}
S=${SAMPLES:-8}
CTX=${CTX:-1k:8k:x2}
PPL_CTX=${PPL_CTX:-1k,2k,4k,8k}
PPL_TOKENS=${PPL_TOKENS:-32k}
DEPTHS=${DEPTHS:-0,25,50,75,100}
mkdir -p "$out"
texts=(kjv:data/text/kjv-genesis-exodus.txt python:data/text/python-tutorial.txt)

# One configuration: NAME MODEL ARCHS [TAIL] [short]. Files are OUTDIR/NAME-TASK.json.
config() {
    local name=$1 model=$2 archs=$3 tail=${4:-1} short=${5:-}
    local C=(--model "$model" --device "${DEVICE:-cuda}" --arch "$archs" --tail "$tail" --quiet --resume)
    local log="$out/$name.log" rc=0
    [ -e "$model" ] || { echo "$name: $model is missing" | tee -a "$log"; return 1; }
    for t in "${texts[@]}"; do
        "$B" eval ppl "${C[@]}" --text "${t#*:}" --ctx "$PPL_CTX" --max-tokens "$PPL_TOKENS" --json "$out/$name-ppl-${t%%:*}.json" \
            -o md --table-out "$out/$name-ppl-${t%%:*}.md" >>"$log" 2>&1 || rc=1
    done
    "$B" eval ruler "${C[@]}" --task niah --variant single --needle numbers --max-new 24 --ctx "$CTX" \
        --depths "$DEPTHS" --samples "$S" --json "$out/$name-niah-single.json" >>"$log" 2>&1 || rc=1
    if [ -z "$short" ]; then
        for v in multikey multivalue multiquery; do
            "$B" eval ruler "${C[@]}" --task niah --variant $v --needle numbers --max-new 64 --ctx "$CTX" \
                --depths "$DEPTHS" --samples 4 --json "$out/$name-niah-$v.json" >>"$log" 2>&1 || rc=1
        done
        "$B" eval ruler "${C[@]}" --task vt --ctx "$CTX" --hops 4 --samples 8 --max-new 30 \
            --json "$out/$name-vt.json" >>"$log" 2>&1 || rc=1
        "$B" eval ruler "${C[@]}" --task cwe --ctx "$CTX" --words 10 --samples 8 --max-new 60 \
            --json "$out/$name-cwe.json" >>"$log" 2>&1 || rc=1
    fi
    "$B" eval recall "${C[@]}" --tasks data/text/recall-example.jsonl --max-new 24 \
        --json "$out/$name-recall.json" >>"$log" 2>&1 || rc=1
    echo "$name: rc $rc ($SECONDS s)" | tee -a "$log"
    return $rc
}

# name, model, archs, tail, short: most value first, so that a stopped run has the main comparison.
tails=short
[ "${TAILS_FULL:-0}" = 1 ] && tails=
grid=(
    "base|$BASE|transformer|1|"
    "conv|$CONV|orthros,linear|1|"
    "control|$CONTROL|transformer|1|"
    "conv-hybrid|$CONV|hybrid|1|"
    "conv-tail16|$CONV|orthros|16|$tails"
    "conv-tail64|$CONV|orthros|64|$tails"
    "ablation|$ABLATION|orthros,linear|1|short"
    "conv-4M|$runs/s2-4M/adapter|orthros,linear|1|short"
    "conv-1M|$runs/s2-1M/adapter|orthros,linear|1|short"
)
# The length study's variants (convert/pipeline.py --rope-offset-max, --fm-before, --long: s2-B-SUFFIX for the first
# budget B), each with the short grid after the base, the conversion and the control: those of 16M as conv-SUFFIX,
# those of another budget as conv-B-SUFFIX.
for d in "$runs"/s2-*-*/adapter; do
    [ -d "$d" ] || continue
    v=${d%/adapter}
    v=${v##*/s2-}
    case "$v" in 16M-*) v=${v#16M-} ;; esac
    case "$v" in ''|*[!A-Za-z0-9._-]*) echo "grid: skipped $d (a variant name of letters, digits and ._- only)" >&2; continue ;; esac
    case "$runs" in *'|'*) echo "grid: RUNS holds a '|': the variants are skipped" >&2; break ;; esac
    grid=("${grid[@]:0:3}" "conv-$v|$d|orthros,linear|1|short" "${grid[@]:3}")
done
fail=0
running=0
for g in "${grid[@]}"; do
    IFS='|' read -r name model archs tail short <<<"$g"
    case ",${ONLY:-$name}," in *",$name,"*) ;; *) continue ;; esac
    config "$name" "$model" "$archs" "$tail" "$short" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then
        wait -n || fail=1
        running=$((running - 1))
    fi
done
while [ "$running" -gt 0 ]; do
    wait -n || fail=1
    running=$((running - 1))
done
exit $fail
