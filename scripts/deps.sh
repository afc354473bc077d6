#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deps.sh [build|test|plot]: installs the Debian packages a make target needs, when missing (apt-get as
# root; otherwise prints the exact command and fails for required ones).
#   build (make build, make demo): gcc, make, cmake, pkg-config, jansson, python3; optional liburing
#     (the disk tier's io_uring reads);
#   test (make test): the same, plus optional clang (the fuzzer), clang-tools (make analyze), python3-venv
#     / pip (the offline install test), python3-pyflakes (test_python_names), Open MPI (libeht_mpi and its
#     mpirun tests);
#   plot (scripts/plot-bench): optional python3-matplotlib;
#   aarch64 DIR (make check-aarch64): Debian's aarch64 cross gcc and qemu-user, and the arm64 packages of
#     jansson and liburing unpacked into DIR (a sysroot of their files only: no dpkg multiarch change);
#   hip (make check-hip): Debian's ROCm 5.2 hipcc (clang 15), rocPRIM (the kernels' block primitives)
#     and the HIP runtime's headers (test_hip_abi).
# Nothing happens when nothing is missing: no apt-get at all. Optional packages apt cannot install are
# remembered in $EHT_DEPS_UNAVAILABLE (default build/.deps-unavailable), so later runs do not ask again.
set -euo pipefail
set_name=${1:-build}
required=(gcc make cmake pkg-config libjansson-dev python3)
case "$set_name" in
  build) optional=(liburing-dev) ;;
  test) optional=(liburing-dev clang libclang-rt-14-dev clang-tools python3-venv python3-pip python3-pyflakes libopenmpi-dev
    openmpi-bin) ;;
  plot) required=(python3); optional=(python3-matplotlib) ;;
  aarch64)
    [ -n "${2:-}" ] || { echo "deps.sh aarch64 DIR: the sysroot folder is missing" >&2; exit 2; }
    required=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross make cmake pkg-config)
    command -v qemu-aarch64-static >/dev/null || required+=(qemu-user)
    optional=() ;;
  hip) required=(hipcc librocprim-dev libamdhip64-dev rocm-device-libs make cmake pkg-config libjansson-dev)
    optional=() ;;
  *) echo "deps.sh: unknown set '$set_name' (build, test, plot, aarch64, hip)" >&2; exit 2 ;;
esac
# The arm64 sysroot: jansson and liburing (headers, .pc files, shared libraries) from Debian's arm64
# packages, fetched with a private apt state under DIR (its own package lists), then unpacked; once.
aarch64_sysroot() {
  local dir=$1 debs=(libjansson-dev libjansson4 liburing-dev liburing2)
  local stamp="$dir/.eht-debs" want="${debs[*]}"
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && return 0
  mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/apt/debs"
  : >"$dir/apt/status"
  local o=(-qq -o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o "Dir::State::Lists=$dir/apt/lists"
           -o "Dir::State::status=$dir/apt/status" -o "Dir::Cache=$dir/apt/cache" -o APT::Sandbox::User=root)
  echo "eht: unpacking arm64 ${debs[*]} into $dir" >&2
  apt-get "${o[@]}" update >/dev/null
  (cd "$dir/apt/debs" && rm -f ./*.deb && apt-get "${o[@]}" download "${debs[@]}" >/dev/null)
  for d in "$dir"/apt/debs/*.deb; do dpkg-deb -x "$d" "$dir"; done
  printf '%s\n' "$want" >"$stamp"
}
finish() { [ "$set_name" != aarch64 ] || aarch64_sysroot "$1"; }
unavailable=${EHT_DEPS_UNAVAILABLE:-build/.deps-unavailable}
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
known_unavailable() { [ -f "$unavailable" ] && grep -qx "$1" "$unavailable"; }
missing=()
for p in "${required[@]}"; do have "$p" || missing+=("$p"); done
opt_missing=()
for p in "${optional[@]}"; do have "$p" || known_unavailable "$p" || opt_missing+=("$p"); done
if [ ${#missing[@]} -eq 0 ] && [ ${#opt_missing[@]} -eq 0 ]; then
  finish "${2:-}"
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  echo "eht: installing ${missing[*]} ${opt_missing[*]}" >&2
  # The package lists only when an install fails without them (a fresh image has none).
  install() { apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1; }
  updated=0
  update_once() { [ $updated = 1 ] || { apt-get update -qq >/dev/null 2>&1 || true; updated=1; }; }
  if [ ${#missing[@]} -gt 0 ] && ! install "${missing[@]}"; then
    update_once
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  for p in "${opt_missing[@]}"; do
    if ! install "$p"; then
      update_once
      if ! install "$p"; then
        echo "eht: optional package $p unavailable (not asked for again: $unavailable)" >&2
        mkdir -p "$(dirname "$unavailable")" && echo "$p" >>"$unavailable"
      fi
    fi
  done
elif [ ${#missing[@]} -gt 0 ]; then
  echo "eht: missing packages; run: sudo apt-get install -y ${missing[*]} ${opt_missing[*]}" >&2
  exit 1
else
  echo "eht: optional packages missing: sudo apt-get install -y ${opt_missing[*]}" >&2
fi
finish "${2:-}"
