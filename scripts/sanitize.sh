#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer run (CI): builds build-asan/ with -DM2V_SANITIZE=ON (our code only;
# LLVM, clang and the Vulkan driver are not instrumented) and runs, under the sanitizers, the compiler suite (FileCheck,
# kernels, diagnostics, hostile inputs, the fuzzers' findings replayed), the rewriter tests, a compile of the whole
# corpus, and the runtime and signature-limit tests on the default Vulkan device (lavapipe in CI). Any sanitizer
# report fails the run.
# usage: scripts/sanitize.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}

# -O1: the sanitizers' usual level, and a quicker build than the Release tree's -O3.
cmake -S . -B "$build" -G Ninja -DM2V_SANITIZE=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1" \
  -DCMAKE_C_FLAGS_RELEASE="-O1 -g1" >/dev/null
# Only what the suites below need (not the Python module or the examples runner). A test added under these labels
# needs its executable in this list.
cmake --build "$build" -j "$(nproc)" --target m2v m2v_rewriter_tests m2v_runtime_tests m2v_limits_tests m2v_stream_vs_raw \
  m2v_library_file_tests m2v_deferred_source_tests \
  $(sed -n 's/^m2v_replay(\([a-z_]*\)[ )].*/m2v_replay_\1/p' tests/fuzz/CMakeLists.txt)

# detect_leaks=0: the Vulkan loader, lavapipe and clang's process-lifetime singletons keep allocations until exit
# that LeakSanitizer would report as leaks; what we leak ourselves would be leaks of Vulkan handles, which the
# runtime's RAII and the validation layers (M2V_VALIDATION=1 in the tests) check instead.
# Lavapipe runs its own copy of LLVM JIT code on its threads; ASan does not see into it (not instrumented).
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$build"
ctest --output-on-failure -j "$(nproc)" -L "compiler|frontend|runtime|limits" -E "^mlx\."
# The corpus, compiled (not run: the runtime tests above cover the device side).
./tools/m2v/m2v sweep ../corpus/kernels -j "$(nproc)" --compile-only --report sweep-asan >/dev/null
echo "sanitized suites passed"
