#!/usr/bin/env bash
# Builds and runs every test (ctest) on the default Vulkan device (lavapipe when there is no GPU); then MLX's own C++
# tests on MLX's Metal backend over metal2vk, when an MLX checkout is beside the repository
# (../shared/third_party/mlx, or M2V_MLX_ROOT): the cases in cmake/mlx/lavapipe-floor.txt must pass (simdgroups
# emulated on lavapipe); our tests of
# MLX's Python package (cmake/mlx/python/tests); then MLX's
# Python package (`import mlx.core`) and a quick part of MLX's Python tests: the tests of cmake/mlx/python/
# lavapipe-floor.txt in those files must pass (the whole suite: scripts/test-mlx.sh build-mlx --python).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)")

mlx=${M2V_MLX_ROOT:-../shared/third_party/mlx}
if [ -f "$mlx/mlx/version.h" ]; then
  M2V_BUILD=build scripts/build-mlx.sh "$mlx" build-mlx --python
  # MLX's C++ tests with lavapipe's simdgroups emulated (docs/ABI.md, "Subgroups"): MLX's numerics checked here.
  scripts/test-mlx.sh build-mlx --timeout 30 --floor cmake/mlx/lavapipe-floor.txt
  # The Python tests below run with native simdgroups only (M2V_SIMDGROUPS=native: the simd kernels refused on
  # lavapipe): emulated, MLX's GEMMs (simdgroup_matrix) take minutes per call there, beyond CI's time.
  export M2V_SIMDGROUPS=native
  # Ours on MLX's Python package: quantization against MLX's CPU backend, mlx-lm end to end, a runaway custom kernel
  # stopped, CPU/GPU coherence and adopted host arrays (the first two skip, saying why, where the GPU cannot run
  # MLX's kernels: lavapipe's 8-lane subgroups).
  scripts/test-mlx.sh build-mlx --python --tests cmake/mlx/python/tests --file test_quantized_matrix.py \
    --file test_mlx_lm_greedy.py --file test_runaway_kernel.py --file test_host_memory.py --test-timeout 600
  # MLX's unified-memory rules again through the host mirrors a discrete GPU gets (docs/METAL_API.md).
  M2V_HOST_MIRROR=1 scripts/test-mlx.sh build-mlx --python --tests cmake/mlx/python/tests --file test_host_memory.py \
    --test-timeout 300
  quick=()
  for f in array autograd compile constants device double eval graph memory nn ops optimizers threads tree; do
    quick+=(--file "test_$f.py")
  done
  scripts/test-mlx.sh build-mlx --python "${quick[@]}" --test-timeout 120 \
    --floor cmake/mlx/python/lavapipe-floor.txt
else
  echo "SKIP: MLX's C++ tests: no MLX checkout at $mlx (set M2V_MLX_ROOT)"
fi
