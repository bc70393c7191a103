#!/usr/bin/env bash
# Compile one kernel file of the suite and check that it succeeded (exit 0, so every module passed in-process SPIR-V
# validation) and that every entry named on the file's `// ENTRIES:` line produced a module and a reflection JSON.
# usage: run_kernel.sh M2V FILE.metal OUTDIR
set -u
m2v=$1 file=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
entries=$(sed -n 's|^// ENTRIES:||p' "$file" | head -1)
if [ -z "$entries" ]; then echo "FAIL: $file has no '// ENTRIES:' line"; exit 1; fi
# `// FLAGS: ...` adds compile flags; %dir stands for the kernel file's directory.
flags=$(sed -n 's|^// FLAGS:||p' "$file" | head -1)
flags=${flags//%dir/$(dirname "$file")}
# shellcheck disable=SC2086
"$m2v" compile "$file" -o "$out" $flags
rc=$?
if [ $rc -ne 0 ]; then echo "FAIL: m2v compile exited with $rc (expected 0)"; exit 1; fi
status=0
for e in $entries; do
  for ext in spv json; do
    if [ ! -s "$out/$e.$ext" ]; then echo "FAIL: missing $out/$e.$ext"; status=1; fi
  done
  if [ -s "$out/$e.spv" ] && [ "$(head -c 4 "$out/$e.spv" | od -An -tx4 | tr -d ' ')" != "07230203" ]; then
    echo "FAIL: $out/$e.spv does not start with the SPIR-V magic number"; status=1
  fi
  if [ -s "$out/$e.json" ] && ! grep -q "\"entry\": \"$e\"" "$out/$e.json"; then
    echo "FAIL: $out/$e.json does not name entry $e"; status=1
  fi
done
# no module beyond the expected ones (a kernel's cooperative-matrix and native-bfloat16 builds, NAME.cooperative.spv
# and NAME.native-bfloat16.spv, are its own)
n_expected=$(echo $entries | wc -w)
n_found=$(ls "$out"/*.spv 2>/dev/null | grep -Evc '\.(cooperative|native-bfloat16)\.spv$')
for native in "$out"/*.native-bfloat16.spv; do
  [ -e "$native" ] || continue
  if [ "$(head -c 4 "$native" | od -An -tx4 | tr -d ' ')" != "07230203" ]; then
    echo "FAIL: $native does not start with the SPIR-V magic number"; status=1
  fi
  if [ ! -s "${native%.spv}.json" ]; then echo "FAIL: ${native%.spv}.json missing"; status=1; fi
done
if [ "$n_found" -ne "$n_expected" ]; then echo "FAIL: $n_found modules written, expected $n_expected ($entries)"; status=1; fi
[ $status -eq 0 ] && echo "OK: $entries"
exit $status
