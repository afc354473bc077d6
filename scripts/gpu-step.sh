#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpu-step.sh: on a GPU machine with torch, build libeht and the CLI, then run what [engine-step]
# measures, logs and JSON reports under $OUT (default ./gpu-out):
#   scripts/gpu-step.sh [build] [tests] [step] [step-text] [joins] [lookup] [stagein] [cpu]   (default: build step)
# tests: the GPU lookup tests and the CPU-budget ones; step: `eht bench step` decode (five rounds) and
# prefill (three), uniform ids, two tables of $EHT_STEP_GIB (24) GiB, README's variants; step-text: the same on text
# with a hot set; joins: where a decode step's background lookup pays beside the copies (three rounds
# with --trace, the stalls at the joins in graph replays synced and queued, and --timeline's profiles);
# lookup: the standalone decode / prefill latency (`eht bench lookup --graph`) and CPU per call; stagein:
# that latency with EHT_TEST_BELL_TRACE's breakdown of the stage-in kernel's time; cpu: the step
# bench's decode with the old spinning settings beside the new ones (same build).
set -u
OUT=${OUT:-$PWD/gpu-out}
# Everything lands in one tarball at the end ($OUT/gpu-step.tgz): the device tool returns only a few
# files of $OUT.
FINAL=$OUT
OUT=$FINAL/logs
mkdir -p "$OUT"
[ $# -gt 0 ] || set -- build step
. "$(dirname "$0")/debs-env.sh"
gib=${EHT_STEP_GIB:-24}
# The library and the CLI only, unless tests are asked for (they need every test program).
case " $* " in *" tests "*) targets=${EHT_STEP_TARGETS:-} ;; *) targets=${EHT_STEP_TARGETS:-eht eht_cli} ;; esac
variants=${EHT_STEP_VARIANTS:-none,copy,vllm-side,vllm-inline,layer-side,layer-inline}
text=${EHT_STEP_TEXT:-$PWD/tests/workloads/text_500k.compressed.u32}
rc=0
t0=$(date +%s)
stamp() { echo "== $1 at +$(( $(date +%s) - t0 )) s"; }
for what in "$@"; do
  stamp "$what"
  case $what in
  build)
    { nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; free -g | head -2
      python3 -c 'import torch; print("torch", torch.__version__)'; } >"$OUT/machine.txt" 2>&1
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEHT_FIXTURES="$PWD/tests/fixtures" >"$OUT/build.log" 2>&1 &&
      cmake --build build -j"$(nproc)" ${targets:+--target $targets} >>"$OUT/build.log" 2>&1 ||
      { tail -40 "$OUT/build.log"; exit 1; }
    ;;
  tests)
    (cd build && ctest --output-on-failure -j4 --timeout 90 -R "${EHT_STEP_TESTS:-gpu_lookup_background|gpu_lookup_graph|gpu_lookup_hot|gpu_lookup_strategies|lookup_bell|test_pool|cpu_budget|bench_step}") \
      >"$OUT/ctest.log" 2>&1 || rc=1
    grep -E "tests passed|Failed|Not Run|\*\*\*|SKIP" "$OUT/ctest.log" | head -30
    ;;
  step)
    # Decode over EHT_STEP_ROUNDS rounds; prefill over 3 (#42's targets are medians of 3), without
    # vllm-side (vLLM looks a prefill up inline): a prefill figure takes 48 synced pairs since round
    # 45, and five rounds of every variant no longer fit one device call.
    timeout ${EHT_STEP_TIMEOUT:-220} build/eht bench step --mode decode --table-gib "$gib" --variants "$variants" \
      --rounds "${EHT_STEP_ROUNDS:-5}" ${EHT_STEP_ARGS:-} --json >"$OUT/step.json" 2>"$OUT/step.txt" || rc=1
    cat "$OUT/step.txt"
    pvariants=$(echo ",$variants," | sed 's/,vllm-side,/,/g; s/^,//; s/,$//')
    timeout ${EHT_STEP_TIMEOUT:-350} build/eht bench step --mode prefill --table-gib "$gib" --variants "$pvariants" \
      --rounds 3 ${EHT_STEP_ARGS:-} --json >"$OUT/step-prefill.json" 2>"$OUT/step-prefill.txt" || rc=1
    cat "$OUT/step-prefill.txt"
    ;;
  joins)
    timeout ${EHT_STEP_TIMEOUT:-300} build/eht bench step --mode decode --table-gib "$gib" --variants none,copy,layer-side \
      --rounds 3 --trace --timeline "$OUT/timeline" ${EHT_STEP_ARGS:-} --json >"$OUT/joins.json" 2>"$OUT/joins.txt" || rc=1
    grep -E "^decode|graph, |timeline|over the copies" "$OUT/joins.txt"
    ;;
  step-text)
    timeout ${EHT_STEP_TIMEOUT:-400} build/eht bench step --mode decode,prefill --table-gib "$gib" --variants "${EHT_STEP_TEXT_VARIANTS:-none,copy,vllm-side,layer-side,layer-inline,layer+nohot-inline}" \
      --workload "text:$text" --json >"$OUT/step-text.json" 2>"$OUT/step-text.txt" || rc=1
    cat "$OUT/step-text.txt"
    ;;
  cpu)
    EHT_POOL_SPIN_US=2000 EHT_BELL_SPIN_US=20000 timeout 200 build/eht bench step --mode decode --table-gib "$gib" \
      --variants none,auto-side,host-side --json >"$OUT/step-oldspin.json" 2>"$OUT/step-oldspin.txt" || rc=1
    cat "$OUT/step-oldspin.txt"
    ;;
  stagein)
    EHT_TEST_BELL_TRACE=1 timeout 90 build/eht bench lookup --table-gib "$gib" --ids 6144,196608 --strategies host \
      --ids-on gpu --graph --format bf16 --no-vllm >"$OUT/stagein.txt" 2>&1 || rc=1
    echo "-- stage-in"; grep -E "^host |GPU side|stream-triggered" "$OUT/stagein.txt"
    ;;
  lookup)
    for s in new "EHT_POOL_SPIN_US=2000 EHT_BELL_SPIN_US=20000" EHT_LOOKUP_BACKGROUND=1; do
      name=${s%%=*}; name=${name#EHT_}
      env ${s#new} timeout 90 build/eht bench lookup --table-gib "$gib" --ids 6144,196608 --strategies host,auto \
        --ids-on gpu --graph --format bf16 --no-vllm --json >"$OUT/lookup-$name.json" 2>"$OUT/lookup-$name.txt" || rc=1
      echo "-- lookup $s"
      python3 -c 'import json,sys
for x in json.load(open(sys.argv[1]))["results"]:
    print(x["strategy"], x["ids"], {k: (x[k].get("median_ms"), x[k].get("cpu_ms_per_call")) for k in ("gpu_ids", "graph")
                                     if isinstance(x.get(k), dict)})' "$OUT/lookup-$name.json" || tail -5 "$OUT/lookup-$name.txt"
    done
    ;;
  *) echo "gpu-step.sh: unknown step $what"; rc=2 ;;
  esac
done
stamp "done"
tar czf "$FINAL/gpu-step.tgz" -C "$OUT" . && rm -rf "$OUT"
exit $rc
