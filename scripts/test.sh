#!/usr/bin/env bash
# Builds and runs every test (ctest) on the default Vulkan device (lavapipe when there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)"
