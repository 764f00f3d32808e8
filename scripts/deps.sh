#!/usr/bin/env bash
# Installs the Debian packages meshcast needs to build and test, and says which ones it installs.
# Runs apt-get as root, or through sudo otherwise. Does nothing when everything is present.
set -euo pipefail
pkgs=(build-essential pkg-config clang libz3-dev libigraph-dev libxml2-dev libxml2-utils
      libcmocka-dev libjansson-dev libxxhash-dev libglpk-dev graphviz libopenmpi-dev openmpi-bin
      python3-cffi python3-pytest python3-torch python3-numpy python3-pip python3-setuptools)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "meshcast: installing missing Debian packages: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
