#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpu-check.sh: build, run every test (GPU ones included) and the benchmarks on a GPU machine, with
# logs under $OUT (default ./gpu-out). Where jansson's or liburing's headers are missing and no package
# manager can reach a mirror, Debian packages placed in .debs/ (apt-get download libjansson-dev
# libjansson4 liburing-dev liburing2) are unpacked into a private prefix (pkg-config finds them through
# PKG_CONFIG_SYSROOT_DIR; the programs load them through LD_LIBRARY_PATH).
#   scripts/gpu-check.sh [tests|bench|all]   (default all; EHT_BENCH_JSON=1: JSON reports and
#                                            SVG plots under $OUT/plots, see scripts/plot-bench)
set -u
what=${1:-all}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
jobs=$(nproc)
. "$(dirname "$0")/debs-env.sh"
{
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
  nproc; free -g | head -2
} >"$OUT/machine.txt" 2>&1
# Test fixtures: the copy in the repository.
fixtures=$PWD/tests/fixtures
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEHT_FIXTURES="$fixtures" >"$OUT/build.log" 2>&1 &&
  cmake --build build -j"$jobs" >>"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
rc=0
if [ "$what" = tests ] || [ "$what" = all ]; then
  (cd build && ctest --output-on-failure -j4 --timeout 300) >"$OUT/ctest.log" 2>&1 || rc=1
  grep -E "tests passed|Failed|Not Run|\*\*\*|SKIP" "$OUT/ctest.log" | head -40
fi
bench() { # name, then the arguments of `eht bench`; EHT_BENCH_JSON=1: JSON reports, drawn at the end
  local name=$1; shift
  if [ -n "${EHT_BENCH_JSON:-}" ]; then
    timeout "${EHT_BENCH_TIMEOUT:-420}" build/eht bench "$@" --json >"$OUT/bench-$name.json" 2>"$OUT/bench-$name.txt"
    echo "== bench $name (exit $?)"; tail -"${EHT_BENCH_TAIL:-24}" "$OUT/bench-$name.json"
  else
    timeout "${EHT_BENCH_TIMEOUT:-420}" build/eht bench "$@" >"$OUT/bench-$name.txt" 2>&1
    echo "== bench $name (exit $?)"; tail -"${EHT_BENCH_TAIL:-24}" "$OUT/bench-$name.txt"
  fi
}
if [ "$what" = bench ] || [ "$what" = all ]; then
  gib=${EHT_BENCH_GIB:-48}
  bench lookup lookup --table-gib "$gib"
  bench lookup-bf16 lookup --table-gib "$gib" --format bf16
  bench share share --sizes "1,$gib"
  bench region region --sizes "1,16,$gib"
  bench disk disk --file-gib "${EHT_BENCH_DISK_GIB:-32}"
  if [ -n "${EHT_BENCH_JSON:-}" ]; then
    for f in "$OUT"/bench-*.json; do # one folder per report: lookup and lookup-bf16 draw the same names
      scripts/plot-bench "$f" -o "$OUT/plots/$(basename "$f" .json)" --format svg || echo "plot-bench $f failed"
    done
  fi
fi
exit $rc
