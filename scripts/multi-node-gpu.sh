#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# multi-node-gpu.sh: [multi-node] on a machine with 2 GPUs: 4 MPI ranks as 2 simulated nodes of 2
# (EHT_NODE_ID through scripts/mpi-sim-node.sh), one GPU per rank of a node (ranks 0,2 on GPU 0,
# ranks 1,3 on GPU 1), host-NUMA tier.
#   1. one real node (4 ranks, EHT_NODE_ID alike): one host-NUMA copy
#   2. two nodes: two host-NUMA copies (MemAvailable fell by ~2 table sizes), one per node
#   3. EHT_TEST_FAULT=map on node 1's second rank: node 1 falls back to the pinned region, node 0 keeps
#      host-NUMA (two copies still)
#   4. a rank killed before the share: the job fails within the deadline, no hang
#   5. the CPU tests (mpirun region tier, Python pipe coordinator) and, with torch, the torch group
#      test standalone and under torchrun (4 ranks, 2 nodes of 2)
# Usage: scripts/multi-node-gpu.sh [TABLE_BYTES, default 8G]; logs under $OUT (default ./multi-node-out).
# What is simulated: see docs/MULTI_NODE.md, "Several nodes on one machine". Keep NVLink multicast off.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
bytes=${1:-8G}
OUT=${OUT:-$PWD/multi-node-out}
build=${BUILD:-build-mn}
mkdir -p "$OUT"
mpirun=$(command -v mpirun || true)
[ -n "$mpirun" ] || { echo "multi-node-gpu: no mpirun" | tee "$OUT/summary.txt"; exit 1; }
# Find Open MPI's headers next to the mpirun in PATH (HPC images keep it outside /usr).
export MPI_HOME=${MPI_HOME:-$(dirname "$(dirname "$(readlink -f "$mpirun")")")}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$OUT/cmake.txt" 2>&1 &&
  cmake --build "$build" -j"$(nproc)" >"$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
ex=$build/example_mpi_share
[ -x "$ex" ] || { echo "multi-node-gpu: MPI headers not found (MPI_HOME=$MPI_HOME): no $ex"; grep -i mpi "$OUT/cmake.txt"; exit 1; }
mpi=("$mpirun" -np 4)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
[ "$(nproc)" -lt 4 ] && mpi+=(--oversubscribe)
abs_build=$(cd "$build" && pwd)
export EHT_LIB=$abs_build/libeht.so LD_LIBRARY_PATH=$abs_build:${LD_LIBRARY_PATH:-}
sim=scripts/mpi-sim-node.sh
nvidia-smi -L >"$OUT/gpus.txt" 2>&1; "$build/eht" probe >>"$OUT/gpus.txt" 2>&1
fails=0
step() { # name expect(0|nonzero) cmd...
  local name=$1 want=$2; shift 2
  local t0; t0=$(date +%s)
  timeout 300 "$@" >"$OUT/$name.txt" 2>&1
  local rc=$? el=$(( $(date +%s) - t0 ))
  local ok=0
  if [ "$want" = 0 ]; then [ $rc = 0 ] && ok=1; else [ $rc != 0 ] && [ $rc != 124 ] && [ $el -le 120 ] && ok=1; fi
  if [ $ok = 1 ]; then echo "ok   $name (rc $rc, ${el}s)"; else echo "FAIL $name (rc $rc, ${el}s)"; fails=$((fails + 1)); fi
  grep -E "^(rank|nodes|FAIL|mpi_share|torch group)|did not complete|failed:" "$OUT/$name.txt" | sed 's/^/     /' | head -20
}
{
  EHT_SIM_RANKS_PER_NODE=4 EHT_SIM_GPUS=2 step one-node 0 "${mpi[@]}" "$sim" "$ex" --bytes "$bytes" \
    --tier auto --expect-tiers host-numa --expect-copies 1
  EHT_SIM_GPUS=2 step two-nodes 0 "${mpi[@]}" "$sim" "$ex" --bytes "$bytes" \
    --expect-tiers host-numa,host-numa --expect-copies 2
  EHT_SIM_GPUS=2 EHT_SIM_FAULT_RANK=3 EHT_SIM_FAULT=map:rank=1 step fault-node1 0 "${mpi[@]}" "$sim" "$ex" \
    --bytes "$bytes" --expect-tiers host-numa,region-pinned --expect-copies 2
  EHT_SIM_GPUS=2 step die-rank nonzero "${mpi[@]}" "$sim" "$ex" --bytes 1G --die-rank 3 --timeout-ms 20000
  grep -q "killing myself" "$OUT/die-rank.txt" || { echo "FAIL die-rank: the rank did not start"; fails=$((fails + 1)); }
  step ctest-cpu 0 bash -c "cd $abs_build && ctest --output-on-failure -R '(mpi_nodes|python_group|python_torch_group)'"
  if command -v torchrun >/dev/null && python3 -c "import torch" 2>/dev/null; then
    EHT_SIM_RANKS_PER_NODE=2 EHT_EXPECT_TIER=host-numa PYTHONPATH=$PWD/python \
      step torchrun 0 torchrun --nproc_per_node 4 tests/test_python_torch_group.py
  else
    echo "skip torchrun (no torch)"
  fi
  echo "multi-node-gpu: $fails failed"
} 2>&1 | tee "$OUT/summary.txt"
grep -q "multi-node-gpu: 0 failed" "$OUT/summary.txt"
