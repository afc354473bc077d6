#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_bench_vllm.py: `eht bench lookup`'s baseline (vLLM's kernel, timed by python3 -m eht.bench_vllm)
without a GPU or torch: the helper's parser (what it takes and refuses: a usage error is one JSON
object on stdout, exit 2), its {"skipped": why} where torch does not import (exit 0); and the bench's
side, with tests/fake_bench_vllm.py as EHT_PYTHON: the bench hands the helper its own steps and reads
its report into rows vllm and vllm+bg (JSON "baseline" and the table), and a helper that skips, prints
garbage, exits 3, dies of a signal, floods stdout, gives a row the wrong shape or is no program at all
leaves the bench's exit 0 with one line saying why the baseline was not measured. With torch and a GPU
the real run is the device's (eht bench lookup --graph)."""
import contextlib
import importlib
import io
import json
import os
import subprocess
import sys

src = os.environ.get("EHT_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, os.path.join(src, "python"))
sys.path.insert(0, os.path.join(src, "tests"))
from pyutil import Checks  # noqa: E402

check = Checks()
cli = os.environ.get("EHT_CLI")
fake = os.path.join(src, "tests", "fake_bench_vllm.py")


def parse_fails(argv, what):
    from eht import bench_vllm  # noqa: PLC0415
    out = io.StringIO()
    code = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            bench_vllm.parse_args(argv)
        except SystemExit as e:
            code = e.code
    check(code == 2, "%s: exit %r, want 2" % (argv, code))
    try:
        j = json.loads(out.getvalue())
    except ValueError:
        j = {}
    check(what in j.get("error", "") and j.get("exit") == 2, "%s: stdout %r, want an error naming %r"
          % (argv, out.getvalue(), what))


def check_parser():
    from eht import bench_vllm  # noqa: PLC0415
    a = bench_vllm.parse_args(["--table-gib", "0.5", "--ids", "196608,6144", "--reps", "3"])
    check(a.ids == [196608, 6144] and a.reps == 3 and a.batches == 5, "ids and reps: %r" % vars(a))
    check(a.rows == (1 << 29) // 264, "rows from GiB as the bench counts them: %d" % a.rows)
    check(a.modes == ["gpu_ids", "graph"] and a.device == 0 and a.ids_file is None and a.gap_ms == 0.0,
          "defaults: %r" % vars(a))
    a = bench_vllm.parse_args(["--table-gib", "1", "--rows", "1000", "--ids", "24", "--modes", "graph", "--gap-ms", "2.5"])
    check(a.rows == 1000 and a.modes == ["graph"] and a.gap_ms == 2.5, "--rows, --modes and --gap-ms: %r" % vars(a))
    e = bench_vllm.envelope(a)
    check(e["label"] == "vllm (Triton)" and e["layout"] == "split" and e["format"] == "bf16" and
          e["ids_from"] == "uniform" and e["gap_ms"] == 2.5, "envelope: %r" % e)
    parse_fails(["--table-gib", "1"], "--ids")
    parse_fails(["--table-gib", "1", "--ids", "0"], "--ids")
    parse_fails(["--table-gib", "1", "--ids", "6144,x"], "--ids")
    parse_fails(["--table-gib", "1", "--ids", "24", "--modes", "host_ids"], "--modes")
    parse_fails(["--table-gib", "1", "--ids", "24", "--modes", "graph,graph"], "--modes")
    parse_fails(["--table-gib", "1", "--ids", "24", "--reps", "0"], "--reps")
    parse_fails(["--table-gib", "-1", "--ids", "24"], "--table-gib")
    parse_fails(["--table-gib", "1e-7", "--ids", "24"], "no 264-byte row")
    parse_fails(["--table-gib", "1", "--ids", "24", "--ids-file", "/nonexistent/ids"], "no such file")
    parse_fails(["--table-gib", "1", "--ids", "24", "--bogus"], "--bogus")
    parse_fails(["--table-gib", "1", "--ids", "24", "--gap-ms", "-1"], "--gap-ms")


def check_skipped():
    """Where torch does not import the helper says so in one object and exits 0 (torch hidden here, so
    this holds on a machine that has it too)."""
    code = ("import sys; sys.modules['torch'] = None; from eht import bench_vllm; "
            "sys.exit(bench_vllm.main(['--table-gib', '0.01', '--ids', '480,100', '--reps', '2']))")
    env = dict(os.environ, PYTHONPATH=os.path.join(src, "python"))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    check(p.returncode == 0 and len(p.stdout.splitlines()) == 1, "skipped: exit %d, stdout %r, stderr %r"
          % (p.returncode, p.stdout, p.stderr))
    try:
        j = json.loads(p.stdout)
    except ValueError:
        j = {}
    check("torch" in j.get("skipped", ""), "skipped names torch: %r" % j)
    check(j.get("ids") == [480, 100] and j.get("reps") == 2 and "results" not in j, "skipped report: %r" % j)


def bench(args, mode=None, python=fake):
    env = dict(os.environ)
    env.pop("FAKE_VLLM", None)
    if mode:
        env["FAKE_VLLM"] = mode
    if python:
        env["EHT_PYTHON"] = python
    else:
        env.pop("EHT_PYTHON", None)
    return subprocess.run([cli, "bench", "lookup", "--table-gib", "0.01", "--ids", "480,100", "--reps", "2",
                           "--cpu", "--strategies", "host"] + args,
                          capture_output=True, text=True, env=env, timeout=300)


def baseline(p, what):
    check(p.returncode == 0, "%s: exit %d, stderr %r" % (what, p.returncode, p.stderr[-500:]))
    try:
        return json.loads(p.stdout).get("baseline") or {}
    except ValueError:
        check(False, "%s: stdout is not one JSON object: %r" % (what, p.stdout[:300]))
        return {}


def check_bench_reads_helper():
    b = baseline(bench(["--vllm", "--graph", "--json"]), "a good report")
    rows = b.get("results") or []
    check(not b.get("skipped") and len(rows) == 4, "4 rows (2 shapes x 2 grids): %r" % b)
    want = [("vllm", 480, False, 1.0), ("vllm+bg", 480, True, 1.5), ("vllm", 100, False, 2.0), ("vllm+bg", 100, True, 2.5)]
    for r, (name, n, bg, med) in zip(rows, want):
        check(r.get("strategy") == name and r.get("ids") == n and r.get("background") is bg,
              "row %r, want %s of %d ids" % (r, name, n))
        check((r.get("gpu_ids") or {}).get("median_ms") == med and (r.get("graph") or {}).get("median_ms") == med + 0.25,
              "row %s %d: the helper's figures, per mode: %r" % (name, n, r))
        check((r.get("gpu_ids") or {}).get("p90_ms") == med + 0.125 and "host_ids" not in r,
              "row %s %d: p90, and no host-ids mode: %r" % (name, n, r))
        check(isinstance(r.get("distinct_fraction"), float) and r.get("hot_rows") == 0 and r.get("gpu_dedup") is False,
              "row %s %d: the bench's fields: %r" % (name, n, r))
        check(isinstance(r.get("best_rows_per_s"), float), "row %s %d: rows/s of its best mode" % (name, n))
    check(b.get("label") == "vllm (Triton)" and b.get("triton") == "fake" and b.get("ids_from") == "file",
          "the helper's facts carried: %r" % {k: v for k, v in b.items() if k != "results"})
    # --gap: handed to the helper (--gap-ms), whose facts the report carries
    b = baseline(bench(["--vllm", "--gap", "0.5", "--json"]), "with a gap")
    check(b.get("gap_ms") == 0.5 and len(b.get("results") or []) == 4, "the helper's gap: %r" %
          {k: v for k, v in b.items() if k != "results"})
    # without --graph: the eager mode only
    b = baseline(bench(["--vllm", "--json"]), "eager only")
    r = (b.get("results") or [{}])[0]
    check("gpu_ids" in r and "graph" not in r, "without --graph no graph mode: %r" % r)
    # the table
    p = bench(["--vllm"])
    check(p.returncode == 0 and "vllm (Triton): vLLM's lookup algorithm" in p.stdout and
          any(line.startswith("vllm+bg ") for line in p.stdout.splitlines()),
          "the table's baseline rows: %r" % p.stdout[-1500:])


def check_not_measured():
    cases = [("skipped", "fake: no torch here"), ("garbage", "not one JSON object"), ("exit", "exited 3"),
             ("signal", "killed by signal 11"), ("badshape", "not what this bench reads"),
             ("huge", "not one JSON object")]
    for mode, why in cases:
        b = baseline(bench(["--vllm", "--json"], mode), mode)
        check(why in b.get("skipped", "") and "results" not in b, "%s: baseline %r, want skipped: ...%s..." % (mode, b, why))
        p = bench(["--vllm"], mode)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("vllm (Triton): not measured: ")]
        check(p.returncode == 0 and len(lines) == 1 and why in lines[0],
              "%s: the table's one line: %r" % (mode, p.stdout[-800:]))
    b = baseline(bench(["--vllm", "--json"], python="/nonexistent/python3"), "no interpreter")
    check("cannot run /nonexistent/python3" in b.get("skipped", ""), "no interpreter: %r" % b)
    b = baseline(bench(["--no-vllm", "--json"], "exit"), "--no-vllm")
    check(b.get("skipped") == "--no-vllm", "--no-vllm: %r" % b)
    b = baseline(bench(["--json"], "exit"), "default without a GPU")
    check("no GPU" in b.get("skipped", ""), "not asked without a GPU: %r" % b)
    try:
        importlib.import_module("torch")
    except ImportError:  # the real helper here: no torch, one line saying so
        b = baseline(bench(["--vllm", "--json"], python=None), "the real helper without torch")
        check("torch" in b.get("skipped", ""), "the real helper without torch: %r" % b)


def main():
    check_parser()
    check_skipped()
    if not cli:
        print("EHT_CLI not set: the bench's side not checked")
    else:
        check_bench_reads_helper()
        check_not_measured()
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
