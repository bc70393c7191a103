#!/usr/bin/env bash
# Builds MLX (an unmodified checkout) with its Metal backend on metal2vk: libmlx with the GPU device on Vulkan, MLX's
# C++ tests and examples. Offline, from the folders beside the MLX checkout (fmt, gguf-tools) and Debian packages
# (scripts/install-deps.sh).
#
#   scripts/build-mlx.sh MLX_SOURCE_DIR BUILD_DIR [--python]
#
# --python: also MLX's Python package (`mlx.core` for M2V_PYTHON, default /usr/bin/python3; cmake/mlx/python) in
# BUILD_DIR/mlx-python: PYTHONPATH=BUILD_DIR/mlx-python/python python3 -c "import mlx.core as mx".
#
# BUILD_DIR/metal2vk: metal2vk's m2v and Metal API (g++, as scripts/build.sh builds it); set M2V_BUILD to use an
# existing metal2vk build tree instead. BUILD_DIR: MLX (clang-22; cmake/mlx/CMakeLists.txt says why).
# M2V_JOBS: parallel compile jobs (default: all cores). Then: scripts/test-mlx.sh BUILD_DIR, or BUILD_DIR/tutorial.
set -euo pipefail
python_package=0
if [ $# -eq 3 ] && [ "$3" = --python ]; then
  python_package=1
  set -- "$1" "$2"
fi
if [ $# -ne 2 ]; then
  echo "usage: $0 MLX_SOURCE_DIR BUILD_DIR [--python]" >&2
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
if [ $python_package = 1 ]; then
  python=${M2V_PYTHON:-/usr/bin/python3}
  echo "== MLX's Python package (mlx.core for $python) in $build/mlx-python"
  if [ ! -f "$build/mlx-python/CMakeCache.txt" ]; then
    CC=clang-22 CXX=clang++-22 cmake -S "$root/cmake/mlx/python" -B "$build/mlx-python" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DMLX_BUILD="$build" -DPython_EXECUTABLE="$python" >/dev/null
  fi
  cmake --build "$build/mlx-python" -j "$jobs" --target mlx_python
fi
echo "built in $(( $(date +%s) - start )) s: $build/libmlx.a, $build/tests/tests, $build/examples/cpp/tutorial"
[ $python_package = 0 ] || echo "mlx.core: PYTHONPATH=$build/mlx-python/python; scripts/test-mlx.sh $build --python"
