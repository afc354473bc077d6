#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpu-gather.sh: the CPU gather on a GPU machine, in one run: `eht bench lookup` (HOST and AUTO, ids in
# GPU memory, eager and graph replays) on each tier a worker reads (memory, region on hugetlb pages,
# host-NUMA), uniform ids and real text with a 1 Mi-row hot set, the first with --knob-sweep; logs
# under $OUT. The binary comes prebuilt ($EHT, default build-h200/eht: cmake -DEHT_CUDA_ARCHS=90) so the
# device time goes to the benches. As root the huge page pool is raised for the region tier's tables
# and put back on exit. BUDGET (seconds, default 110) skips the steps that would not fit.
set -u
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
. "$(dirname "$0")/debs-env.sh"
E=${EHT:-build-h200/eht}
GIB=${GIB:-48}
NUMA_GIB=${NUMA_GIB:-$GIB}
BUDGET=${BUDGET:-110}
TEXT="--workload text:tests/workloads/text_500k.compressed.u32 --hotset 1048576"
# (--no-vllm: the CPU gather's knobs are measured here; vLLM's baseline would take a step's budget)
COMMON="lookup --strategies host,auto --ids-on gpu --graph --no-vllm --reps ${REPS:-10}"
export EHT_TEST_BELL_TRACE=1 EHT_BENCH_SMAPS=1 EHT_BENCH_NO_IDLE=1
start=$SECONDS
{
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
  nproc; free -g | head -2; grep -i huge /proc/meminfo
  cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/shmem_enabled
} >"$OUT/machine.txt" 2>&1
nr0=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo -1)
restore() { [ "$nr0" -ge 0 ] && echo "$nr0" >/proc/sys/vm/nr_hugepages 2>/dev/null; }
trap restore EXIT
step() { # name, seconds it needs, then the arguments of `eht bench`
  local name=$1 need=$2; shift 2
  local left=$((BUDGET - (SECONDS - start)))
  if [ "$left" -lt "$need" ]; then echo "== $name skipped ($left s left, needs ~$need)"; return; fi
  local t0=$SECONDS
  timeout "$left" "$E" bench "$@" >"$OUT/$name.txt" 2>&1
  echo "== $name (exit $?, $((SECONDS - t0)) s)"
  grep -E "^table:|^host |^auto |stage-in launches|stream-triggered|rror" "$OUT/$name.txt" | cut -c1-300
}
step memory-uniform 25 $COMMON --table-gib "$GIB" --tier memory --knob-sweep
step memory-text 15 $COMMON --table-gib "$GIB" --tier memory $TEXT
# The region tier's table on huge pages: a header page and the rows, plus slack.
if [ "$nr0" -ge 0 ] && echo $((nr0 + GIB * 512 + 64)) >/proc/sys/vm/nr_hugepages 2>/dev/null; then
  grep HugePages_ /proc/meminfo | tr '\n' ' '; echo
fi
step region-uniform 18 $COMMON --table-gib "$GIB" --tier region-pinned
step host-numa-uniform 25 $COMMON --table-gib "$NUMA_GIB" --tier host-numa
step region-text 18 $COMMON --table-gib "$GIB" --tier region-pinned $TEXT
step host-numa-text 25 $COMMON --table-gib "$NUMA_GIB" --tier host-numa $TEXT
restore
echo "nr_hugepages back to $(cat /proc/sys/vm/nr_hugepages); total $((SECONDS - start)) s"
