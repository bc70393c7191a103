#!/usr/bin/env bash
# Smoke test of a portable archive (scripts/package.sh) in a clean directory, with an empty LD_LIBRARY_PATH:
# no LLVM, clang, z3, libxml2 or ICU among the binaries' libraries; `m2v examples` on the default Vulkan device;
# the Python package imported from PYTHONPATH; a C++ project built against it with find_package(metal2vk).
set -euo pipefail
archive=$(realpath "${1:-$(ls -t "$(dirname "$0")"/../dist/metal2vk-*-linux-x86_64.tar.xz | head -1)}")
src=$(realpath "$(dirname "$0")/..")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xJf "$archive"
root=$(echo "$work"/metal2vk-*)
cd "$work"
run() { env -i PATH=/usr/bin:/bin HOME="$work" LD_LIBRARY_PATH= LP_NATIVE_VECTOR_WIDTH=1024 M2V_CACHE_DIR="$work/cache" "$@"; }

echo "== libraries"
for f in "$root"/bin/* "$root"/lib/libmetal2vk.so.* "$root"/python/metal2vk/*.so; do
  libs=$(run ldd "$f")
  echo "$f:"; echo "$libs" | sed 's/ (0x.*//'
  if echo "$libs" | grep -Ei "llvm|clang|z3|xml2|icu|spirv|not found"; then echo "FAIL: $f"; exit 1; fi
done
echo "== m2v"
run "$root/bin/m2v" --version
run "$root/bin/m2v" examples
echo "== python"
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  run PYTHONPATH="$root/python" /usr/bin/python3 -c '
import numpy as np, metal2vk as m2v
k = m2v.metal_kernel(name="twice", input_names=["x"], output_names=["y"],
                     source="uint i = thread_position_in_grid.x; y[i] = 2.0f * x[i];")
x = np.arange(64, dtype=np.float32)
(y,) = k(inputs=[x], grid=(64, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(64,)], output_dtypes=[np.float32])
assert np.array_equal(y, 2 * x), y
print("python: ok", m2v.compiler_version())'
else
  echo "skipped: no /usr/bin/python3 with numpy"
fi
echo "== find_package(metal2vk)"
run cmake -S "$src/package/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$root" >/dev/null
run cmake --build "$work/consumer" >/dev/null
run "$work/consumer/consumer"
echo "smoke test passed: $archive"
