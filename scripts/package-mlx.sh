#!/usr/bin/env bash
# Packs MLX on metal2vk (a build of scripts/build-mlx.sh) for another x86-64 Linux machine with a Vulkan driver:
# MLX's C++ test binary, its examples and bench/mlx_programs relinked against the portable libmetal2vk.so (LLVM
# inside; scripts/package.sh builds it in build-portable/), MLX's mlx.metallib next to them (where MLX looks for it),
# and the shared libraries the CPU backend needs that such a machine may lack (OpenBLAS and its Fortran runtime).
#
#   scripts/package-mlx.sh MLX_BUILD_DIR [OUT.tar.xz]      (default OUT: dist/mlx-metal2vk-linux-x86_64.tar.xz)
#
# In the archive: bin/tests (MLX's doctest suite), MLX's C++ examples (bin/tutorial, bin/linear_regression,
# bin/logistic_regression), bin/mlx_programs, bin/mlx.metallib, lib/*.so*, and python/mlx (below) when asked for.
# Run with `mlx-metal2vk/bin/tests` (rpath $ORIGIN/../lib), or file by file with scripts/run_mlx_tests.py BIN.
#
# M2V_MLX_PYTHON_BUILDS="DIR..." adds MLX's Python package, python/mlx, for each interpreter whose build of
# cmake/mlx/python is listed (scripts/build-mlx.sh --python with M2V_PYTHON, e.g. a Python 3.12 for a machine that
# has PyTorch): `mlx.core` relinked against the portable library, MLX's pure-Python modules and mlx.metallib beside
# it. PYTHONPATH=mlx-metal2vk/python python3 -c "import mlx.core as mx". M2V_MLX_PACKAGE_CPP=0 leaves the C++ binaries
# out (an archive of the Python package alone).
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 MLX_BUILD_DIR [OUT.tar.xz]" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
mlx_build=$(cd "$1" && pwd)
out=${2:-$root/dist/mlx-metal2vk-linux-x86_64.tar.xz}
portable=${M2V_PORTABLE_BUILD:-$root/build-portable}
mlx_src=$(sed -n 's/^MLX_SOURCE_DIR:PATH=//p' "$mlx_build/CMakeCache.txt")
[ -f "$mlx_build/libmlx.a" ] || { echo "$0: $mlx_build/libmlx.a missing (scripts/build-mlx.sh first)" >&2; exit 2; }

if [ ! -f "$portable/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$portable" -G Ninja -DCMAKE_BUILD_TYPE=Release -DM2V_PORTABLE=ON >/dev/null
fi
cmake --build "$portable" -j "${JOBS:-2}" --target metal2vk

stage=$(mktemp -d)/mlx-metal2vk
mkdir -p "$stage/bin" "$stage/lib"
cp "$portable/package/libmetal2vk.so.0" "$stage/lib/"
strip --strip-unneeded "$stage/lib/libmetal2vk.so.0"
# The CPU backend's BLAS and LAPACK (Debian's OpenBLAS) with what it links.
for lib in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0; do
  cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')" "$stage/lib/$lib"
done
cp "$mlx_build/mlx/backend/metal/kernels/mlx.metallib" "$stage/bin/"

cxx=${CXX:-clang++-22}
link() {  # link OUTPUT OBJECTS...: against libmlx.a and the portable libmetal2vk.so
  local output=$1
  shift
  "$cxx" -O3 "$@" -o "$stage/bin/$output" "$mlx_build/libmlx.a" "$mlx_build/mlx/io/libgguflib.a" \
    "$stage/lib/libmetal2vk.so.0" -L"$stage/lib" -l:libopenblas.so.0 -lvulkan -lpthread -ldl \
    -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../lib'  # RPATH, not RUNPATH: OpenBLAS finds gfortran there too
}
if [ "${M2V_MLX_PACKAGE_CPP:-1}" != 0 ]; then  # 0: the Python package only (a smaller archive)
  link tests "$mlx_build"/tests/CMakeFiles/tests.dir/*.o
  for example in tutorial linear_regression logistic_regression; do
    link "$example" "$mlx_build"/examples/cpp/CMakeFiles/$example.dir/*.o
  done
  "$cxx" -O3 -DNDEBUG -std=c++20 -DMLX_STATIC -I"$root/include" -I"$mlx_src" -c "$root/bench/mlx_programs.cpp" \
    -o "$stage/mlx_programs.o"
  link mlx_programs "$stage/mlx_programs.o"
  rm "$stage/mlx_programs.o"
fi

for pybuild in ${M2V_MLX_PYTHON_BUILDS:-}; do
  module=$(cd "$pybuild/python/mlx" && ls core.cpython-*.so)
  mkdir -p "$stage/python/mlx"
  # The pure-Python package from the MLX checkout (the build links to it; the archive needs copies).
  (cd "$mlx_src/python/mlx" && find . -name __pycache__ -prune -o -type f -name '*.py' -print |
    while read -r f; do mkdir -p "$stage/python/mlx/$(dirname "$f")"; cp "$f" "$stage/python/mlx/$f"; done)
  cp "$mlx_build/mlx/backend/metal/kernels/mlx.metallib" "$stage/python/mlx/"
  "$cxx" -shared -O3 "$pybuild"/core/CMakeFiles/core.dir/*.o "$pybuild/core/libnanobind-static.a" -o \
    "$stage/python/mlx/$module" "$mlx_build/libmlx.a" "$mlx_build/mlx/io/libgguflib.a" "$stage/lib/libmetal2vk.so.0" \
    -L"$stage/lib" -l:libopenblas.so.0 -lvulkan -lpthread -ldl -Wl,-s -Wl,--gc-sections \
    -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../../lib'
  echo "python/mlx/$module"
done

mkdir -p "$(dirname "$out")"
tar -C "$(dirname "$stage")" --owner=0 --group=0 -cf - mlx-metal2vk | xz -T2 -6 >"$out"
echo "$out: $(du -m "$out" | cut -f1) MB ($(du -sm "$stage" | cut -f1) MB unpacked)"
rm -rf "$(dirname "$stage")"
