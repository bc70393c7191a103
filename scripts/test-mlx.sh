#!/usr/bin/env bash
# Runs MLX's C++ tests (doctest), built by scripts/build-mlx.sh, on MLX's default device: the GPU, i.e. metal2vk's
# Vulkan device (M2V_DEVICE picks one; lavapipe when there is no GPU). Reports pass/fail per test file, the failing
# cases with their first failed check, and ends with `N passed, N failed` (test cases).
#
#   scripts/test-mlx.sh BUILD_DIR [--file NAME.cpp]... [--json FILE] [--timeout SECONDS] [--floor FILE]
#
# --floor FILE: the cases that must pass (cmake/mlx/lavapipe-floor.txt for lavapipe, where kernels that need 32-wide
# simdgroups are refused); the exit status then says whether they all did.
#
#   scripts/test-mlx.sh BUILD_DIR --python [--file test_NAME.py]... [--json FILE] [--floor FILE] ...
#
# --python: MLX's Python tests (python/tests, unittest) against the package of `scripts/build-mlx.sh ... --python`
# (BUILD_DIR/mlx-python), one file at a time: scripts/run_mlx_python_tests.py says more.
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [--file NAME.cpp]... [--json FILE] [--timeout SECONDS] [--floor FILE]" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
shift
if [ "${1:-}" = --python ]; then
  shift
  exec python3 "$root/scripts/run_mlx_python_tests.py" "$build/mlx-python/python" "$@"
fi
[ -x "$build/tests/tests" ] || { echo "$0: $build/tests/tests not found (scripts/build-mlx.sh builds it)" >&2; exit 2; }
# The tests run in their build folder (MLX's tests write files beside them): file arguments become absolute first.
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --floor | --json) args+=("$1" "$(realpath -m "$2")"); shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
cd "$build/tests"
exec python3 "$root/scripts/run_mlx_tests.py" "$build/tests/tests" "${args[@]}"
