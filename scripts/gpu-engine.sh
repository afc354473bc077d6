#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpu-engine.sh: the engine path on a GPU machine in one go: build, the lookup GPU tests (C and
# torch), then `eht bench lookup` with host ids, GPU ids and graph replays side by side, logs under $OUT.
#   scripts/gpu-engine.sh [table GiB (48)] [reps (10)] [sweep: 0/1 (1)]
set -u
gib=${1:-48}; reps=${2:-10}; sweep=${3:-1}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
if ! pkg-config --exists jansson 2>/dev/null && ls .debs/*.deb >/dev/null 2>&1; then # as gpu-check.sh
  mkdir -p /tmp/eht-deps
  for f in .debs/*.deb; do dpkg -x "$f" /tmp/eht-deps; done
  export PKG_CONFIG_SYSROOT_DIR=/tmp/eht-deps
  export PKG_CONFIG_PATH=/tmp/eht-deps/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/tmp/eht-deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEHT_FIXTURES="$PWD/tests/fixtures" >"$OUT/build.log" 2>&1 &&
  cmake --build build -j"$(nproc)" >>"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
rc=0
(cd build && timeout 300 ctest --output-on-failure --timeout 240 -j3 \
   -R 'test_gpu_lookup|test_gpu_disk_lookup|test_python_torch|test_lookup') >"$OUT/ctest.log" 2>&1 || rc=1
grep -E "tests passed|Failed|Not Run|\*\*\*|SKIP|FAIL|differ|dead" "$OUT/ctest.log" | head -40
EHT_FIXTURES=$PWD/tests/fixtures build/test_gpu_lookup_graph >"$OUT/graph-test.log" 2>&1; echo "test_gpu_lookup_graph alone: exit $?"; tail -6 "$OUT/graph-test.log"
b() { local name=$1; shift
  EHT_TEST_BELL_TRACE=1 timeout 280 build/eht bench lookup "$@" >"$OUT/bench-$name.txt" 2>&1; echo "== bench $name (exit $?)"; cat "$OUT/bench-$name.txt"; }
b main --table-gib "$gib" --reps "$reps" --graph
[ "$sweep" = 1 ] && b sweep --table-gib "$gib" --reps "$reps" --graph --sweep --strategies host,auto
exit $rc
