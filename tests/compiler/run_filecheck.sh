#!/usr/bin/env bash
# FileCheck test driver. The test file's header says what to check:
#   // MODE: asm | ir | json     which output of `m2v compile FILE` is piped to FileCheck (default asm)
#   // ARGS: ...                 extra arguments for m2v compile (e.g. --entry NAME, -D N=V)
#   // PREFIX: P                 FileCheck --check-prefix (default CHECK)
# A FILE may hold several RUN-style configurations as separate files; keep one rule per file.
# usage: run_filecheck.sh M2V FILECHECK FILE.metal
set -u
m2v=$1 filecheck=$2 file=$3
mode=$(sed -n 's|^// MODE: *||p' "$file" | head -1); mode=${mode:-asm}
args=$(sed -n 's|^// ARGS: *||p' "$file" | head -1)
prefix=$(sed -n 's|^// PREFIX: *||p' "$file" | head -1); prefix=${prefix:-CHECK}
case $mode in asm) flag=--asm ;; ir) flag=--ir ;; json) flag=--json ;; *) echo "bad MODE '$mode'"; exit 2 ;; esac
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
# shellcheck disable=SC2086
"$m2v" compile "$file" $flag $args >"$tmp"
rc=$?
if [ $rc -ne 0 ]; then echo "FAIL: m2v compile $flag $args exited with $rc"; exit 1; fi
"$filecheck" --check-prefix="$prefix" --input-file="$tmp" "$file"
