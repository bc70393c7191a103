#!/usr/bin/env bash
# Error-path test driver. The test file's header gives the expectation:
#   // EXPECT-EXIT: N            the exit code of m2v
#   // EXPECT-MSG: text          a substring of stderr (several lines allowed; all must match)
#   // EXPECT-LOC: L:C           stderr must contain "<basename of FILE>:L:C: " (the ORIGINAL source position)
#   // ARGS: ...                 the m2v arguments, %s standing for the file (default: compile %s)
# usage: run_error.sh M2V FILE.metal
set -u
m2v=$1 file=$2
exit_want=$(sed -n 's|^// EXPECT-EXIT: *||p' "$file" | head -1)
args=$(sed -n 's|^// ARGS: *||p' "$file" | head -1); args=${args:-compile %s}
args=${args//%s/$file}
err=$(mktemp); out=$(mktemp); trap 'rm -f "$err" "$out"' EXIT
# shellcheck disable=SC2086
(cd "$(dirname "$file")" && "$m2v" $args) >"$out" 2>"$err"
rc=$?
status=0
if [ "$rc" != "$exit_want" ]; then echo "FAIL: exit code $rc, expected $exit_want"; status=1; fi
while IFS= read -r msg; do
  if ! grep -qF -- "$msg" "$err"; then echo "FAIL: stderr lacks '$msg'"; status=1; fi
done < <(sed -n 's|^// EXPECT-MSG: *||p' "$file")
loc=$(sed -n 's|^// EXPECT-LOC: *||p' "$file" | head -1)
if [ -n "$loc" ] && ! grep -qF -- "$(basename "$file"):$loc: " "$err"; then
  echo "FAIL: stderr lacks location $(basename "$file"):$loc"; status=1
fi
if [ -s "$out" ] && [ "$rc" != 0 ]; then echo "FAIL: a failed compile printed to stdout:"; cat "$out"; status=1; fi
if [ $status -ne 0 ]; then echo "--- stderr:"; cat "$err"; fi
[ $status -eq 0 ] && echo "OK"
exit $status
