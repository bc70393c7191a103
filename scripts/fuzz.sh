#!/usr/bin/env bash
# Runs one libFuzzer harness (fuzz/fuzz_NAME.cpp) for SECONDS, niced, on one core.
#   scripts/fuzz.sh NAME SECONDS [libFuzzer options...]
# NAME: compile | mlx_spec | npy | reflection | cases. Builds build-fuzz/ (fuzz/CMakeLists.txt, clang-22) on first use.
# The corpus grows in build-fuzz/fuzz-corpus/NAME (seeded from the repository each run); crashes, leaks and timeouts
# land in build-fuzz/fuzz-findings/NAME/ (reproduce: build-fuzz/fuzz_NAME FILE). Findings: docs/FUZZING.md.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/fuzz.sh NAME SECONDS [libFuzzer options]}
seconds=${2:?usage: scripts/fuzz.sh NAME SECONDS [libFuzzer options]}
shift 2
build=${M2V_FUZZ_BUILD:-build-fuzz}
root=$PWD

# The harnesses link the libraries of the normal build tree (build/, g++) and instrument only the code they fuzz.
[ -f build/build.ninja ] || scripts/build.sh
nice cmake --build build --target m2v_compiler m2v_mlx m2v_corpus
if [ ! -f "$build/build.ninja" ]; then
  CC=clang-22 CXX=clang++-22 cmake -S fuzz -B "$build" -G Ninja -DM2V_BUILD="$root/build" >/dev/null
fi
nice cmake --build "$build" --target "fuzz_$name"

corpus=$build/fuzz-corpus/$name
findings=$build/fuzz-findings/$name
mkdir -p "$corpus" "$findings"
seeds=()
extra=()
case $name in
  compile)
    seeds=(tests/compiler/kernels tests/compiler/errors tests/compiler/filecheck corpus/kernels)
    mlx=$root/../shared/third_party/mlx
    [ -d "$mlx" ] || mlx=/work/shared/third_party/mlx
    if [ -d "$mlx" ]; then
      mkdir -p "$build/fuzz-seeds/mlx"
      find "$mlx" -name '*.metal' -size -64k -exec cp -n {} "$build/fuzz-seeds/mlx/" \;
      seeds+=("$build/fuzz-seeds/mlx")
    fi
    extra=(-dict=fuzz/metal.dict -timeout=30 -rss_limit_mb=4096)
    ;;
  mlx_spec) seeds=(fuzz/seeds/mlx_spec) ;;
  npy) seeds=(fuzz/seeds/npy) ;;
  reflection) seeds=(runtime/tests/kernels) ;;
  cases) seeds=(corpus/kernels) ;;
  *) echo "unknown harness '$name'" >&2; exit 2 ;;
esac
existing=()
for s in "${seeds[@]}"; do [ -d "$s" ] && existing+=("$s"); done
# Only files of the right kind seed each harness (the folders mix .metal, .json, .cases, ...).
filtered=$build/fuzz-seeds/$name
mkdir -p "$filtered"
case $name in
  compile) pat='*.metal' ;; mlx_spec|reflection) pat='*.json' ;; npy) pat='*.npy' ;; cases) pat='*.cases' ;;
esac
for s in "${existing[@]}"; do find "$s" -maxdepth 1 -name "$pat" -exec cp -n {} "$filtered/" \; ; done

# allocator_may_return_null: a huge allocation asked for by the input is a std::bad_alloc the code under test handles,
# not a finding; -malloc_limit_mb=0 leaves that limit to the allocator. Leaks are not findings either: clang and LLVM
# keep process-lifetime caches that LeakSanitizer reports.
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}
nice -n 15 "$build/fuzz_$name" -malloc_limit_mb=0 -max_total_time="$seconds" -artifact_prefix="$findings/" -print_final_stats=1 \
  "${extra[@]}" "$@" "$corpus" "$filtered"
