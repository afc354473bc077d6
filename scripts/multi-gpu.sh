#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# multi-gpu.sh: one host table read by several GPUs of one host at once ([multi-gpu]).
# `eht serve` loads a synthetic Engram checkpoint into one shared copy (host-NUMA tier); one
# `eht worker` per GPU attaches (each process maps the same pages) and runs the prefill-shaped
# lookup (196,608 ids) with every strategy; the workers start together. Reports per-GPU and
# aggregate rows/s per strategy, the host memory the table took (one copy, not one per GPU), and
# the topology.
#   scripts/multi-gpu.sh [NGPUS] [ROWS_PER_TABLE] [one|per-numa]
#     defaults: all GPUs; 97,612,893 rows = 24 GiB; one copy. per-numa: `eht serve --per-numa`,
#     one copy per NUMA node with GPUs, each worker on its GPU's node's copy (status shows which).
#     Every run hands each worker its share of one CPU budget (--workers NGPUS).
#   STEP=1: afterwards `eht bench step` on every GPU at once (one process each), when the eht
#     built has that command; its per-GPU report goes to $OUT/step<g>.txt.
#   Without a GPU (no nvidia-smi, or EHT_MULTI_CPU=1) the same sequence runs CPU-only: NGPUS worker
#   processes without a device, tier region; per-numa then needs a forced topology
#   (EHT_TEST_NUMA_NODES=0,1, each worker i on node i % 2 through EHT_TEST_WORKER_NUMA).
# Keep NVLink multicast off: NCCL_NVLS_ENABLE=0 (eht itself never calls cuMulticastCreate).
set -euo pipefail
export NCCL_NVLS_ENABLE=0
build=${BUILD:-build}
OUT=${OUT:-$PWD/multi-gpu-out}
mkdir -p "$OUT"
have=0
if [ "${EHT_MULTI_CPU:-0}" != 1 ] && command -v nvidia-smi >/dev/null 2>&1; then
  have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
cpu=0
[ "$have" -gt 0 ] || cpu=1
ngpu=${1:-$have}
rows=${2:-97612893}
mode=${3:-one}
case "$mode" in one|per-numa) ;; *) echo "multi-gpu.sh: mode is one or per-numa, not '$mode'" >&2; exit 2 ;; esac
case "$ngpu" in ''|*[!0-9]*|0) echo "multi-gpu.sh: NGPUS must be a count >= 1 (got '$ngpu'; no GPU found: give one)" >&2; exit 2 ;; esac
if [ $cpu = 0 ] && [ "$ngpu" -gt "$have" ]; then
  echo "multi-gpu.sh: $ngpu GPUs asked, this machine has $have" >&2
  exit 2
fi
work=${EHT_WORK:-/var/tmp/eht-multi-gpu}
mkdir -p "$work"
key="multi-$$"
{
  echo "== topology"; [ $cpu = 1 ] || nvidia-smi topo -m || true
  echo; echo "== NUMA nodes"; ls -d /sys/devices/system/node/node* 2>/dev/null || echo "(no NUMA sysfs)"
  echo; echo "== eht probe"; "$build/eht" probe
} >"$OUT/topology.txt" 2>&1
cat "$OUT/topology.txt"

if [ ! -f "$work/ckpt/model.safetensors" ] || [ "$(cat "$work/rows" 2>/dev/null)" != "$rows" ]; then
  echo "== writing a synthetic checkpoint: 1 table x $rows rows of 264 B"
  "$build/eht" synth "$work/ckpt" --tables 1 --rows "$rows" --shards 1
  echo "$rows" >"$work/rows"
fi
avail() { awk '/MemAvailable/ {printf "%.0f\n", $2 * 1024}' /proc/meminfo; }
before=$(avail)
tier=host-numa
[ $cpu = 0 ] || tier=region
serve_args=(--key "$key" --tier "$tier" --workers "$ngpu")
[ "$mode" = one ] || serve_args+=(--per-numa)
echo "== eht serve ${serve_args[*]} ($mode copy mode, $ngpu worker(s)$([ $cpu = 0 ] || echo ', CPU only'))"
"$build/eht" serve "$work/ckpt" "${serve_args[@]}" >"$OUT/serve.txt" 2>"$OUT/serve.err" &
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
  if [ $cpu = 0 ]; then
    "$build/eht" worker "$key" --check "$work/ckpt" --device "$g" --id "$g" --ids 196608 --reps 20 \
      >"$OUT/worker$g.txt" 2>&1 &
  else # CPU only: a forced node per worker when the topology is forced (per-numa tests)
    EHT_TEST_WORKER_NUMA=${EHT_TEST_NUMA_NODES:+$((g % 2))} \
      "$build/eht" worker "$key" --check "$work/ckpt" --device -1 --id "$g" --ids 196608 --reps 20 \
      >"$OUT/worker$g.txt" 2>&1 &
  fi
  pids+=($!)
done
# Who reads which copy, while they are attached (the workers run 20 reps: long enough).
sleep 1
"$build/eht" status "$key" >"$OUT/status.txt" 2>&1 || true
"$build/eht" status "$key" --json >"$OUT/status.json" 2>&1 || true
all_mapped=$(avail)
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
cat "$OUT"/worker*.txt
cat "$OUT/status.txt"
kill -TERM $server; wait $server || true; trap - EXIT

if [ "${STEP:-0}" = 1 ]; then
  if [ $cpu = 0 ] && "$build/eht" bench step --help >/dev/null 2>&1; then
    echo "== eht bench step on $ngpu GPUs at once"
    spids=()
    for g in $(seq 0 $((ngpu - 1))); do
      "$build/eht" bench step --device "$g" >"$OUT/step$g.txt" 2>&1 &
      spids+=($!)
    done
    for p in "${spids[@]}"; do wait "$p" || fail=1; done
    cat "$OUT"/step*.txt
  else
    echo "STEP=1: skipped ($([ $cpu = 1 ] && echo 'no GPU' || echo 'this eht has no `bench step`'))"
  fi
fi

gib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 2^30}'; }
echo
copies=$(python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print(len(s["copies"]), "on NUMA node(s)",
  ",".join(str(c["numa_node"]) for c in s["copies"]), "read by", "/".join(str(c["workers"]) for c in s["copies"]),
  "worker(s)")' "$OUT/status.json" 2>/dev/null || echo "?")
echo "host memory: tables loaded took $(gib $((before - loaded))) GiB; with $ngpu workers attached" \
     "$(gib $((before - all_mapped))) GiB in all (mode $mode; copies: $copies)" | tee "$OUT/memory.txt"
grep -h "attached: copy" "$OUT"/worker*.txt | sed 's/^/  /' | tee -a "$OUT/memory.txt" || true
echo "rows/s per strategy (each GPU, and all GPUs at once):" | tee "$OUT/summary.txt"
cat "$OUT"/worker*.txt | awk '/rows\/s/ {s[$4] += $9; n[$4]++; per[$4] = per[$4] sprintf(" gpu%s %.1f", $2, $9)}
  END {for (k in s) printf "  %-7s aggregate %8.1f M rows/s  (%s )\n", k, s[k], per[k]}' | tee -a "$OUT/summary.txt"
exit $fail
