# Sourced by the GPU scripts (ci/gpu.sh, ci/gpu-tp.sh): cJSON from .deps when present, and `step`, which runs one
# step with its output teed to a log in $OUT and its result kept in the `status` array.
# Needs ROOT and OUT set by the caller.
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
