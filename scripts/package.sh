#!/usr/bin/env bash
# Builds the portable configuration (M2V_PORTABLE=ON, into build-portable/) and packs
# dist/metal2vk-<version>-linux-x86_64.tar.xz: bin/m2v, bin/m2v-sweep-run, lib/libmetal2vk.so.0 with its CMake
# package config, include/, python/metal2vk/, examples/, docs/ (layout: package/CMakeLists.txt).
# Static linking is memory-heavy: JOBS (default 2) parallel jobs; BUILD_DIR overrides the build directory.
# The Python extension is built for /usr/bin/python3; M2V_EXTRA_PYTHONS="PY..." adds one for each interpreter listed
# (it needs that interpreter's headers), e.g. M2V_EXTRA_PYTHONS=~/.pyenv/versions/3.12.1/bin/python3.12.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-portable}
jobs=${JOBS:-2}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DM2V_PORTABLE=ON >/dev/null
cmake --build "$build" -j "$jobs" --target m2v m2v-sweep-run metal2vk m2v_python m2v_python_files
version=$(sed -n 's/^project(metal2vk VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
name=metal2vk-$version-linux-x86_64
stage=$build/stage
rm -rf "$stage" && mkdir -p "$stage" dist
cmake --install "$build" --prefix "$stage/$name" --strip >/dev/null
for py in ${M2V_EXTRA_PYTHONS:-}; do
  pybuild=$build-$(basename "$py")
  cmake -S . -B "$pybuild" -G Ninja -DCMAKE_BUILD_TYPE=Release -DM2V_PORTABLE=ON -DM2V_PYTHON="$py" >/dev/null
  cmake --build "$pybuild" -j "$jobs" --target m2v_python
  cmake --install "$pybuild" --prefix "$stage/$name" --strip --component python >/dev/null
done
# A dictionary as large as the archive: bin/m2v and lib/libmetal2vk.so share most of their code (LLVM, clang), so
# the second compresses against the first (22 MB instead of 35 MB; unpacking needs 160 MiB of memory).
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner -cf - "$name" |
  xz --lzma2=preset=9,dict=160MiB -T1 >"dist/$name.tar.xz"
echo "dist/$name.tar.xz: $(du -m "dist/$name.tar.xz" | cut -f1) MB ($(du -sm "$stage/$name" | cut -f1) MB unpacked)"
