#!/usr/bin/env bash
# Installs everything metal2vk needs to build and test on Debian 12 (run as root, or with sudo available).
# lld-22, libzstd-dev and xz-utils: the portable archive (scripts/package.sh); pip, setuptools, wheel and venv:
# `pip install .` and its CI check (scripts/smoke-wheel.sh). doctest-dev, libopenblas-dev and liblapacke-dev: MLX on
# metal2vk (scripts/build-mlx.sh: MLX's C++ tests and its CPU backend).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends \
  cmake ninja-build ccache g++ git pkg-config \
  clang-22 llvm-22-dev llvm-22-tools libclang-22-dev libclang-cpp22-dev \
  spirv-tools spirv-headers glslang-tools \
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools \
  nlohmann-json3-dev libgtest-dev libgmock-dev \
  lld-22 libzstd-dev xz-utils python3-pip python3-setuptools python3-wheel python3-venv \
  python3 python3-dev python3-numpy python3-pytest pybind11-dev \
  doctest-dev libopenblas-dev liblapacke-dev
