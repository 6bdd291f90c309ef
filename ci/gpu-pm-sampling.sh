#!/usr/bin/env bash
# Whether the memory idles inside a captured decode step, on a machine with an NVIDIA GPU and Nsight Compute
# (docs/kernels.md, "The step's timeline"): for each shape, orthros bench --phase decode once plainly (its ms a step,
# OUTDIR/<name>.json) and once under ncu with one whole replayed step graph profiled as a unit (--graph-profiling
# graph, the NVTX range "decode graph replay", the caches and clocks left as they run) and its PM sampling section
# collected: the DRAM throughput every ~1.5 us across the step, kernel boundaries included. Then
# bench/kernels/pm_sampling.py dumps every series (OUTDIR/<name>.pm.csv.gz) and summarises the DRAM one
# (OUTDIR/<name>.txt: its mean, the share of the step in bands of % of peak, the stretches below half of it).
# Usage: ci/gpu-pm-sampling.sh OUTDIR [SPEC...]   (run from the repository root after a build in $BUILD, default
#   build-gpu; SPEC: model:batch:ctx, default llama3.2-1b:1:4k llama3.1-8b:1:4k; ORTHROS_PM_INTERVAL: ncu's
#   --pm-sampling-interval, default 1000 (samples 1.5 us apart on an H100); NCU_PYTHON: the folder of Nsight Compute's
#   Python module where bench/kernels/pm_sampling.py does not find it; the environment passes through, so
#   ORTHROS_DECODE_* switches sample those modes; a launch's share of a layer: pm_sampling.py summary --layers, and
#   the MB read in its window with --peak-tbps)
set -u -o pipefail
OUT=${1:?usage: ci/gpu-pm-sampling.sh OUTDIR [model:batch:ctx ...]}
shift
build=${BUILD:-}
. "$(dirname "$0")/gpu-common.sh"
BUILD=${build:-build-gpu}
[ $# -gt 0 ] || set -- llama3.2-1b:1:4k llama3.1-8b:1:4k
interval=${ORTHROS_PM_INTERVAL:-1000}
case "$interval" in '' | *[!0-9]*) echo "ci/gpu-pm-sampling.sh: ORTHROS_PM_INTERVAL must be a whole number (ncu's --pm-sampling-interval)" >&2; exit 2 ;; esac
command -v ncu >/dev/null || { echo "ci/gpu-pm-sampling.sh: no ncu on this machine" >&2; exit 1; }
[ -x "$BUILD/orthros" ] || { echo "ci/gpu-pm-sampling.sh: no $BUILD/orthros (build first)" >&2; exit 1; }
rc=0
for spec in "$@"; do
    decode_bench "$spec" || { rc=1; continue; }
    tmp=$(mktemp -d)
    # the replays after the first few (the capture's own and the warm-up ones), one graph a result
    if ncu --graph-profiling graph --cache-control none --clock-control none --nvtx \
        --nvtx-include "decode graph replay/" --launch-skip 2 --launch-count 2 --section PmSampling \
        --pm-sampling-interval "$interval" -o "$tmp/pm" \
        "${bench[@]}" --decode-tokens 8 --reps 1 --max-reps 1 --timeout 60 --json "$tmp/ncu-bench.json" \
        >>"$OUT/$name.log" 2>&1 &&
        python3 bench/kernels/pm_sampling.py dump "$tmp/pm.ncu-rep" "$tmp/pm.csv" >>"$OUT/$name.log" 2>&1; then
        python3 bench/kernels/pm_sampling.py summary "$tmp/pm.csv" >"$OUT/$name.txt" 2>&1 || rc=1
        gzip -c "$tmp/pm.csv" >"$OUT/$name.pm.csv.gz"
        cat "$OUT/$name.txt"
    else
        echo "$spec: ncu or the dump failed (see $OUT/$name.log)" >&2; rc=1
    fi
    rm -rf "$tmp"
done
exit $rc
