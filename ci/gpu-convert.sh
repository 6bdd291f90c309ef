#!/usr/bin/env bash
# The conversion of SmolLM2-135M for Orthros on a GPU machine (issue 25): the model and the training corpus from
# their pieces when the machine has no network, convert/pipeline.py (attention transfer, LoRA in both phases, the
# control, the ablation, three token budgets; resumable), then the quality grid of the result
# (evals/run_converted_grid.sh; resumable), each within a time budget so that a call fits a 10-minute limit. Run it
# again with the same STATE to go on where it stopped.
# Usage: ci/gpu-convert.sh OUTDIR [--pieces DIR] [--budget S] [--no-grid] [--preflight]
#   --pieces DIR  DIR/bundle.part* (split of a tar holding models/smollm2.xz.part* from ci/fetch-model.sh --split,
#                 corpus/{train.u16.xz,val.u16,manifest.json} from convert/make_data.py, and SHA256SUMS): joined
#                 and checked when the cache lacks the model or the corpus
#   --budget S    seconds for this call (default 540): the pipeline gets what is left minus a margin, the grid the rest
#   --no-grid     stop after the pipeline
#   --preflight   convert/preflight.py first (a minute: cuda against cpu, throughput, the grid's projected time)
# Environment: ORTHROS_GPU_BUILD (default build-gpu), ORTHROS_CUDA_ARCHS (default 90a), STATE (default
# $ORTHROS_GPU_BUILD/convert: the pipeline's runs and the grid's files, kept between calls), CONTROLS (the budgets
# that get a control transformer, default 16M; none for none), BUDGETS (convert/pipeline.py --budgets, default
# 16M,4M,1M: the first one gets the ablation and the variants), NO_ABLATION=1 (--no-ablation), ONLY_JOBS (--only: the
# named jobs alone, comma-separated), the length study's variants of the 16M budget (convert/pipeline.py;
# default none): ROPE_OFFSET_MAX (--rope-offset-max, e.g. 7168), FM_BEFORE=1 (--fm-before), LONG (--long, e.g. 4096),
# VARIANTS (comma-separated --variant SPECs, e.g. L4096-before);
# GRID_ONLY (names of evals/run_converted_grid.sh's configurations to
# run, comma-separated; default all; the base transformer's part runs beside the pipeline only when it is named);
# CONV, ABLATION and CONTROL (evals/run_converted_grid.sh: the adapters its conv*, ablation and control configurations
# run).
# Back in OUTDIR: convert.log, summary.json (the pipeline's per-job tokens, seconds, GPU-minutes, validation),
# convert.tgz (every job's log.json, the converted model's and the control's adapters), grid.tgz (the grid's files).
set -u -o pipefail

OUT=${1:?usage: ci/gpu-convert.sh OUTDIR [--pieces DIR] [--budget S] [--no-grid] [--preflight]}
shift
PIECES= BUDGET=540 GRID=1 PREFLIGHT=0
while [ $# -gt 0 ]; do
    case "$1" in
        --pieces) [ $# -ge 2 ] || { echo "--pieces needs a folder" >&2; exit 2; }; PIECES=$2; shift 2 ;;
        --budget) [ $# -ge 2 ] || { echo "--budget needs seconds" >&2; exit 2; }
            case "$2" in ''|*[!0-9]*) echo "--budget: a whole number of seconds" >&2; exit 2 ;; esac
            BUDGET=$2; shift 2 ;;
        --no-grid) GRID=0; shift ;;
        --preflight) PREFLIGHT=1; shift ;;
        *) echo "ci/gpu-convert.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
. "$(dirname "$0")/gpu-common.sh"
STATE=${STATE:-$BUILD/convert}
mkdir -p "$STATE/runs" "$STATE/grid" build-data/corpus
T0=$SECONDS
left() { echo $((BUDGET - (SECONDS - T0))); }
MODEL=.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf
CORPUS=build-data/corpus

if [ -n "$PIECES" ] && { [ ! -f "$MODEL" ] || [ ! -f "$CORPUS/train.u16.xz" ]; }; then
    stage=$(mktemp -d)
    cat -- "$PIECES"/bundle.part* | tar x -C "$stage" || { echo "gpu-convert: the pieces in $PIECES do not join" >&2; exit 1; }
    (cd "$stage" && sha256sum -c --quiet SHA256SUMS) || { echo "gpu-convert: a piece's sha256 differs" >&2; exit 1; }
    ci/fetch-model.sh --join "$stage/models" >/dev/null || exit 1
    cp -- "$stage"/corpus/train.u16.xz "$stage"/corpus/val.u16 "$stage"/corpus/manifest.json "$CORPUS/"
    rm -rf -- "$stage"
