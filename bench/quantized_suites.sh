#!/bin/bash
# MLX's test_quantized.py, cmake/mlx/python/tests' quantization matrix and mlx-lm greedy tests on a machine with a GPU,
# against an archive of scripts/package-mlx.sh (python/mlx for this machine's Python): each test method in its own
# process, 12 at a time, one kernel cache; results in OUT (bench/mlx-quantized-aot-h200.md).
#
#   bench/quantized_suites.sh ARCHIVE.tar.xz MLX_PYTHON_TESTS_DIR MLX_LM_DIR OUT [PYTHON]
set -u
archive=$1 mlx_tests=$(realpath "$2") mlx_lm=$(realpath "$3") out=$(realpath -m "$4") py=${5:-python3}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out" /tmp/m2v-quantized-suites
tar xJf "$archive" -C /tmp/m2v-quantized-suites
export PYTHONPATH=/tmp/m2v-quantized-suites/mlx-metal2vk/python M2V_MLX_LM=$mlx_lm
export M2V_CACHE_DIR=${M2V_CACHE_DIR:-/tmp/m2v-quantized-suites/cache}
date -u
(cd "$root/cmake/mlx/python/tests" && timeout 470 "$py" -m unittest -v test_mlx_lm_greedy >"$out/greedy.log" 2>&1
 echo "greedy rc=$?" >>"$out/greedy.log") &
each_test() {  # DIR MODULE CLASS PREFIX: one process per test method
  (cd "$1" && "$py" -c "import unittest, $2 as m; print('\n'.join(unittest.TestLoader().getTestCaseNames(m.$3)))") |
    xargs -P 12 -I{} sh -c "cd '$1' && timeout 440 '$py' -m unittest $2.$3.{} >'$out/$4_{}.log' 2>&1; \
      echo \"{} rc=\$?\" >>'$out/$4_rc.txt'"
}
each_test "$root/cmake/mlx/python/tests" test_quantized_matrix QuantizedMatrix matrix &
each_test "$mlx_tests" test_quantized TestQuantized mlx_test_quantized &
wait
date -u
for f in "$out"/*_rc.txt; do echo "$(basename "$f"): $(awk '{print $2}' "$f" | sort | uniq -c | tr '\n' ' ')"; done
tail -3 "$out/greedy.log"
