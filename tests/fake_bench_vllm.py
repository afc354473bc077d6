#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""fake_bench_vllm.py: stands in for python3 as EHT_PYTHON in test_bench_vllm.py, so `eht bench lookup`'s
baseline can be checked without torch or a GPU. Called as the bench calls its interpreter (`-m
eht.bench_vllm ARGS`), it checks what it was given with the real helper's parser (eht.bench_vllm
.parse_args) and the steps' ids file (its size, every id a row of the table), then answers as
FAKE_VLLM says: ok (a report of the real shape, each figure telling its row and mode apart), skipped,
garbage, exit (status 3, no output), signal (killed by SIGSEGV), badshape (a row without its median),
huge (more output than the bench keeps). A check that fails is the helper's error report."""
import json
import os
import signal
import sys


def fail(msg):
    print(json.dumps({"error": "fake helper: " + msg, "exit": 1}))
    sys.exit(1)


def main():
    argv = sys.argv[1:]
    if argv[:2] != ["-m", "eht.bench_vllm"]:
        fail("called as %r, not -m eht.bench_vllm" % argv[:2])
    from eht import bench_vllm  # PYTHONPATH: the bench puts this checkout's python/ first
    a = bench_vllm.parse_args(argv[2:])
    mode = os.environ.get("FAKE_VLLM", "ok")
    if a.ids_file is None:
        fail("no --ids-file: the bench hands its own steps")
    with open(a.ids_file, "rb") as f:
        data = f.read()
    want = 4 * a.batches * sum(a.ids)
    if len(data) != want:
        fail("ids file of %d bytes, not %d" % (len(data), want))
    ids = [int.from_bytes(data[i:i + 4], "little", signed=True) for i in range(0, len(data), 4)]
    if min(ids) < 0 or max(ids) >= a.rows:
        fail("ids %d .. %d outside %d rows" % (min(ids), max(ids), a.rows))
    if mode == "skipped":
        print(json.dumps(dict(bench_vllm.envelope(a), skipped="fake: no torch here")))
        return 0
    if mode == "garbage":
        print("Traceback (most recent call last): not JSON")
        return 0
    if mode == "exit":
        return 3
    if mode == "signal":
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "huge":
        sys.stdout.write("[" + "0," * (3 << 20) + "0]\n")
        return 0
    rep = dict(bench_vllm.envelope(a), torch="fake", triton="fake", gpu={"name": "fake", "sms": 132})
    rows = []
    for k, n in enumerate(a.ids):
        for bg in (False, True):
            row = {"ids": n, "tokens": (n + 23) // 24, "background": bg, "grid": 66 if bg else 132}
            for m in a.modes:
                med = 1.0 + k + (0.5 if bg else 0) + (0.25 if m == "graph" else 0)  # which row, which mode
                row[m] = {"median_ms": med, "p90_ms": med + 0.125, "cpu_ms_per_call": 0.0625,
                          "pool_cpu_ms_per_call": 0.0, "poller_cpu_ms_per_call": 0.0}
            if mode == "badshape" and k == len(a.ids) - 1 and bg:
                del row[a.modes[-1]]["median_ms"]
            rows.append(row)
    rep["results"] = rows[::-1]  # the bench finds rows by ids and placement, not by order
    print(json.dumps(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
