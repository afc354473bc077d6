#!/usr/bin/env bash
# One device call: build, all tests, then quick benches.
set -u
export OUT=${OUT:-/tmp/out}
scripts/gpu-check.sh tests
cp build/Testing/Temporary/LastTest.log "$OUT/LastTest.log" 2>/dev/null
timeout 200 build/eht bench lookup --table-gib 16 --reps 10 > "$OUT/bench-lookup16.txt" 2>&1; echo "lookup16 exit $?"; cat "$OUT/bench-lookup16.txt" | tail -30
timeout 90 build/eht bench share --sizes 1,4 > "$OUT/bench-share.txt" 2>&1; echo "share exit $?"; tail -12 "$OUT/bench-share.txt"
timeout 60 build/eht probe > "$OUT/probe.txt" 2>&1; tail -30 "$OUT/probe.txt"
