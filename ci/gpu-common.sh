# shellcheck shell=bash disable=SC2034
# Sourced by the GPU scripts (ci/gpu.sh, ci/gpu-tp.sh, ci/gpu-text.sh, ci/profile.sh, ci/gpu-decode-profile.sh,
# ci/gpu-step-timeline.sh) as `. "$(dirname "$0")/gpu-common.sh"` once OUT is set: makes OUT (absolute from here
# on), moves to the repository root (ROOT), sets BUILD (ORTHROS_GPU_BUILD, default build-gpu) and ARCHS
# (ORTHROS_CUDA_ARCHS, default 90a), puts cJSON from .deps on the library path when present, and defines `step`,
# which runs one step with its output teed to a log in $OUT and its result kept in the `status` array,
# `memcheck_sections` (ci/gpu.sh's memcheck step), `decode_spec` and `decode_bench`, `run_commit` and `ab_base_tree`
# (below).
# The first argument is the output folder: one that starts with "-" is an option given first (--help among them).
case "$OUT" in
    -*) echo "$(basename "$0"): the first argument is OUTDIR, the output folder, not an option ($OUT); the usage is in" \
            "the comment at the top of $0" >&2
        exit 2 ;;
esac
mkdir -p -- "$OUT" || { echo "cannot create $OUT" >&2; exit 1; }
OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${ORTHROS_GPU_BUILD:-build-gpu}
ARCHS=${ORTHROS_CUDA_ARCHS:-90a}
CJSON=$ROOT/.deps/cjson
if [ -d "$CJSON" ]; then
    export LD_LIBRARY_PATH=$CJSON/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

declare -A status
step() { # step NAME LOGFILE CMD...: runs CMD, tees its output to OUT/LOGFILE, records pass/fail
    local name=$1 log=$2
    shift 2
    echo "=== $name: $*" | tee -a "$OUT/$log"
    local t0=$SECONDS
    "$@" 2>&1 | tee -a "$OUT/$log"
    local rc=${PIPESTATUS[0]}
    status[$name]="rc=$rc $((SECONDS - t0))s"
    return "$rc"
}

# memcheck_sections: compute-sanitizer memcheck over the GPU test program ($TESTBIN) one section at a time
# (ORTHROS_TEST_ONLY; its quick cases, ORTHROS_TEST_QUICK: every kernel still runs), the sections of
# ORTHROS_MEMCHECK_SECTIONS (comma-separated; default all: `test_cuda_ops --sections`, those of the default kernels
# first) within ORTHROS_MEMCHECK_BUDGET seconds in all (default 420). OUTDIR/memcheck.txt: a line a section (its exit
# status and seconds, or "not reached"); OUTDIR/memcheck.log: the sanitizer's output. The step fails where a section
# reports a memory error (the sanitizer's exit 9) or fails its checks; where the budget ends first its status says
# "incomplete" and names the sections cut or not reached (ORTHROS_MEMCHECK_SECTIONS=... runs them in a later run).
memcheck_sections() {
    local budget=${ORTHROS_MEMCHECK_BUDGET:-420} t0=$SECONDS list s left ts rc n=0 clean=0 bad="" cut="" unreached=""
    case "$budget" in "" | *[!0-9]* | ?????*)
        status[memcheck]="refused (ORTHROS_MEMCHECK_BUDGET is not seconds)"; return ;; esac
    if [ -n "${ORTHROS_MEMCHECK_SECTIONS:-}" ]; then
        case "$ORTHROS_MEMCHECK_SECTIONS" in *[!a-z0-9,]*)
            status[memcheck]="refused (ORTHROS_MEMCHECK_SECTIONS: section names, comma-separated)"; return ;; esac
        list=${ORTHROS_MEMCHECK_SECTIONS//,/ }
    else
        local all first="ops head8 decode8 decodebound gemvnorm gemvearly gemv prefill7 linear7 window full linear"
        if ! all=$("$TESTBIN" --sections) || [ -z "$all" ]; then
            status[memcheck]="rc=1 (test_cuda_ops --sections failed)"; return
        fi
        all=" ${all//$'\n'/ } "
        # the sections of the default kernels first (a budget that ends early leaves older versions and opt-in
        # forms), then the rest in the program's order
        list=""
        for s in $first; do case "$all" in *" $s "*) list+=" $s" ;; esac; done
        for s in $all; do case "$list " in *" $s "*) ;; *) list+=" $s" ;; esac; done
    fi
    : >"$OUT/memcheck.txt"
    for s in $list; do
        # (windowpass, the window section's first pass alone, runs within window: only when named)
        case "$s" in *[!a-z0-9]*) continue ;; windowpass) [ -z "${ORTHROS_MEMCHECK_SECTIONS:-}" ] && continue ;; esac
        n=$((n + 1))
        left=$((budget - (SECONDS - t0)))
        if [ "$left" -lt 10 ]; then
            unreached+=" $s"; echo "$s not reached" >>"$OUT/memcheck.txt"; continue
        fi
        ts=$SECONDS
        echo "=== memcheck: section $s (at most $left s)" | tee -a "$OUT/memcheck.log"
        env ORTHROS_TEST_QUICK=1 ORTHROS_TEST_ONLY="$s" timeout -k 10 "$left" compute-sanitizer --tool memcheck \
            --error-exitcode 9 "$TESTBIN" >>"$OUT/memcheck.log" 2>&1
        rc=$?
        echo "$s rc=$rc $((SECONDS - ts))s" | tee -a "$OUT/memcheck.txt"
        case $rc in 0) clean=$((clean + 1)) ;; 124 | 137) cut+=" $s" ;; *) bad+=" $s(rc=$rc)" ;; esac
    done
    local t=$((SECONDS - t0))
    if [ -n "$bad" ]; then
        status[memcheck]="rc=1 ${t}s: failed:$bad; $clean of $n sections clean${cut:+, cut at the budget:$cut}"
        status[memcheck]+="${unreached:+, not reached:$unreached} (OUTDIR/memcheck.txt)"
    elif [ -n "$cut$unreached" ]; then
        status[memcheck]="incomplete ${t}s: $clean of $n sections clean${cut:+, cut at the budget:$cut}"
        status[memcheck]+="${unreached:+, not reached:$unreached}"
    else
        status[memcheck]="rc=0 ${t}s: $clean of $n sections clean"
    fi
}

