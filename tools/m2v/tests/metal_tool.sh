#!/bin/sh
# `m2v metal` / `m2v metallib` as MLX's build calls Apple's tools: -E -H lists the included headers (ours left out)
# in include order with their depth; -c makes a library file with every entry point (instantiations kept as source,
# metal/tests compiles them); library files merge, and an
# entry point defined twice, a foreign file or a missing input is an error that names it.
m2v="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$dir/inc/sub"
cat > "$dir/inc/sub/inner.h" <<'H'
#pragma once
#define INNER 1
H
cat > "$dir/inc/outer.h" <<'H'
#pragma once
#include <metal_stdlib>
#include "sub/inner.h"
H
cat > "$dir/inc/only_jit.h" <<'H'
#define ONLY_JIT 1
H
cat > "$dir/a.metal" <<'M'
#include "outer.h"
#ifdef WITH_JIT
#include "only_jit.h"
#endif
using namespace metal;
kernel void twice(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] *= 2.0f * INNER; }
template <typename T>
[[kernel]] void fill(device T* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = T(i); }
template [[host_name("fill_float")]] [[kernel]] void fill<float>(device float*, uint);
template [[host_name("fill_int")]] [[kernel]] void fill<int>(device int*, uint);
M
cat > "$dir/b.metal" <<'M'
kernel void other(device uint* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = i; }
M

# -E -H: stderr holds the header list only; the preprocessed text goes to stdout.
"$m2v" metal -x metal -I"$dir/inc" -DWITH_JIT -E -P -CC -C -H "$dir/a.metal" -w 2>"$dir/headers" >"$dir/pre" ||
  fail "metal -E exited $?: $(cat "$dir/headers")"
expected=". $dir/inc/outer.h
.. $dir/inc/sub/inner.h
. $dir/inc/only_jit.h"
[ "$(cat "$dir/headers")" = "$expected" ] || fail "header list: $(cat "$dir/headers")"
grep -q "kernel void twice" "$dir/pre" || fail "no preprocessed text on stdout"
"$m2v" metal -x metal -I"$dir/inc" -E -H "$dir/a.metal" 2>&1 >/dev/null | grep -q only_jit && fail "-D not honoured"
"$m2v" metal -x metal -E -H "$dir/a.metal" >/dev/null 2>"$dir/err" && fail "a missing header should fail -E"
grep -q "outer.h" "$dir/err" || fail "missing header not named: $(cat "$dir/err")"

# -c: every entry point into a library file; then merge.
"$m2v" metal -x metal -Wall -fno-fast-math -mmacosx-version-min=14.0 -c "$dir/a.metal" -I"$dir/inc" -o "$dir/a.air" ||
  fail "metal -c a.metal"
"$m2v" metal -x metal -c "$dir/b.metal" -o "$dir/b.air" || fail "metal -c b.metal"
"$m2v" metal "$dir/a.air" "$dir/b.air" -o "$dir/all.metallib" || fail "metal link"
"$m2v" metallib "$dir/a.air" "$dir/b.air" -o "$dir/all2.metallib" || fail "metallib"
cmp -s "$dir/all.metallib" "$dir/all2.metallib" || fail "metal and metallib merge differently"
[ "$(head -c 8 "$dir/all.metallib")" = "M2VLIB03" ] || fail "not a library file"
for entry in twice fill_float fill_int other; do
  grep -q "\"$entry\"" "$dir/all.metallib" || fail "entry $entry missing from the merged library"
done

# Errors name what is wrong.
"$m2v" metal "$dir/a.air" "$dir/a.air" -o "$dir/dup.metallib" 2>"$dir/err" && fail "duplicate entries accepted"
grep -q "defined in both" "$dir/err" || fail "duplicate not explained: $(cat "$dir/err")"
printf 'MTLBnot ours' > "$dir/apple.air"
"$m2v" metallib "$dir/apple.air" -o "$dir/x.metallib" 2>"$dir/err" && fail "foreign file accepted"
grep -q "apple.air: not a metal2vk library file" "$dir/err" || fail "foreign file not named: $(cat "$dir/err")"
"$m2v" metallib "$dir/absent.air" -o "$dir/x.metallib" 2>"$dir/err" && fail "missing input accepted"
grep -q "absent.air" "$dir/err" || fail "missing input not named: $(cat "$dir/err")"
echo 'kernel void broken(device float* x [[buffer(0)]]) { x[0] = undefined_name; }' > "$dir/bad.metal"
"$m2v" metal -c "$dir/bad.metal" -o "$dir/bad.air" 2>"$dir/err"
rc=$?
[ "$rc" = 1 ] || fail "a kernel with an error exited $rc, not 1"
[ ! -e "$dir/bad.air" ] || fail "a failed compile left a library file"
grep -q "bad.metal:1:.*undefined_name" "$dir/err" || fail "error not reported at its source: $(cat "$dir/err")"
"$m2v" metal -c "$dir/a.metal" 2>/dev/null && fail "-c without -o accepted"
echo "ok"