fi
[ -f "$MODEL" ] || { echo "gpu-convert: no model at $MODEL (ci/fetch-model.sh, or --pieces)" >&2; exit 1; }
[ -f "$CORPUS/train.u16.xz" ] || { echo "gpu-convert: no corpus in $CORPUS (convert/make_data.py, or --pieces)" >&2; exit 1; }

build_orthros() {
    [ -x "$BUILD/orthros" ] || step configure build.log cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" -DCJSON_ROOT="$CJSON" || return 1
    step build build.log cmake --build "$BUILD" -j"$(nproc)" --target orthros
}
# The grid's files stop at the deadline (each keeps its finished cells; the next call resumes them).
grid() { # grid SECONDS [ONLY]
    ONLY=${2:-} timeout -s INT -k 20 "$1" env ORTHROS="$BUILD/orthros" evals/run_converted_grid.sh "$STATE/grid" \
        "$STATE/runs"
}

if [ "$PREFLIGHT" = 1 ]; then
    step preflight convert.log python3 convert/preflight.py --model "$MODEL" --data "$CORPUS/train.u16.xz" \
        --json "$OUT/preflight.json"
fi
# The base transformer's part of the grid needs no conversion: it runs beside the pipeline (quality figures do not
# depend on timing; the training shares the GPU with it).
base_pid=
if [ "$GRID" = 1 ] && case ",${GRID_ONLY:-base}," in *,base,*) true ;; *) false ;; esac && build_orthros; then
    grid $(( $(left) - 40 )) base >"$OUT/grid-base.log" 2>&1 &
    base_pid=$!
fi
# The pipeline: exit 0 when every job is done, 3 when it stopped at its budget with jobs left.
status[pipeline]="not run"
variants=()
IFS=, read -ra specs <<<"${VARIANTS:-}"
for v in ${specs[@]+"${specs[@]}"}; do [ -n "$v" ] && variants+=(--variant "$v"); done
if [ "$(left)" -gt 90 ]; then
    step pipeline convert.log env PYTHONUNBUFFERED=1 python3 convert/pipeline.py --model "$MODEL" \
        --data "$CORPUS/train.u16.xz" --runs "$STATE/runs" --controls "${CONTROLS:-16M}" --max-seconds $(( $(left) - 60 )) \
        ${BUDGETS:+--budgets "$BUDGETS"} ${NO_ABLATION:+--no-ablation} ${ONLY_JOBS:+--only "$ONLY_JOBS"} ${variants[@]+"${variants[@]}"} \
        ${ROPE_OFFSET_MAX:+--rope-offset-max "$ROPE_OFFSET_MAX"} ${FM_BEFORE:+--fm-before} ${LONG:+--long "$LONG"} \
        --bundle "$STATE/bundle"
fi
cp -f "$STATE/bundle/summary.json" "$OUT/" 2>/dev/null
# (the names are globbed inside STATE: every job's log, the converted models' and the control's adapters)
(cd "$STATE" && shopt -s nullglob && set -- runs/*/log.json runs/s2-*/adapter runs/s2lin-*/adapter runs/ctl-*/adapter &&
    [ $# -gt 0 ] && tar czf "$OUT/convert.tgz" --ignore-failed-read "$@" 2>/dev/null)
[ -n "$base_pid" ] && { wait "$base_pid"; status[grid_base]="rc=$?"; }
case "${status[pipeline]}" in
    "rc=0 "*)
        if [ "$GRID" = 1 ] && [ "$(left)" -gt 60 ]; then
            step grid grid.log grid $(( $(left) - 30 )) "${GRID_ONLY:-}"
        fi ;;
esac
[ -d "$STATE/grid" ] && tar czf "$OUT/grid.tgz" -C "$STATE" grid
echo
echo "==== summary ($OUT) ===="
for s in preflight build grid_base pipeline grid; do printf '%-10s %s\n' "$s" "${status[$s]:-not run}"; done
grep -h "ALL DONE\|jobs left\|^job " "$OUT/convert.log" 2>/dev/null | tail -15