# decode_spec SPEC: sets model, batch, ctx and name (model-bBATCH-ctx) from a model:batch:ctx argument; anything else
# is refused with a message and status 1 (ci/gpu-decode-profile.sh, ci/gpu-step-timeline.sh)
decode_spec() {
    case "$1" in *[!a-z0-9.:-]*|*:*:*:*) echo "not model:batch:ctx: $1" >&2; return 1 ;; esac
    IFS=: read -r model batch ctx <<<"$1"
    [ -n "$model" ] && [ -n "$batch" ] && [ -n "$ctx" ] || { echo "not model:batch:ctx: $1" >&2; return 1; }
    name="$model-b$batch-$ctx"
}

# decode_bench SPEC [TAG [ENV-ARG ...]]: decode_spec, then `bench` (the orthros bench --phase decode command of that
# shape, an array the caller extends) run once plainly, 64 tokens a sample, through env with the ENV-ARGs (VAR=VALUE,
# -u VAR) where given (OUT/<name>.json, or OUT/<name>-TAG.json with a TAG; its output in the .log beside it); status
# 1, with a message, where the spec is refused or the bench fails (ci/gpu-decode-profile.sh, ci/gpu-pm-sampling.sh,
# ci/gpu-ab.sh)
decode_bench() {
    decode_spec "$1" || return 1
    local f="$OUT/$name${2:+-$2}"
    bench=("$BUILD/orthros" bench --model "preset:$model" --device cuda --arch orthros --phase decode --ctx "$ctx"
        --batch "$batch" --force)
    if ! env "${@:3}" "${bench[@]}" --decode-tokens 64 --reps 5 --max-reps 10 --timeout 10 --json "$f.json" \
        >"$f.log" 2>&1; then
        echo "$1: the bench failed (see $f.log)" >&2
        return 1
    fi
}

# The commit a run measures, for env.txt: ORTHROS_GIT_COMMIT where it is set and hex (what the build stamps into the
# results, CMakeLists.txt: a copy of the tree whose .git lags names its commit so), else git's HEAD.
run_commit() {
    case "${ORTHROS_GIT_COMMIT:-}" in
        "" | *[!0-9a-f]*) git rev-parse HEAD 2>/dev/null || true ;;
        *) echo "$ORTHROS_GIT_COMMIT (ORTHROS_GIT_COMMIT; git's HEAD $(git rev-parse --short HEAD 2>/dev/null))" ;;
    esac
}

. "$ROOT/ci/paths.sh" # plain_relpath and base_dir

# ab_base_tree DIR DEST: the tree of ci/ab-base.sh's base (DIR, inside the repository: its AB-BASE manifest and
# tree/): the working tree copied to DEST (no build folders, .git, .deps, .cache or DIR), DIR's files laid over it
# and the files REF has not removed. Prints REF's short sha. A manifest line that is not "ref SHA", "file PATH" or
# "delete PATH" with a plain relative path, or a file it names that DIR lacks, is refused (status 2) before DEST is
# written.
ab_base_tree() {
    local dir=$1 dest=$2 kind path ref="" n=0
    local -a files=() deletes=()
    [ -f "$dir/AB-BASE" ] || { echo "$dir: no AB-BASE (ci/ab-base.sh REF $dir writes it)" >&2; return 2; }
    while read -r kind path; do
        n=$((n + 1))
        case "$kind:$path" in
            ref:*) case "$path" in *[!0-9a-f]* | "") echo "$dir/AB-BASE:$n: not a sha: '$path'" >&2; return 2 ;; esac
                   ref=$path; continue ;;
            file:* | delete:*) ;;
            *) echo "$dir/AB-BASE:$n: not a manifest line: '$kind'" >&2; return 2 ;;
        esac
        plain_relpath "$path" || { echo "$dir/AB-BASE:$n: not a plain path: '$path'" >&2; return 2; }
        if [ "$kind" = file ]; then
            [ -f "$dir/tree/$path" ] || { echo "$dir: AB-BASE names $path, tree/ lacks it" >&2; return 2; }
            files+=("$path")
        else
            deletes+=("$path")
        fi
    done <"$dir/AB-BASE"
    [ -n "$ref" ] || { echo "$dir/AB-BASE: no ref line" >&2; return 2; }
    rm -rf -- "$dest" && mkdir -p -- "$dest" || return 1
    tar --exclude='./build*' --exclude=./.git --exclude=./.deps --exclude=./.cache --exclude="./$dir" -cf - . |
        tar -xf - -C "$dest" || return 1
    for path in "${deletes[@]}"; do rm -f -- "$dest/$path"; done
    for path in "${files[@]}"; do
        mkdir -p -- "$dest/$(dirname -- "$path")" && cp -- "$dir/tree/$path" "$dest/$path" || return 1
    done
    echo "${ref:0:7}"
}
