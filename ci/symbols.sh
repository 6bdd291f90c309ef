#!/usr/bin/env bash
# Every symbol the project's libraries and programs export carries the orthros_ prefix (the house rule; everything
# else is static). A ctest test (label cpu). Usage: ci/symbols.sh BUILD_DIR TARGET...
# The object files of each target (BUILD_DIR/**/CMakeFiles/TARGET.dir) are read with nm; C++ names (the kernels)
# are demangled first. Not ours, so not checked: main, compiler and runtime symbols (__*, DW.ref.*), the inline
# implementation NVTX's headers put in every file that includes them (nvtx*, InitializeInjectionNvtx*) and
# libFuzzer's entry points (LLVMFuzzer*).
set -u
build=${1:?usage: ci/symbols.sh BUILD_DIR TARGET...}
shift
bad=0 objs=0
for t in "$@"; do
    dirs=$(find "$build" -type d -name "$t.dir" -path "*CMakeFiles*")
    [ -n "$dirs" ] || { echo "symbols: no objects of target $t under $build"; bad=1; continue; }
    while IFS= read -r o; do
        objs=$((objs + 1))
        while IFS= read -r sym; do
            case "$sym" in
            orthros_* | main | __* | DW.ref.* | nvtx* | InitializeInjectionNvtx* | LLVMFuzzer*) ;;
            *) echo "symbols: ${o#"$build"/}: exports $sym without the orthros_ prefix"; bad=1 ;;
            esac
        done < <(nm -g --defined-only -C "$o" |
                 awk '$2 ~ /^[A-Z]$/ && $2 != "U" { $1 = ""; $2 = ""; sub(/^ +/, ""); print }' | sed 's/(.*//')
    done < <(find $dirs -name '*.o')
done
echo "symbols: $objs object files of $# targets"
exit $bad
