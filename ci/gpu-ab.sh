#!/usr/bin/env bash
# One decode switch, or one build, against the default in the order a b b a:
#   ci/gpu-ab.sh OUTDIR VAR=VALUE [model:batch:ctx ...]   a: the tree with VAR unset, b: with VAR=VALUE
#   ci/gpu-ab.sh OUTDIR base=DIR [model:batch:ctx ...]    a: the base build (ci/ab-base.sh REF DIR, made beside the
#                                                         repository and carried with the run), b: the tree as it is
# builds the tree (BUILD, target orthros; with base=DIR also DIR's base tree, BUILD-base/src built in BUILD-base/build),
# then runs `orthros bench --phase decode` of each shape (default: the 1B shape at batch 1 and 4K and 128K keys, the
# 8B shape at batch 1 and 4K) in rounds a1 b1 b2 a2 (ORTHROS_AB_ROUNDS=8: then a3 b3 b4 a4 too), 64 tokens a sample
# (OUT/<model>-b<batch>-<ctx>-<round>.json and .log), and writes OUT/ab.txt (bench/kernels/decode_ab.py: each shape's
# medians, b against a and each side's own spread, so that a difference inside the rounds' spread is not read as a
# gain; the kernels line of each side, which names the switch where the backend took it). VAR is one of the backend's
# ORTHROS_ switches and VALUE a number (at most 10 digits), DIR a folder inside the repository that ci/ab-base.sh
# wrote; anything else is refused before the build. Exit 0 when every round ran.
set -u -o pipefail
OUT=${1:?usage: ci/gpu-ab.sh OUTDIR VAR=VALUE|base=DIR [model:batch:ctx ...]}
shift
. "$(dirname "$0")/gpu-common.sh"
SW=${1:-}
VAR="" VAL="" BASE_DIR=""
case "$SW" in
    ORTHROS_*=*)
        VAR=${SW%%=*} VAL=${SW#*=}
        case "$VAR" in *[!A-Z0-9_]*) echo "ci/gpu-ab.sh: not a switch's name: '$VAR'" >&2; exit 2 ;; esac
        case "$VAL" in
            "" | *[!0-9]* | ???????????*)
                echo "ci/gpu-ab.sh: $VAR's value is not a number of at most 10 digits: '$VAL'" >&2; exit 2 ;;
        esac
        ;;
    base=*)
        BASE_DIR=${SW#base=}
        base_dir "$BASE_DIR" ||
            { echo "ci/gpu-ab.sh: base=DIR, a folder inside the repository (ci/ab-base.sh): '$BASE_DIR'" >&2; exit 2; }
        [ -f "$BASE_DIR/AB-BASE" ] || { echo "ci/gpu-ab.sh: $BASE_DIR: no AB-BASE (ci/ab-base.sh REF $BASE_DIR)" >&2
                                        exit 2; }
        ;;
    *) echo "ci/gpu-ab.sh: the second argument is VAR=VALUE, a switch of the backend (ORTHROS_...=N), or base=DIR:" \
            "'$SW'" >&2
       exit 2 ;;
esac
case "${ORTHROS_AB_ROUNDS:-4}" in
    4) ROUNDS=(a1 b1 b2 a2) ;;
    8) ROUNDS=(a1 b1 b2 a2 a3 b3 b4 a4) ;;
    *) echo "ci/gpu-ab.sh: ORTHROS_AB_ROUNDS is 4 or 8: '${ORTHROS_AB_ROUNDS}'" >&2; exit 2 ;;
esac
shift
[ $# -gt 0 ] || set -- llama3.2-1b:1:4k llama3.2-1b:1:128k llama3.1-8b:1:4k
for spec in "$@"; do decode_spec "$spec" || exit 2; done
configure_build() { # SRC BUILDDIR LOG
    { cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" -DCJSON_ROOT="$CJSON" \
        && cmake --build "$2" -j"$(nproc)" --target orthros; } >"$3" 2>&1
}
TREE_BUILD=$BUILD BASE_BUILD=$BUILD LABEL="$VAR=$VAL"
if [ -n "$BASE_DIR" ]; then
    BASE_BUILD=$BUILD-base/build
    ref=$(ab_base_tree "$BASE_DIR" "$BUILD-base/src") || exit 2
    LABEL="base=$ref"
    # the base's results name its commit, not the tree's (CMakeLists.txt stamps ORTHROS_GIT_COMMIT)
    (export ORTHROS_GIT_COMMIT=$ref; configure_build "$BUILD-base/src" "$BASE_BUILD" "$OUT/build-base.log") ||
        { echo "ci/gpu-ab.sh: the base's build failed (see $OUT/build-base.log)" >&2; exit 1; }
fi
configure_build . "$BUILD" "$OUT/build.log" ||
    { echo "ci/gpu-ab.sh: the build failed (see $OUT/build.log)" >&2; exit 1; }
rc=0
for round in "${ROUNDS[@]}"; do
    envs=()
    if [ -n "$VAR" ]; then
        case $round in a*) envs=(-u "$VAR") ;; *) envs=("$VAR=$VAL") ;; esac
    fi
    case $round in a*) BUILD=$BASE_BUILD ;; *) BUILD=$TREE_BUILD ;; esac # decode_bench runs $BUILD/orthros
    for spec in "$@"; do
        decode_spec "$spec"
        rm -f -- "$OUT/$name-$round.json" # a failed round leaves no file of an earlier run for the table
        decode_bench "$spec" "$round" "${envs[@]}" || { rc=1; continue; }
        echo "$round $spec: $(grep -m1 'a step against' "$OUT/$name-$round.log")"
    done
done
BUILD=$TREE_BUILD
python3 bench/kernels/decode_ab.py "$OUT" "$LABEL" | tee "$OUT/ab.txt" || rc=1
exit $rc
