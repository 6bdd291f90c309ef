#!/usr/bin/env bash
# The base side of a build-against-build comparison on a GPU machine (ci/gpu-ab.sh OUTDIR base=DIR): writes DIR
# (default .ab-base, ignored by git) holding REF's version of every source file the working tree changes against REF,
# so that the GPU machine, which gets the working tree but not the repository's history, can rebuild REF:
#   DIR/AB-BASE       "ref <REF's full sha>", then a line "file PATH" for each file laid over the tree (DIR/tree/PATH,
#                     REF's bytes) and "delete PATH" for each file the tree has and REF has not (new, untracked too)
#   DIR/tree/PATH     REF's version of PATH
# Only what a build reads: data/, docs/ and *.md files are left out. Paths other than plain relative ones of letters,
# digits and ._/+- (ci/paths.sh) are refused (exit 2) before DIR is written, and so is a REF that names no commit.
# Carry DIR with the run (a GPU machine copies only the working tree). Usage: ci/ab-base.sh REF [DIR]; run inside the
# repository.
set -u -o pipefail
. "$(dirname "$0")/paths.sh"
REF=${1:-}
DIR=${2:-.ab-base}
case "$REF" in
    "" | -*) echo "usage: ci/ab-base.sh REF [DIR] (REF a commit: the base side of ci/gpu-ab.sh OUTDIR base=DIR)" >&2
             exit 2 ;;
esac
top=$(git rev-parse --show-toplevel 2>/dev/null) || { echo "ci/ab-base.sh: not inside a git repository" >&2; exit 2; }
cd "$top" || exit 2
base_dir "$DIR" || {
    echo "ci/ab-base.sh: DIR must be a folder inside the repository, letters, digits and ._/+- alone: '$DIR'" >&2
    exit 2
}
sha=$(git rev-parse --verify --quiet "$REF^{commit}") || { echo "ci/ab-base.sh: no commit '$REF'" >&2; exit 2; }
[ -z "$(git ls-files -- "$DIR")" ] || { echo "ci/ab-base.sh: $DIR holds tracked files" >&2; exit 2; }
keep=(-- . ':(exclude)data' ':(exclude)docs' ':(exclude)*.md' ":(exclude)$DIR")
files=() deletes=()
while IFS=$'\t' read -r st path; do
    plain_relpath "$path" || { echo "ci/ab-base.sh: a path this script does not copy: '$path'" >&2; exit 2; }
    case "$st" in
        A) deletes+=("$path") ;;     # in the tree, not at REF
        M | D | T) files+=("$path") ;; # at REF: its bytes laid over the tree
        *) echo "ci/ab-base.sh: a change of kind '$st' at $path" >&2; exit 2 ;;
    esac
done < <(git diff --no-renames --name-status "$sha" "${keep[@]}")
while IFS= read -r path; do
    plain_relpath "$path" || { echo "ci/ab-base.sh: a path this script does not copy: '$path'" >&2; exit 2; }
    deletes+=("$path")
done < <(git ls-files --others --exclude-standard "${keep[@]}")
rm -rf -- "$DIR"
mkdir -p -- "$DIR/tree" || exit 1
{
    echo "ref $sha"
    for f in "${files[@]}"; do echo "file $f"; done
    for f in "${deletes[@]}"; do echo "delete $f"; done
} >"$DIR/AB-BASE"
for f in "${files[@]}"; do
    mkdir -p -- "$DIR/tree/$(dirname -- "$f")" || exit 1
    git show "$sha:$f" >"$DIR/tree/$f" || { echo "ci/ab-base.sh: cannot read $f at $sha" >&2; exit 1; }
done
echo "ci/ab-base.sh: $DIR: base $(git rev-parse --short "$sha"), ${#files[@]} file(s) laid over the tree," \
    "${#deletes[@]} removed"
