#!/usr/bin/env bash
# The full test suite: builds (ci/setup.sh), runs every ctest test (GPU tests skip themselves without a GPU),
# then rebuilds the CPU engine under AddressSanitizer + UndefinedBehaviorSanitizer and runs the suite again, then
# fuzzes the input readers there for a bounded time (fuzz/README.md; ORTHROS_FUZZ_SECONDS, default 45), then runs
# clang's static analyzer over the C code (ci/analyze.sh: no report).
set -euo pipefail
cd "$(dirname "$0")/.."
# The CI builds treat warnings as errors (ORTHROS_WERROR; the first command of the README does not).
export ORTHROS_WERROR=ON
ci/setup.sh
echo "== the GGUF model of the text tests (ci/fetch-model.sh) =="
# Without it those tests skip with a message, except under CI=true, where they fail.
ci/fetch-model.sh || echo "test: the model could not be fetched; its tests skip here (and fail under CI=true)" >&2
echo "== test suite (build/) =="
(cd build && ctest --output-on-failure -j"$(nproc)")
echo "== test suite under ASan + UBSan (build-asan/, cpu backend) =="
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DORTHROS_SANITIZE=ON -DORTHROS_CUDA=OFF \
    -DORTHROS_WERROR=ON >/dev/null
cmake --build build-asan -j"$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The tests of the real model (label model) run in the plain pass only: under ASan they take ten minutes.
(cd build-asan && ctest --output-on-failure -j"$(nproc)" -L cpu -LE model)
echo "== fuzzing the input readers under ASan + UBSan (build-asan/fuzz/orthros_fuzz, seed 1) =="
build-asan/fuzz/orthros_fuzz --seconds "${ORTHROS_FUZZ_SECONDS:-45}" --seed 1 --crash-dir build-asan
ci/analyze.sh
