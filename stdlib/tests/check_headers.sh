#!/bin/sh
# Compiles every stdlib/tests/*.cpp (post-rewrite Metal kernels) against stdlib/include the way the compiler does,
# and fails on any error or warning, or on a call to an external function that is neither an LLVM intrinsic
# (@llvm.*) nor a metal2vk intrinsic (@_ZN5__m2v*).
# usage: stdlib/tests/check_headers.sh [clang]   (default clang-22)
set -u
here=$(cd "$(dirname "$0")" && pwd)
inc="$here/../include"
clang=${1:-clang-22}
fail=0
for f in "$here"/*.cpp; do
  name=$(basename "$f")
  ir=$(mktemp) err=$(mktemp)
  "$clang" -x c++ -std=c++17 --target=spir64-unknown-unknown -fno-exceptions -fno-rtti -ffp-contract=on \
    -fno-threadsafe-statics -nostdinc -nostdinc++ -D__METAL_VERSION__=320 -D__METAL__=1 \
    -D__HAVE_NATIVE_BFLOAT__=1 -I "$inc" -O1 -emit-llvm -S "$f" -o "$ir" 2>"$err"
  rc=$?
  if [ $rc -ne 0 ] || [ -s "$err" ]; then
    echo "FAIL $name: compiler diagnostics (rc=$rc)"; head -40 "$err"; fail=1
  else
    bad=$(grep '^declare' "$ir" | grep -v -e '@llvm\.' -e '@_ZN5__m2v')
    if [ -n "$bad" ]; then
      echo "FAIL $name: calls to unexpected external functions:"; echo "$bad"; fail=1
    elif ! grep -q '^define' "$ir"; then
      echo "FAIL $name: no function was emitted"; fail=1
    else
      echo "ok   $name ($(grep -c '^define' "$ir") functions)"
    fi
  fi
  rm -f "$ir" "$err"
done
[ $fail -eq 0 ] && echo "all stdlib header checks passed"
exit $fail
