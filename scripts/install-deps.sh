#!/usr/bin/env bash
# Installs the Debian packages Ballistic needs, only when some are missing; arguments name
# extra packages (scripts/fuzz.sh asks for clang).
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  libtbb-dev libxsimd-dev
  nlohmann-json3-dev libcli11-dev
  libgtest-dev libbenchmark-dev
  gnuplot-nox python3-ase
  libvulkan-dev glslc glslang-tools mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  libglfw3-dev libstb-dev libimgui-dev xvfb xauth
  pybind11-dev python3-pybind11 python3-dev python3-numpy python3-pytest python3-matplotlib
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

echo "Installing: ${missing[*]}"
sudo=()
((EUID == 0)) || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
