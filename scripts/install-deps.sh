#!/usr/bin/env bash
# install-deps.sh - installs kdsl's build and test dependencies (Debian packages); idempotent.
set -euo pipefail
packages=(
  cmake ninja-build ccache g++ clang-19 pkg-config
  llvm-19-dev libfmt-dev doctest-dev
  nlohmann-json3-dev libxxhash-dev libcli11-dev zlib1g-dev libzstd-dev
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
