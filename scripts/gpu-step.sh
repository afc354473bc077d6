#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpu-step.sh: on a GPU machine with torch, build libeht and the CLI, then run what [engine-step]
# measures, logs and JSON reports under $OUT (default ./gpu-out):
#   scripts/gpu-step.sh [build] [tests] [step] [step-text] [joins] [lookup] [stagein] [cpu] [pieces] [timeline]
#                       [negctl] [unjoined] [check-edits]   (default: build step)
# tests: the GPU lookup tests and the CPU-budget ones; step: `eht bench step` decode (five rounds) and
# prefill (three), uniform ids, two tables of $EHT_STEP_GIB (24) GiB, README's variants; step-text: the same on text
# with a hot set; joins: where a decode step's background lookup pays beside the copies (three rounds
# with --trace, the stalls at the joins in graph replays synced and queued, and --timeline's profiles);
# lookup: the standalone decode / prefill latency (`eht bench lookup --graph`) and CPU per call; stagein:
# that latency with EHT_TEST_BELL_TRACE's breakdown of the stage-in kernel's time; cpu: the step
# bench's decode with the old spinning settings beside the new ones (same build); pieces: vLLM's
# PIECEWISE placement (the split halves, the copies captured into the pieces, vLLM's kernel between
# them; uniform, real text, prefill); timeline: CUPTI traces of the split and the side stream; negctl:
# the split's join kernel without its poll must fail test_gpu_engram_layer; unjoined: a captured
# split replayed while the layer's eager background call is not joined to its stream (the case the
# API's order is for: does it hang, and does a join grid below the SM count prevent it?); check-edits
# (anywhere): the source edits of negctl and unjoined still apply. The logs so far are tarred into
# $OUT/gpu-step.tgz after every step (a device's time limit may stop a later one).
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
# The source edits of the experiment steps (negctl, unjoined): a file and a sed script each.
# check-edits applies each to a copy and fails where one no longer changes its file (the source moved
# on), so CI (tests/test_gpu_step_edits.py) finds that before a device call does.
EDIT_NEGCTL=(src/gpu/kernels/lookup/expand.cu 's/while (\*(const volatile unsigned \*)done != 1u)/if (0)/')
EDIT_UNJOINED=(src/gpu/gpu_lookup.c 's/row_blocks_upto(n, all_sms(g, 4)), THREADS, s, args, "eht_lk_expand_after")/row_blocks_upto(n, g->sms > 1 ? (uint64_t)g->sms - 1 : 1), THREADS, s, args, "eht_lk_expand_after")/')
# Whether edit NAME (EDIT_NAME) still changes its file.
edit_applies() { local -n ed="EDIT_$1"; ! sed "${ed[1]}" "${ed[0]}" | cmp -s - "${ed[0]}"; }
rc=0
t0=$(date +%s)
stamp() { echo "== $1 at +$(( $(date +%s) - t0 )) s"; }
for what in "$@"; do
  stamp "$what"
  case $what in
  build)
    { nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; free -g | head -2
      python3 -c 'import torch; print("torch", torch.__version__)'; } >"$OUT/machine.txt" 2>&1
    # the device's own architecture only (EHT_STEP_ARCHS, 90: the release build embeds four and PTX)
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEHT_CUDA_ARCHS="${EHT_STEP_ARCHS:-90}" \
      -DEHT_FIXTURES="$PWD/tests/fixtures" >"$OUT/build.log" 2>&1 &&
      cmake --build build -j"$(nproc)" ${targets:+--target $targets} >>"$OUT/build.log" 2>&1 ||
      { tail -40 "$OUT/build.log"; exit 1; }
    ;;
  tests)
    (cd build && ctest --output-on-failure -j4 --timeout 200 -R "${EHT_STEP_TESTS:-gpu_lookup_background|gpu_lookup_graph|gpu_lookup_hot|gpu_lookup_strategies|lookup_bell|test_pool|cpu_budget|bench_step|gpu_engram_layer|python_engram_layer|gpu_serve_hotset}") \
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
  pieces)
    # vLLM's PIECEWISE placement: the split halves captured into the pieces against the same pieces
    # without lookups (vs_pieces) and against the copies captured into them (vs_copy), vLLM's kernel
    # eager between the pieces, the one-graph ways beside; then real text with and without the hot set,
    # and a prefill
    timeout ${EHT_STEP_TIMEOUT:-300} build/eht bench step --mode decode --table-gib "$gib" --rounds 3 \
      --variants none,copy,copy-split-pieces,layer-side,layer-split,layer-split-pieces,vllm-pieces \
      --json >"$OUT/pieces.json" 2>"$OUT/pieces.txt" || rc=1
    grep -E "^decode|over the" "$OUT/pieces.txt" | tail -20
    timeout ${EHT_STEP_TIMEOUT:-300} build/eht bench step --mode decode --table-gib "$gib" --rounds 3 --workload "text:$text" \
      --variants none,copy,copy-split-pieces,layer-split-pieces,layer+nohot-split-pieces,layer-side,layer+nohot-side \
      --json >"$OUT/pieces-text.json" 2>"$OUT/pieces-text.txt" || rc=1
    timeout ${EHT_STEP_TIMEOUT:-300} build/eht bench step --mode prefill --table-gib "$gib" --rounds 3 \
      --variants none,copy-split-pieces,layer-split-pieces --json >"$OUT/pieces-prefill.json" 2>"$OUT/pieces-prefill.txt" || rc=1
    # the three runs' summaries as BENCHMARKS.md's tables
    for j in pieces pieces-text pieces-prefill; do
      PYTHONPATH=$PWD/python python3 -m eht.bench_step_report "$OUT/$j.json"
    done
    ;;
  timeline)
    # where the split's step time goes: CUPTI traces of the one graph and the pieces (one round)
    timeout ${EHT_STEP_TIMEOUT:-300} build/eht bench step --mode decode --table-gib "$gib" --rounds 1 --timeline "$OUT/timeline" \
      --variants none,copy,copy-split-pieces,layer-side,layer-split,layer-split-pieces --json >"$OUT/timeline.json" \
      2>"$OUT/timeline.txt" || rc=1
    grep -E "^decode|timeline" "$OUT/timeline.txt"
    ;;
  negctl)
    # the split's join kernel without its poll must fail test_gpu_engram_layer (rows read before they
    # are in); the source is restored and rebuilt after
    k=${EDIT_NEGCTL[0]}
    cp "$k" "$OUT/expand.cu.orig"
    if ! edit_applies NEGCTL; then
      echo "negctl: the poll was not found in $k"; rc=1
    else
      sed -i "${EDIT_NEGCTL[1]}" "$k"
      cmake --build build -j"$(nproc)" --target test_gpu_engram_layer >"$OUT/negctl-build.log" 2>&1
      if timeout 150 build/test_gpu_engram_layer >"$OUT/negctl.txt" 2>&1; then
        echo "negctl: test_gpu_engram_layer PASSED without the poll (the test misses it)"; rc=1
      else
        echo "negctl: test_gpu_engram_layer failed without the poll, as it must"; tail -3 "$OUT/negctl.txt"
      fi
    fi
    cp "$OUT/expand.cu.orig" "$k" && rm -f "$OUT/expand.cu.orig"
    cmake --build build -j"$(nproc)" --target test_gpu_engram_layer >>"$OUT/negctl-build.log" 2>&1 || rc=1
    ;;
  unjoined)
    # The case the split's API order is for: a captured split (its join, eht_lk_expand_after, polls
    # on every SM) replayed on stream b while the same layer's eager background call of 2,048 tokens
    # on stream a is not joined to b (that call's group dequants, queued ahead of the split's done
    # word, each need a whole SM). Splits of 256 and 512 tokens, 20 rounds each, 10 s watchdog, rows
    # compared; then the same with the join's grid at most SMs - 1 blocks (one SM always free of
    # them), the source restored after. Exit 3 of the probe: it hung.
    cat >"$OUT/unjoined.py" <<'PY'
