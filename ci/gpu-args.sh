#!/usr/bin/env bash
# The GPU scripts given an option where their first argument, OUTDIR, goes (`ci/gpu.sh --help`): each must refuse with
# exit 2 and a message, before touching a GPU, and create no folder named after the option. A ctest test (label
# cpu; no GPU needed). Usage: ci/gpu-args.sh [SOURCE_DIR]
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 2
fail=0
for script in gpu.sh gpu-tp.sh gpu-text.sh gpu-convert.sh gpu-kernel-source.sh gpu-step-timeline.sh \
    gpu-decode-profile.sh gpu-pm-sampling.sh; do
    for arg in --help -x; do
        out=$(timeout 60 bash "$root/ci/$script" "$arg" 2>&1)
        rc=$?
        if [ "$rc" -ne 2 ] || [ -e "$arg" ] || ! printf '%s' "$out" | grep -q "not an option"; then
            echo "FAIL ci/$script $arg: exit $rc, $(ls -A | tr '\n' ' ')folder(s) here; it said: $out"
            fail=1
        else
            echo "ok   ci/$script $arg: refused (exit 2)"
        fi
    done
done
exit $fail
