#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deps.sh: installs the Debian packages eht builds with, when missing (apt-get as root; otherwise
# prints the exact command and fails). Optional packages are installed when possible, never required:
# clang (fuzzer), liburing (io_uring disk reads), python3-venv/pip (the offline
# `pip install ./python` test), python3-matplotlib (scripts/plot-bench),
# Open MPI (libeht_mpi and its mpirun tests are built only when its headers are present).
#
# `deps.sh hip` installs what `make check-hip` needs (Debian's ROCm packages).
# `deps.sh aarch64 DIR` instead installs what `make check-aarch64` needs: Debian's aarch64 cross
# toolchain and qemu-user, and unpacks the arm64 packages of jansson and liburing into DIR (a sysroot
# of their files only: no dpkg multiarch change, the machine's packages are left alone).
set -euo pipefail
target=${1:-}
if [ "$target" = aarch64 ]; then
  required=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user make cmake pkg-config)
  optional=()
  # qemu-user-static serves as well as qemu-user
  if command -v qemu-aarch64-static >/dev/null && ! command -v qemu-aarch64 >/dev/null; then required=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross make cmake pkg-config); fi
elif [ "$target" = hip ]; then
  # `make check-hip`: Debian's ROCm 5.2 hipcc (clang 15), rocPRIM (the kernels' block primitives) and
  # the HIP runtime's headers (test_hip_abi); the runtime comes with them, for a machine with an AMD GPU.
  required=(hipcc librocprim-dev libamdhip64-dev rocm-device-libs make cmake pkg-config libjansson-dev)
  optional=()
elif [ -n "$target" ]; then
  echo "eht: deps.sh: unknown target '$target' (aarch64, hip)" >&2
  exit 2
else
required=(gcc make cmake pkg-config libjansson-dev python3)
optional=(clang libclang-rt-14-dev liburing-dev python3-venv python3-pip python3-matplotlib libopenmpi-dev openmpi-bin)
fi
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${required[@]}"; do have "$p" || missing+=("$p"); done
opt_missing=()
for p in "${optional[@]}"; do have "$p" || opt_missing+=("$p"); done
# The arm64 sysroot: jansson and liburing (headers, .pc files, shared libraries) from Debian's arm64
# packages, fetched with a private apt state under DIR (its own arm64 package lists), then unpacked.
aarch64_sysroot() {
  local dir=$1 debs=(libjansson-dev libjansson4 liburing-dev liburing2)
  local stamp="$dir/.eht-debs" want="${debs[*]}"
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && return 0
  mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/apt/debs"
  : > "$dir/apt/status"
  local o=(-qq -o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o "Dir::State::Lists=$dir/apt/lists"
           -o "Dir::State::status=$dir/apt/status" -o "Dir::Cache=$dir/apt/cache" -o APT::Sandbox::User=root)
  echo "eht: unpacking arm64 ${debs[*]} into $dir" >&2
  apt-get "${o[@]}" update >/dev/null
  (cd "$dir/apt/debs" && rm -f ./*.deb && apt-get "${o[@]}" download "${debs[@]}" >/dev/null)
  for d in "$dir"/apt/debs/*.deb; do dpkg-deb -x "$d" "$dir"; done
  printf '%s\n' "$want" > "$stamp"
}
finish() {
  if [ "$target" = aarch64 ]; then
    [ -n "${2:-}" ] || { echo "eht: deps.sh aarch64 DIR: the sysroot folder is missing" >&2; exit 2; }
    aarch64_sysroot "$2"
  fi
}
if [ ${#missing[@]} -eq 0 ] && [ ${#opt_missing[@]} -eq 0 ]; then
  finish "$@"
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  echo "eht: installing ${missing[*]} ${opt_missing[*]}" >&2
  apt-get update -qq >/dev/null || true
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  for p in "${opt_missing[@]}"; do
    apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 || echo "eht: optional package $p unavailable" >&2
  done
elif [ ${#missing[@]} -gt 0 ]; then
  echo "eht: missing packages; run: sudo apt-get install -y ${missing[*]} ${opt_missing[*]}" >&2
  exit 1
else
  echo "eht: optional packages missing (fuzzer, sanitizers, io_uring): sudo apt-get install -y ${opt_missing[*]}" >&2
fi
finish "$@"
