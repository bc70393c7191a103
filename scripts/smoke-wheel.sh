#!/usr/bin/env bash
# `pip wheel .` with Debian's python3 (offline, no build isolation), installed into a fresh virtual environment
# (system site packages for numpy); the package runs a kernel from outside the source tree.
set -euo pipefail
src=$(realpath "$(dirname "$0")/..")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$src"
/usr/bin/python3 -m pip wheel --no-build-isolation --no-deps -q -w "$work/wheels" .
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install --no-deps -q "$work"/wheels/metal2vk-*.whl
cd "$work"
LP_NATIVE_VECTOR_WIDTH=1024 M2V_CACHE_DIR="$work/cache" "$work/venv/bin/python" -c '
import numpy as np, metal2vk as m2v
assert m2v.__file__.startswith("'"$work"'/venv/"), m2v.__file__
k = m2v.metal_kernel(name="addone", input_names=["x"], output_names=["y"],
                     source="uint i = thread_position_in_grid.x; y[i] = x[i] + 1;")
x = np.arange(100, dtype=np.int32)
(y,) = k(inputs=[x], grid=(100, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(100,)], output_dtypes=[np.int32])
assert np.array_equal(y, x + 1), y
print("wheel: ok", m2v.__file__)'
ls "$work"/wheels
