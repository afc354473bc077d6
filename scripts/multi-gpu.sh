#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# multi-gpu.sh: one host table read by several GPUs of one host at once ([multi-gpu]).
# `eht serve` loads a synthetic Engram checkpoint into one shared copy (host-NUMA tier); one
# `eht worker` per GPU attaches (each process maps the same pages) and runs the prefill-shaped
# lookup (196,608 ids) with every strategy; the workers start together. Reports per-GPU and
# aggregate rows/s per strategy, the host memory the table took (one copy, not one per GPU), and
# the topology.
#   scripts/multi-gpu.sh [NGPUS] [ROWS_PER_TABLE]     (defaults: all GPUs; 97,612,893 rows = 24 GiB)
# Keep NVLink multicast off: NCCL_NVLS_ENABLE=0 (eht itself never calls cuMulticastCreate).
set -euo pipefail
export NCCL_NVLS_ENABLE=0
build=${BUILD:-build}
OUT=${OUT:-$PWD/multi-gpu-out}
mkdir -p "$OUT"
ngpu=${1:-$(nvidia-smi -L | wc -l)}
rows=${2:-97612893}
work=${EHT_WORK:-/var/tmp/eht-multi-gpu}
mkdir -p "$work"
key="multi-$$"
{
  echo "== topology"; nvidia-smi topo -m || true
  echo; echo "== eht probe"; "$build/eht" probe
} >"$OUT/topology.txt" 2>&1
cat "$OUT/topology.txt"

if [ ! -f "$work/ckpt/model.safetensors" ] || [ "$(cat "$work/rows" 2>/dev/null)" != "$rows" ]; then
  echo "== writing a synthetic checkpoint: 1 table x $rows rows of 264 B"
  "$build/eht" synth "$work/ckpt" --tables 1 --rows "$rows" --shards 1
  echo "$rows" >"$work/rows"
fi
avail() { awk '/MemAvailable/ {print $2 * 1024}' /proc/meminfo; }
before=$(avail)
"$build/eht" serve "$work/ckpt" --key "$key" --tier host-numa >"$OUT/serve.txt" 2>"$OUT/serve.err" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
until grep -q "serving under key" "$OUT/serve.txt" 2>/dev/null; do
  kill -0 $server 2>/dev/null || { cat "$OUT/serve.err"; exit 1; }
  sleep 0.5
done
cat "$OUT/serve.txt"
loaded=$(avail)

pids=()
for g in $(seq 0 $((ngpu - 1))); do
  "$build/eht" worker "$key" --check "$work/ckpt" --device "$g" --id "$g" --ids 196608 --reps 20 \
    >"$OUT/worker$g.txt" 2>&1 &
  pids+=($!)
done
all_mapped=$(avail)
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
cat "$OUT"/worker*.txt
kill -TERM $server; wait $server || true; trap - EXIT

gib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 2^30}'; }
echo
echo "host memory: table loaded took $(gib $((before - loaded))) GiB; with $ngpu workers attached" \
     "$(gib $((before - all_mapped))) GiB in all (one copy)" | tee "$OUT/memory.txt"
echo "rows/s per strategy (each GPU, and all GPUs at once):" | tee "$OUT/summary.txt"
cat "$OUT"/worker*.txt | awk '/rows\/s/ {s[$4] += $9; n[$4]++; per[$4] = per[$4] sprintf(" gpu%s %.1f", $2, $9)}
  END {for (k in s) printf "  %-7s aggregate %8.1f M rows/s  (%s )\n", k, s[k], per[k]}' | tee -a "$OUT/summary.txt"
exit $fail
