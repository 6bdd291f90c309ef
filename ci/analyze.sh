#!/usr/bin/env bash
# Static analysis: clang's analyzer (scan-build) over every C file of the CPU build (the engine, the harness, the
# commands, the evals, the fuzz driver and the tests), built apart in build-analyze/ (gcc compiles, clang analyzes).
# Fails when the analyzer reports anything, the test programs included, with a line a report (file:line: what
# [checker]); the HTML reports, each with the path that leads to it, stay in build-analyze/report/. ci/test.sh runs it.
# What the analyzer cannot see it is told: ci/analyzer-models.h (forced into every file) says what cJSON's
# predicates and lookups compute, and models beside the declarations of orthros_error, orthros_error_prefix,
# orthros_jr_fail and orthros_tp_gather_status that each returns its failure code. A report that is wrong is answered
# in the code (a value read once into a local, a check the analyzer can follow), never by turning a checker off.
# Usage: ci/analyze.sh   (installs clang-14 and clang-tools-14 where missing: ci/setup.sh --analyze)
set -euo pipefail
cd "$(dirname "$0")/.."
ci/setup.sh --analyze
SB=$(command -v scan-build-14 || command -v scan-build || true)
[ -n "$SB" ] || { echo "analyze: scan-build not found after ci/setup.sh --analyze" >&2; exit 2; }
ANALYZER=$(command -v clang-14 || command -v clang)
rm -rf build-analyze
mkdir -p build-analyze
echo "== static analysis (build-analyze/, $("$ANALYZER" --version | head -1)) =="
"$SB" --use-analyzer "$ANALYZER" cmake -S . -B build-analyze -DCMAKE_BUILD_TYPE=Debug -DORTHROS_CUDA=OFF \
    -DCMAKE_C_FLAGS="-include $PWD/ci/analyzer-models.h" >build-analyze/configure.log 2>&1 ||
    { cat build-analyze/configure.log >&2; echo "analyze: configure failed" >&2; exit 2; }
rc=0
"$SB" --use-analyzer "$ANALYZER" -o build-analyze/report \
    cmake --build build-analyze -j"$(nproc)" >build-analyze/build.log 2>&1 || rc=$?
# The analyzer's lines name their checker in brackets (core., unix., deadcode., security., ...): gcc's own warnings
# in the same log are the plain build's business.
grep -E '^[^ ]+:[0-9]+:[0-9]+: warning: .* \[(core|unix|deadcode|security|cplusplus|nullability|optin|valist)\.' \
    build-analyze/build.log | sed "s|^$PWD/||" | sort -u >build-analyze/reports.txt || true
n=$(wc -l <build-analyze/reports.txt)
if [ "$rc" -ne 0 ]; then
  tail -30 build-analyze/build.log >&2
  echo "analyze: the build failed (exit $rc; build-analyze/build.log)" >&2
  exit 1
fi
if [ "$n" -gt 0 ]; then
  cat build-analyze/reports.txt >&2
  echo "analyze: $n report(s); each one's path: build-analyze/report/*/report-*.html" >&2
  exit 1
fi
echo "analyze: no reports"
