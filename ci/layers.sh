#!/usr/bin/env bash
# The layer rules of docs/architecture.md, checked from the #include lines of every source file: what each folder
# may include. A ctest test (label cpu). Usage: ci/layers.sh [SOURCE_DIR]
# A quoted include names a header of the project and is checked against the rule of the including file's folder
# (or of the file itself where it has one); an angle include is checked only where a folder must not reach a
# library (cJSON, CUDA). Each violation is one line: FILE: includes "X.h" (FOLDER): RULE. Then the checker checks
# itself on a few files that break the rules, so that it cannot pass by finding nothing.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

folders="base kernels kernels/tests engine engine/tests ranks harness harness/tests bench bench/kernels bench/tests
compare compare/tests plots plots/tests evals evals/tests export export/tests cli fuzz"

# What a folder (or one file) may include: folders (any of their headers) and FOLDER:HEADER (that header alone).
# A folder may always include its own headers.
rule() {
    case "$1" in
    engine/backend_cuda.cu) echo "base kernels" ;;          # the one engine file that sees the kernels
    engine/load.c | engine/model.c) echo "base" ;;            # model.h, the model's internals: these two only
    engine/gguf.c | engine/safetensors.c | engine/json.c | engine/config.c)
        echo "base -engine:model.h -engine:tokenizer.h" ;;    # the checkpoint readers: below the model and tokenizer
    engine/tp.c | engine/tp_nccl.c | engine/tp_world.c | engine/tp_heartbeat.c | engine/tokenizer.c)
        echo "base -engine:model.h" ;;                        # the ranks' transport, the tokenizer: below the model
    base) echo "" ;;
    kernels) echo "base" ;;
    engine) echo "base -engine:model.h" ;;
    ranks) echo "base engine:orthros.h engine:tp_world.h" ;;
    harness) echo "base engine:orthros.h" ;;
    bench | compare | plots | evals | export) echo "base engine:orthros.h harness" ;;
    cli) echo "base engine:orthros.h harness ranks bench:bench.h bench:bench_rows.h compare:compare.h evals:eval.h evals:tables.h plots:plot.h export:export.h" ;;
    bench/kernels) echo "base engine:orthros.h engine:backend.h kernels harness" ;;
    fuzz) echo "base engine harness evals engine/tests:testutil.h" ;;
    engine/tests) echo "base engine fuzz:targets.h" ;;
    kernels/tests) echo "base engine:orthros.h engine:backend.h kernels engine/tests" ;;
    harness/tests) echo "base engine:orthros.h harness engine/tests:testutil.h" ;;
    bench/tests | compare/tests | plots/tests)
        echo "base engine:orthros.h harness engine/tests:testutil.h harness/tests:schema.h" ;;
    export/tests) echo "base engine:orthros.h engine:adapter.h harness engine/tests:testutil.h" ;; # adapter.h: sha256 of a file
    evals/tests) echo "base engine:orthros.h harness evals engine/tests:testutil.h harness/tests:schema.h" ;;
    *) echo "?" ;;
    esac
}

# Calls a file must not make (an extended regular expression), where a circle would otherwise close through a
# header every engine file sees (orthros.h): the transport of the ranks calls no model or session function (the
# rank server above the model does), the checkpoint readers call no tokenizer function.
forbidden_calls() {
    case "$1" in
    engine/tp.c | engine/tp_nccl.c | engine/tp_world.c | engine/tp_heartbeat.c)
        echo '\borthros_(model|session)_[a-z_]+\(|\borthros_(prefill|decode|generate)\(' ;;
    engine/gguf.c | engine/safetensors.c | engine/json.c | engine/config.c) echo '\borthros_tokenizer_[a-z_]+\(' ;;
    *) echo "" ;;
    esac
}

# Libraries a folder must not include (angle includes).
forbidden_libs() {
    case "$1" in
    base) echo "cjson/ cuda cublas nvtx" ;;
    kernels) echo "cjson/" ;;
    ranks) echo "cjson/ cuda cublas" ;;
    *) echo "" ;;
    esac
}

