#!/usr/bin/env bash
# Smoke test of a portable archive (scripts/package.sh) in a clean directory, with an empty LD_LIBRARY_PATH:
# no LLVM, clang, z3, libxml2 or ICU among the binaries' libraries; `m2v examples` on the default Vulkan device;
# the Python package imported from PYTHONPATH; a C++ project built against it with find_package(metal2vk).
# As root (CI), it runs in a private mount namespace where LLVM 22 and clang 22 are hidden (/usr/lib/llvm-22 and
# Debian's libLLVM/libclang-cpp 22): nothing of the build machine's LLVM can be used, even by accident.
set -euo pipefail
archive=$(realpath "${1:-$(ls -t "$(dirname "$0")"/../dist/metal2vk-*-linux-x86_64.tar.xz | head -1)}")
if [ -z "${M2V_SMOKE_NS:-}" ] && [ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null; then
  exec env M2V_SMOKE_NS=1 unshare -m --propagation private "$0" "$archive"
fi
if [ -n "${M2V_SMOKE_NS:-}" ]; then
  [ -d /usr/lib/llvm-22 ] && mount -t tmpfs none /usr/lib/llvm-22
  for f in /usr/lib/x86_64-linux-gnu/libLLVM.so.22* /usr/lib/x86_64-linux-gnu/libclang-cpp.so.22*; do
    [ -f "$f" ] && mount --bind /dev/null "$f"
  done
  echo "(LLVM 22 and clang 22 of the build machine hidden)"
fi
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
echo "== m2v review (clang's headers from the archive: no recovered parse errors)"
mkdir -p "$work/host"
printf '#include <stddef.h>\n#include <vector>\nvoid sync();\nsize_t f(std::vector<float>& v) { sync(); return v.size(); }\n' \
  >"$work/host/backend.cpp"
run "$root/bin/m2v" review --root "$work/host" backend.cpp --json >"$work/review.json"
grep -q '"recovered_errors": 0' "$work/review.json" || { echo "FAIL: m2v review:"; cat "$work/review.json"; exit 1; }
echo "review: ok"
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
