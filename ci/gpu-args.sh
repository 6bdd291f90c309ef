#!/usr/bin/env bash
# The GPU scripts given an option where their first argument, OUTDIR, goes (`ci/gpu.sh --help`): each must refuse with
# exit 2 and a message, before touching a GPU, and create no folder named after the option; and ci/gpu-ab.sh given a
# switch that is not ORTHROS_NAME=NUMBER nor base=DIR of ci/ab-base.sh, or a round count other than 4 or 8, refused
# before its build. A ctest test (label cpu; no GPU needed).
# Usage: ci/gpu-args.sh [SOURCE_DIR]
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 2
fail=0
for script in gpu.sh gpu-tp.sh gpu-text.sh gpu-convert.sh gpu-kernel-source.sh gpu-step-timeline.sh \
    gpu-decode-profile.sh gpu-pm-sampling.sh gpu-ab.sh; do
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
# ci/gpu-ab.sh refuses (exit 2, before its build) a switch that is not an ORTHROS_ name and a number, a base=DIR
# that is not a folder inside the repository holding ci/ab-base.sh's AB-BASE, and ORTHROS_AB_ROUNDS other than 4 or 8
ab_refused() { # ROUNDS ARG
    local out rc
    out=$(ORTHROS_AB_ROUNDS=$1 timeout 60 bash "$root/ci/gpu-ab.sh" "$tmp/ab" "$2" 2>&1)
    rc=$?
    if [ "$rc" -ne 2 ] || [ -e "$tmp/ab/build.log" ] || [ -e "$tmp/ab/build-base.log" ]; then
        echo "FAIL ci/gpu-ab.sh OUT '$2' (ORTHROS_AB_ROUNDS=$1): exit $rc; it said: $out"
        fail=1
    else
        echo "ok   ci/gpu-ab.sh OUT '$2' (ORTHROS_AB_ROUNDS=$1): refused (exit 2)"
    fi
}
for sw in "" PATH=1 ORTHROS_X=1x ORTHROS_x=1 "ORTHROS_X=1;true" ORTHROS_X=12345678901 base= base=/tmp base=../x \
    base=a/../b base=.. base=kernels/.. base=. "base=x;y" base=.git base=.git/x base=no-such-folder; do
    ab_refused 4 "$sw"
done
ab_refused 5 ORTHROS_X=1
exit $fail
