#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks (compiler, CMake, cJSON, gnuplot), then configures and builds
# into build/ (the CUDA backend too when nvcc is on the PATH; override with ORTHROS_CUDA=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pkg in gcc cmake make libcjson-dev gnuplot-nox; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ -z "${ORTHROS_CUDA:-}" ]; then
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then ORTHROS_CUDA=ON; else ORTHROS_CUDA=OFF; fi
fi
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DORTHROS_CUDA="$ORTHROS_CUDA" >/dev/null
cmake --build build -j"$(nproc)"
