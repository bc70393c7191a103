#!/bin/sh
# `m2v CMD --help` and `-h` print that command's usage on stdout and exit 0; `m2v --version` names the LLVM it was
# built with; an unknown option still is a usage error (exit 2) that shows the usage or points at `m2v CMD --help`.
m2v="$1"
fail() { echo "FAIL: $*"; exit 1; }
for cmd in compile run examples mlx sweep bench review metal metallib; do
  for flag in --help -h; do
    out=$("$m2v" "$cmd" "$flag" 2>/dev/null) || fail "m2v $cmd $flag exited $?"
    case "$out" in "usage: m2v $cmd "*) ;; *) fail "m2v $cmd $flag printed: $(echo "$out" | head -1)" ;; esac
  done
done
"$m2v" --version | grep -q "^m2v [0-9.]* " || fail "m2v --version: no version line"
"$m2v" --version | grep -q "LLVM and clang 22\." || fail "m2v --version: no LLVM version"
for cmd in compile run examples mlx sweep metal metallib; do
  err=$("$m2v" "$cmd" --no-such-option 2>&1 >/dev/null)
  rc=$?
  [ "$rc" = 2 ] || fail "m2v $cmd --no-such-option exited $rc, not 2"
  echo "$err" | grep -q -e "m2v $cmd --help" -e "^usage: m2v $cmd " || fail "m2v $cmd usage error neither shows nor points at the usage: $err"
done
echo "ok"
