#!/usr/bin/env bash
# ci/ab-base.sh and ci/gpu-common.sh's ab_base_tree in a throwaway repository: the base folder holds REF's bytes of the
# files the tree changed or deleted and names the ones it added (committed or untracked) for removal, docs and data
# left out; the base tree made from it is REF's sources; a REF that is no commit, a folder outside the repository, a
# path with a space, and manifests that are not what ci/ab-base.sh writes are refused (status 2). A ctest test (label
# cpu; no GPU needed). Usage: ci/ab-base-test.sh [SOURCE_DIR]
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
expect() { # DESCRIPTION CONDITION...
    local what=$1
    shift
    if "$@"; then ok "$what"; else bad "$what"; fi
}
repo=$tmp/repo
mkdir -p "$repo/kernels" "$repo/docs" && cd "$repo" || exit 2
git init -q . && git config user.email t@t && git config user.name t || exit 2
echo v1 >kernels/a.cu && echo b >kernels/b.cu && echo doc1 >docs/x.md && echo keep >kernels/k.cu
git add -A && git commit -qm base || exit 2
ref=$(git rev-parse HEAD)
echo v2 >kernels/a.cu && git rm -q kernels/b.cu && echo c >kernels/c.cu && git add kernels/c.cu && echo doc2 >docs/x.md
git commit -qm tree || exit 2
echo d >kernels/d.cu # untracked, not ignored: it travels with the tree
out=$(bash "$root/ci/ab-base.sh" "$ref" 2>&1)
expect "ab-base.sh wrote .ab-base ($out)" [ -f .ab-base/AB-BASE ]
expect "its ref line" grep -qx "ref $ref" .ab-base/AB-BASE
expect "REF's bytes of a changed file" grep -qx v1 .ab-base/tree/kernels/a.cu
expect "REF's bytes of a deleted file" grep -qx b .ab-base/tree/kernels/b.cu
expect "an added file named for removal" grep -qx "delete kernels/c.cu" .ab-base/AB-BASE
expect "an untracked file named for removal" grep -qx "delete kernels/d.cu" .ab-base/AB-BASE
expect "docs left out" bash -c '! grep -q docs .ab-base/AB-BASE'
expect "an unchanged file left out" bash -c '! grep -q k.cu .ab-base/AB-BASE'
# the base tree, as ci/gpu-ab.sh makes it on the GPU machine (gpu-common.sh moves to its own root: back here after)
# shellcheck disable=SC2034 # (gpu-common.sh reads OUT)
OUT=$tmp/out
# shellcheck source=/dev/null
. "$root/ci/gpu-common.sh"
cd "$repo" || exit 2
short=$(ab_base_tree .ab-base "$tmp/base")
expect "ab_base_tree printed REF's short sha ($short)" [ "$short" = "${ref:0:7}" ]
expect "the base tree has REF's a.cu" grep -qx v1 "$tmp/base/kernels/a.cu"
expect "the base tree has REF's b.cu" grep -qx b "$tmp/base/kernels/b.cu"
expect "the base tree lacks the added c.cu and d.cu" \
    bash -c "[ ! -e '$tmp/base/kernels/c.cu' ] && [ ! -e '$tmp/base/kernels/d.cu' ]"
expect "the base tree keeps an unchanged file" grep -qx keep "$tmp/base/kernels/k.cu"
expect "the base tree has no .ab-base or .git" bash -c "[ ! -e '$tmp/base/.ab-base' ] && [ ! -e '$tmp/base/.git' ]"
# refused: no commit, folders outside the repository, a path with a space
refused() { # DESCRIPTION COMMAND...
    local what=$1 rc
    shift
    "$@" >/dev/null 2>&1
    rc=$?
    if [ "$rc" -eq 2 ]; then ok "refused: $what"; else bad "refused: $what (status $rc)"; fi
}
refused "a REF that is no commit" bash "$root/ci/ab-base.sh" nosuch
refused "no REF" bash "$root/ci/ab-base.sh"
refused "an absolute folder" bash "$root/ci/ab-base.sh" "$ref" /tmp/x
refused "a folder above the repository" bash "$root/ci/ab-base.sh" "$ref" ../x
refused "a folder with a shell character" bash "$root/ci/ab-base.sh" "$ref" 'x;y'
refused "the repository's parent" bash "$root/ci/ab-base.sh" "$ref" ..
refused "a folder ending in .." bash "$root/ci/ab-base.sh" "$ref" kernels/..
refused "the repository itself" bash "$root/ci/ab-base.sh" "$ref" .
refused ".git" bash "$root/ci/ab-base.sh" "$ref" .git
expect "the tree still there after them" bash -c '[ -f kernels/a.cu ] && [ -d .git ]'
echo s >"kernels/with space.cu"
refused "a changed path with a space" bash "$root/ci/ab-base.sh" "$ref" .ab-other
expect "nothing written for it" [ ! -e .ab-other ]
rm -f "kernels/with space.cu"
# manifests that are not ci/ab-base.sh's
for line in "ref $ref|run kernels/a.cu" "ref $ref|file ../etc/passwd" "ref $ref|file kernels/none.cu" \
    "ref XYZ" "file kernels/a.cu" "ref $ref|delete /etc/passwd" "ref $ref|delete kernels/.." \
    "ref $ref|file kernels//a.cu"; do
    mkdir -p .ab-bad/tree/kernels && cp kernels/a.cu .ab-bad/tree/kernels/a.cu
    printf '%s\n' "${line//|/$'\n'}" >.ab-bad/AB-BASE
    refused "the manifest '$line'" ab_base_tree .ab-bad "$tmp/bad"
    expect "no tree made for it" [ ! -e "$tmp/bad" ]
    rm -rf .ab-bad
done
exit $fail