import os, sys, time
import torch
from torch_engram_ref import R, dev, expect, make_ids, rows, same
import eht
import eht.torch as et
small = int(sys.argv[1])
tab = eht.wrap(rows.clone(), R, 264, name="unjoined")  # host only: the CPU gathers and pushes, a real split
layer = et.EngramLayer(tab, format="bf16", device=0)
a, b = torch.cuda.Stream(), torch.cuda.Stream()
big_ids = make_ids(2048)[:, 0, :].contiguous()
big_out = torch.empty(2048, 24, 256, dtype=torch.bfloat16, device=dev)
ids3 = make_ids(small)
out = torch.empty(small, 24, 256, dtype=torch.bfloat16, device=dev)
with torch.cuda.stream(b):  # (warm: what a capture cannot make; a second start is refused: a real split)
    layer.lookup_start(ids3[:, 0, :], out)
    try:
        layer.lookup_start(ids3[:, 0, :], out)
        split = False
    except eht.EhtError:
        split = True
    layer.lookup_wait(out)
torch.cuda.synchronize()
if not split:
    print("split of %d tokens: the start ran whole, nothing to test" % small, flush=True)
    os._exit(5)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g, stream=b):
    layer.lookup_start(ids3[:, 0, :], out)
    layer.lookup_wait(out)
