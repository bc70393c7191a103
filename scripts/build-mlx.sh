#!/usr/bin/env bash
# Builds MLX (an unmodified checkout) with its Metal backend on metal2vk: libmlx with the GPU device on Vulkan, MLX's
# C++ tests and examples. Offline, from the folders beside the MLX checkout (fmt, gguf-tools) and Debian packages
# (scripts/install-deps.sh).
#
#   scripts/build-mlx.sh MLX_SOURCE_DIR BUILD_DIR
#
# BUILD_DIR/metal2vk: metal2vk's m2v and Metal API (g++, as scripts/build.sh builds it); set M2V_BUILD to use an
# existing metal2vk build tree instead. BUILD_DIR: MLX (clang-22; cmake/mlx/CMakeLists.txt says why).
# M2V_JOBS: parallel compile jobs (default: all cores). Then: scripts/test-mlx.sh BUILD_DIR, or BUILD_DIR/tutorial.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 MLX_SOURCE_DIR BUILD_DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
mlx_src=$(cd "$1" && pwd)
mkdir -p "$2"
build=$(cd "$2" && pwd)
m2v_build=${M2V_BUILD:-$build/metal2vk}
jobs=${M2V_JOBS:-$(nproc)}
[ -f "$mlx_src/mlx/version.h" ] || { echo "$0: $mlx_src is not an MLX checkout (no mlx/version.h)" >&2; exit 2; }

# ccache keys on paths relative to the folder above the repository: a clone elsewhere, with the MLX checkout at the
# same place beside it, reuses the objects of an earlier build.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$root")}

start=$(date +%s)
if [ ! -f "$m2v_build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$m2v_build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
echo "== metal2vk (m2v, Metal API) in $m2v_build"
cmake --build "$m2v_build" -j "$jobs" --target m2v m2v_metal

echo "== MLX ($mlx_src) in $build"
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang-22 CXX=clang++-22 cmake -S "$root/cmake/mlx" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DMLX_SOURCE_DIR="$mlx_src" -DM2V_BUILD="$m2v_build" >/dev/null
fi
cmake --build "$build" -j "$jobs" --target mlx tests tutorial linear_regression logistic_regression
echo "built in $(( $(date +%s) - start )) s: $build/libmlx.a, $build/tests/tests, $build/examples/cpp/tutorial"
