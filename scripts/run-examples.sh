#!/usr/bin/env bash
# The main job: build, then compile and run the bundled example kernels on the default Vulkan device and print a
# table (kernel, compile ms, GPU µs, max error against the CPU reference, status).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
exec build/tools/m2v/m2v examples "$@"