torch.cuda.synchronize()
worst = 0.0
for r in range(20):
    ids3.copy_(make_ids(small))
    big_ids.copy_(make_ids(2048)[:, 0, :])
    torch.cuda.synchronize()
    with torch.cuda.stream(a):
        layer.lookup(big_ids, big_out, background=True)
    with torch.cuda.stream(b):
        g.replay()
        ev = torch.cuda.Event()
        ev.record(b)
    t0 = time.time()
    while not ev.query():
        if time.time() - t0 > 10:
            print("split of %d tokens, round %d: not done after 10 s" % (small, r), flush=True)
            os._exit(3)
        time.sleep(0.001)
    torch.cuda.synchronize()
    worst = max(worst, time.time() - t0)
    if not (same(out, expect(ids3[:, 0, :], 0, 24, 0, R, "bf16")) and same(big_out, expect(big_ids, 0, 24, 0, R, "bf16"))):
        print("split of %d tokens, round %d: rows differ" % (small, r), flush=True)
        os._exit(4)
print("split of %d tokens after an unjoined eager call: 20 rounds, rows exact, the slowest %.1f ms" % (small, worst * 1e3))
PY
    k=${EDIT_UNJOINED[0]}
    cp "$k" "$OUT/unjoined-k.orig"
    for how in tree cap; do
      if [ $how = cap ]; then
        if ! edit_applies UNJOINED; then echo "unjoined: the join's grid was not found in $k"; rc=1; break; fi
        sed -i "${EDIT_UNJOINED[1]}" "$k"
        cmake --build build -j"$(nproc)" --target eht >>"$OUT/unjoined-build.log" 2>&1 || rc=1
      fi
      for small in 256 512; do
        PYTHONPATH=$PWD/python:$PWD/tests timeout 120 python3 "$OUT/unjoined.py" $small >>"$OUT/unjoined-$how.txt" 2>&1
        echo "unjoined ($how, $small tokens): exit $?"
      done
      tail -4 "$OUT/unjoined-$how.txt"
    done
    cp "$OUT/unjoined-k.orig" "$k" && rm -f "$OUT/unjoined-k.orig"
    cmake --build build -j"$(nproc)" --target eht >>"$OUT/unjoined-build.log" 2>&1 || rc=1
    ;;
  check-edits)
    # (no GPU needed) every experiment step's edit still changes its file
    for e in NEGCTL UNJOINED; do
      declare -n ed="EDIT_$e"
      if edit_applies $e; then
        echo "check-edits: the $e step's edit applies to ${ed[0]}"
      else
        echo "check-edits: the $e step's edit no longer changes ${ed[0]}"; rc=1
      fi
      unset -n ed
    done
    ;;
  *) echo "gpu-step.sh: unknown step $what"; rc=2 ;;
  esac
  # what has been written so far, in case the device's time limit stops a later step
  tar czf "$FINAL/gpu-step.tgz" -C "$OUT" .
done
stamp "done"
tar czf "$FINAL/gpu-step.tgz" -C "$OUT" . && rm -rf "$OUT"
exit $rc
