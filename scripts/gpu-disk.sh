#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpu-disk.sh: the disk tier on a GPU machine in one go: build (with liburing, from .debs/ where the
# machine lacks it, as scripts/gpu-check.sh does), the disk tests, `eht bench disk` (cold and warm,
# prefill and decode, default settings) and `eht bench disk --mem-limit` at half the table on the
# real-text workload, with and without a GPU hot set; logs, JSON reports and plots under $OUT.
#   EHT_BENCH_DISK_GIB (16), EHT_DISK_MEM_STEPS (300), EHT_DISK_HOTSET (65536) set the sizes.
set -u
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
gib=${EHT_BENCH_DISK_GIB:-16}
steps=${EHT_DISK_MEM_STEPS:-300}
hot=${EHT_DISK_HOTSET:-65536}
text=tests/workloads/text_500k.compressed.u32
. "$(dirname "$0")/debs-env.sh"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv 2>&1
  nproc; free -g | head -2; uname -r; cat /proc/self/cgroup; grep cgroup /proc/self/mountinfo
  cat /proc/sys/kernel/io_uring_disabled 2>&1; df -h /var/tmp | tail -1
} >"$OUT/machine.txt" 2>&1
t0=$(date +%s)
stamp() { echo "== $1 at +$(($(date +%s) - t0)) s"; }
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEHT_FIXTURES="$PWD/tests/fixtures" >"$OUT/build.log" 2>&1 &&
  cmake --build build -j"$(nproc)" --target eht_cli test_disk_lookup test_disk_split test_disk_truncate \
    test_gpu_disk_lookup test_bench_disk_mem test_gpu_bench_disk_mem >>"$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
grep "eht: liburing\|eht: nvcc" "$OUT/build.log"
stamp built
rc=0
(cd build && ctest -R "disk" --output-on-failure --timeout 120) >"$OUT/ctest.log" 2>&1 || rc=1
grep -E "tests passed|Failed|Not Run|\*\*\*|Skipped" "$OUT/ctest.log" | head -20
stamp tested
bench() { # name, timeout, then the arguments of `eht bench`
  local name=$1 lim=$2; shift 2
  timeout "$lim" build/eht bench "$@" --json >"$OUT/bench-$name.json" 2>"$OUT/bench-$name.txt"
  echo "== bench $name (exit $?)"; tail -3 "$OUT/bench-$name.txt"
}
bench disk 200 disk --file-gib "$gib" --keep
python3 - "$OUT/bench-disk.json" <<'PY' || true
import json, sys
d = json.load(open(sys.argv[1]))
print("drive", d.get("drive_iops_4k"), "split_mode", d.get("split_mode"))
for r in d["results"]:
    print(r["ids"], "cold ms", r["cold_ms"], "of IOPS (rows)", r["cold_fraction_of_iops"], "(pages)", r["cold_pages_fraction_of_iops"],
          "| pf", r["cold_prefetch_ms"], "| warm", r["warm_ms"], "mem", r["memory_host_ms"], "ratio", r["warm_vs_memory"])
PY
stamp "bench disk"
half=$(python3 -c "print($gib / 2)")
bench disk-mem-hot 150 disk --file-gib "$gib" --keep --mem-limit "$half" --workload "text:$text" --steps "$steps" --hotset "$hot"
stamp "mem hot"
bench disk-mem 120 disk --file-gib "$gib" --keep --mem-limit "$half" --workload "text:$text" --steps $((steps * 2 / 3))
stamp "mem"
for f in "$OUT"/bench-disk-mem*.json; do
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-1], {k: d.get(k) for k in ('limit_mechanism','output','hotset_rows','steady_median_ms','steady_mean_ms','steady_p90_ms','hit_rate','page_cache_hit_rate','gpu_hot_ids_per_step','uncached_rows_per_step','uncached_page_bytes_per_step','storage_read_bytes_per_step','reads','cgroup_usage_bytes')})" "$f" || true
done
rm -f "${EHT_BENCH_DIR:-/var/tmp/eht-bench-disk}/eht-bench-disk.safetensors"
rmdir "${EHT_BENCH_DIR:-/var/tmp/eht-bench-disk}" 2>/dev/null
exit $rc
