#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks (compiler, CMake, cJSON, gnuplot), then configures and builds
# into build/ (the CUDA backend too when nvcc is on the PATH; override with ORTHROS_CUDA=OFF; ORTHROS_WERROR=ON makes
# warnings errors, as ci/test.sh does).
# `ci/setup.sh --fuzz` instead installs clang-14 with libFuzzer (libclang-rt-14-dev) and its OpenMP, and builds
# the libFuzzer harness into build-fuzz/ (fuzz/README.md); the default build never needs clang.
# `ci/setup.sh --analyze` only installs what ci/analyze.sh needs (clang-14 and its scan-build, clang-tools-14).
set -euo pipefail
cd "$(dirname "$0")/.."

fuzz=0 analyze=0
[ "${1:-}" = "--fuzz" ] && fuzz=1
[ "${1:-}" = "--analyze" ] && analyze=1
pkgs=(gcc cmake make libcjson-dev gnuplot-nox)
[ "$fuzz" = 1 ] && pkgs=(cmake make libcjson-dev clang-14 libclang-rt-14-dev libomp-14-dev)
[ "$analyze" = 1 ] && pkgs=(gcc cmake make libcjson-dev clang-14 clang-tools-14)
need=()
for pkg in "${pkgs[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
[ "$analyze" = 1 ] && exit 0
if [ "$fuzz" = 1 ]; then
  CC=clang-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DORTHROS_CUDA=OFF -DORTHROS_LIBFUZZER=ON >/dev/null
  cmake --build build-fuzz -j"$(nproc)" --target orthros_libfuzzer orthros_fuzz
  exit 0
fi
if [ -z "${ORTHROS_CUDA:-}" ]; then
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then ORTHROS_CUDA=ON; else ORTHROS_CUDA=OFF; fi
fi
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DORTHROS_CUDA="$ORTHROS_CUDA" \
    -DORTHROS_WERROR="${ORTHROS_WERROR:-OFF}" >/dev/null
cmake --build build -j"$(nproc)"
