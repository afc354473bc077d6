#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deps.sh: installs the Debian packages eht builds with, when missing (apt-get as root; otherwise
# prints the exact command and fails). Optional packages are installed when possible, never required:
# clang (fuzzer), liburing (io_uring disk reads), python3-venv/pip (the offline
# `pip install ./python` test), python3-matplotlib (scripts/plot-bench),
# Open MPI (libeht_mpi and its mpirun tests are built only when its headers are present).
set -euo pipefail
required=(gcc make cmake pkg-config libjansson-dev python3)
optional=(clang libclang-rt-14-dev liburing-dev python3-venv python3-pip python3-matplotlib libopenmpi-dev openmpi-bin)
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${required[@]}"; do have "$p" || missing+=("$p"); done
opt_missing=()
for p in "${optional[@]}"; do have "$p" || opt_missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && [ ${#opt_missing[@]} -eq 0 ] && exit 0
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
