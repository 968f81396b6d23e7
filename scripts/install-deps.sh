#!/usr/bin/env bash
# install-deps.sh - installs kdsl's build and test dependencies (Debian packages); idempotent.
# lld-19 and rocm-device-libs are run-time tools of the AMDGPU backend (ld.lld links code objects,
# ocml.bc holds device math): nothing needs them to build, and their tests skip, saying so, without
# them. The HIP runtime (libamdhip64) is not installed: its launch path is tested with a fake.
set -euo pipefail
packages=(
  cmake ninja-build ccache g++ clang-19 pkg-config
  llvm-19-dev libfmt-dev doctest-dev
  nlohmann-json3-dev libxxhash-dev libcli11-dev zlib1g-dev libzstd-dev
  python3-venv
  lld-19 rocm-device-libs
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi

# The gguf Python package (llama.cpp's own reader), in a venv under build/, for the test that reads
# kdsl-quantize's files back with it (tests/models/quantize_model_test.cpp); without PyPI the
# test skips with a message.
cd "$(dirname "$0")/.."
if [ ! -x build/py-gguf/bin/python ] || ! build/py-gguf/bin/python -c 'import gguf, numpy' 2>/dev/null; then
  if python3 -m venv build/py-gguf && build/py-gguf/bin/pip install -q gguf numpy; then
    echo "install-deps: gguf Python package in build/py-gguf"
  else
    echo "install-deps: the gguf Python package could not be installed; its test will skip"
  fi
fi