declare -A home
for d in $folders; do
    [ -d "$d" ] || continue
    for h in "$d"/*.h "$d"/*.cuh; do
        [ -e "$h" ] && home[$(basename "$h")]=$d
    done
done

violations=0
report() { echo "$1"; violations=$((violations + 1)); }

# check LABEL FILE: the rules of LABEL's folder (or of LABEL itself) on FILE's #include lines.
check() {
    local label=$1 file=$2 dir allowed line h owner ok tok lib shown
    dir=$(dirname "$label")
    allowed=$(rule "$label")
    [ "$allowed" = "?" ] && allowed=$(rule "$dir")
    if [ "$allowed" = "?" ]; then
        report "$label: its folder $dir has no rule in ci/layers.sh (add one, and to docs/architecture.md)"
        return
    fi
    local calls
    calls=$(forbidden_calls "$label")
    if [ -n "$calls" ] && grep -Eq "$calls" "$file"; then
        report "$label: calls $(grep -Eo "$calls" "$file" | head -1 | tr -d '(') (see forbidden_calls in ci/layers.sh)"
    fi
    while IFS= read -r line; do
        if [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]]; then
            h=${BASH_REMATCH[1]}
            owner=${home[$(basename "$h")]:-}
            if [ -z "$owner" ]; then
                report "$label: includes \"$h\", which is no header of the project's folders"
                continue
            fi
            ok=0 shown=""
            [ "$owner" = "$dir" ] && ok=1
            for tok in $allowed; do
                case "$tok" in
                -*) [ "$tok" = "-$owner:$(basename "$h")" ] && ok=-1 ;;
                *) [ $ok = 0 ] && { [ "$tok" = "$owner" ] || [ "$tok" = "$owner:$(basename "$h")" ]; } && ok=1
                   shown="$shown $tok" ;;
                esac
            done
            if [ $ok = -1 ]; then
                report "$label: includes \"$h\", which it must not (see its rule in ci/layers.sh)"
            elif [ $ok = 0 ]; then
                report "$label: includes \"$h\" ($owner): $dir may include its own headers and${shown:- nothing else}"
            fi
        elif [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\<([^\>]+)\> ]]; then
            h=${BASH_REMATCH[1]}
            for lib in $(forbidden_libs "$dir"); do
                [[ $h == "$lib"* ]] && report "$label: includes <$h>: $dir must not use $lib"
            done
        fi
    done < <(grep -E '^[[:space:]]*#[[:space:]]*include' "$file")
}

files=0
for d in $folders; do
    [ -d "$d" ] || continue
    for f in "$d"/*.c "$d"/*.cu "$d"/*.h "$d"/*.cuh; do
        [ -e "$f" ] || continue
        check "$f" "$f"
        files=$((files + 1))
    done
done
found=$violations
echo "layers: $files files of $(echo $folders | wc -w) folders, $found violation(s)"

# The checker on files that break the rules: each must be reported.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include "backend.h"\n' >"$tmp/a"                     # harness reaching past the public API
printf '#include "orthros.h"\n#include <cjson/cJSON.h>\n' >"$tmp/b" # a kernel using the engine and cJSON
printf '#include "model.h"\n' >"$tmp/c"                       # the transport reaching the model
printf '#include "plot.h"\n' >"$tmp/d"                        # a command including another
printf '#include "nowhere.h"\n' >"$tmp/e"                     # no such header
printf 'int f(void) { return orthros_model_load(0, 0, 0, 0, 0); }\n' >"$tmp/f" # the transport calling the model
violations=0
check harness/selftest.c "$tmp/a" >/dev/null
check kernels/selftest.cu "$tmp/b" >/dev/null
check engine/tp_world.c "$tmp/c" >/dev/null
check bench/selftest.c "$tmp/d" >/dev/null
check evals/selftest.c "$tmp/e" >/dev/null
check engine/tp.c "$tmp/f" >/dev/null
if [ $violations != 7 ]; then
    echo "layers: the checker found $violations of the 7 violations planted in its own test files"
    exit 1
fi
[ $found = 0 ]
