#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# demo.sh: the main job on a small built-in default, from the repository alone:
#   1. write a synthetic Engram checkpoint (2 tables, packed FP8 weights + ue8m0 scales, 3 shards)
#      with eht's own safetensors writer, and show it with `eht info`;
#   2. `eht serve` it: tables loaded once into shared memory (host-NUMA on a GPU machine, else a
#      /dev/shm region);
#   3. 4 worker processes attach, look random ids up with every strategy this machine supports,
#      and check every row against the checkpoint file's bytes;
#   4. stop the server and check nothing is left in /dev/shm.
set -euo pipefail
build=${1:-build}
eht="$build/eht"
rows=${EHT_DEMO_ROWS:-200000}
work=$(mktemp -d "${TMPDIR:-/tmp}/eht-demo-XXXXXX")
key="demo-$$"
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
shm_before=$(ls /dev/shm 2>/dev/null | grep -c '^eht\.' || true)

echo "== 1. a synthetic Engram checkpoint ($rows rows per table)"
"$eht" synth "$work/ckpt" --tables 2 --rows "$rows" --shards 3
"$eht" info "$work/ckpt"

echo; echo "== 2. eht serve (key $key)"
"$eht" serve "$work/ckpt" --key "$key" --ready-file "$work/ready" >"$work/serve.log" 2>"$work/serve.err" &
server=$!
for _ in $(seq 1 600); do
  [ -e "$work/ready" ] && break  # written once every table is loaded and attaches are served
  kill -0 "$server" 2>/dev/null || { cat "$work/serve.err"; echo "eht serve failed" >&2; exit 1; }
  sleep 0.1
done
cat "$work/serve.log"
"$eht" status "$key"

echo; echo "== 3. 4 workers attach, look up and verify"
pids=()
for i in 1 2 3 4; do
  "$eht" worker "$key" --check "$work/ckpt" --id "$i" --ids 6144 --reps 5 >"$work/worker$i.log" 2>&1 &
  pids+=($!)
done
fail=0
for i in 1 2 3 4; do wait "${pids[$((i-1))]}" || fail=1; done
cat "$work"/worker*.log
[ "$fail" = 0 ] || { echo "a worker failed" >&2; exit 1; }
echo
echo "rows/s per strategy (mean over workers and tables):"
cat "$work"/worker*.log | awk '/rows\/s/ {s[$4]+=$9; n[$4]++} END {for (k in s) printf "  %-8s %8.2f M rows/s\n", k, s[k]/n[k]}'

echo; echo "== 4. stop the server"
kill -TERM "$server"; wait "$server"; server=
tail -1 "$work/serve.log"
shm_after=$(ls /dev/shm 2>/dev/null | grep -c '^eht\.' || true)
[ "$shm_after" -le "$shm_before" ] || { echo "/dev/shm has new eht files left" >&2; exit 1; }
echo "nothing left in /dev/shm; demo passed"
