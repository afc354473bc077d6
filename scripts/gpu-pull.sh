#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpu-pull.sh: is this GPU machine's pull of pinned host memory slow, alone or beside a CPU gather?
# Prints the machine's shape (CPU, NUMA, the GPU's link and topology), builds and runs gpu_pull.cu
# (the copy engine and a kernel's loads, with and without 15 threads gathering), then, where an eht
# binary is given ($EHT, default build/eht), one traced `eht bench lookup` of a decode and a prefill
# batch over a 24 GiB table, whose "last chunk ready" against "gathered in" shows the same thing
# inside eht. Needs nvcc (CUDA_HOME or PATH). Logs under $OUT.
set -eu
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
E=${EHT:-build/eht}
NVCC=${NVCC:-$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")}
{
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
  uptime
  lscpu | grep -E "Model name|Socket|NUMA node|L3"
  nvidia-smi topo -m | head -4
} 2>&1 | tee "$OUT/machine.txt"
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
"$NVCC" -O2 -arch=native -o "$probe/gpu_pull" "$here/gpu_pull.cu" -lpthread
"$probe/gpu_pull" | tee "$OUT/pull.txt"
if [ -x "$E" ]; then
  EHT_BENCH_NO_IDLE=1 EHT_TEST_BELL_TRACE=1 "$E" bench lookup --table-gib "${GIB:-24}" --ids 6144,196608 \
    --strategies host --ids-on gpu --graph --format bf16 --no-vllm >"$OUT/lookup.txt" 2>&1
  grep -E "^host |\(host\).*(class prefill|requests of 196608)|CPU limit" "$OUT/lookup.txt" | cut -c1-330
fi
