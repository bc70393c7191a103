#!/usr/bin/env bash
# The portable archive on a GPU machine that has nothing of ours: run from a repository checkout's root with the
# archive (.tar.xz) and this folder's files in .devrun/portable/ and the Vulkan loader packages in .gl/
# (shared/tools/vkprobe/README.md). Prints a transcript: machine, libraries, `m2v examples`, `m2v mlx` on a simd
# kernel (row sums with simd_sum; expected 496 1520 2544 3568), the Python tests against the archive's package.
set -u
repo=$PWD
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
dir=$repo/.devrun/portable
work=$(mktemp -d)
cd "$work"
tar -xJf "$dir"/metal2vk-*-linux-x86_64.tar.xz
root=$(echo "$work"/metal2vk-*-linux-x86_64)
clean() { env -i PATH=/usr/bin:/bin HOME="$work" LD_LIBRARY_PATH= M2V_CACHE_DIR="$work/cache" \
  VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json "$@"; }
t() { echo "\$ $*"; clean "$@" 2>&1; echo "[exit $?]"; }
date -u
t sh -c '. /etc/os-release; echo "$PRETTY_NAME"; uname -m; ldd --version | head -1; python3 --version'
t sh -c "ldd $root/bin/m2v $root/lib/libmetal2vk.so.0 | sed 's/ (0x.*//'"
t "$root/bin/m2v" --version
t "$root/bin/m2v" examples
t "$root/bin/m2v" mlx "$dir/simd_rowsum.json" -o "$work/out"
t python3 -c "import numpy as np; print(np.load('$work/out/out.npy'))"
t sh -c "PYTHONPATH=$root/python M2V_BIN=$root/bin/m2v python3 -m pytest -q -p no:cacheprovider -rs $repo/python/tests 2>&1 | tail -15"
