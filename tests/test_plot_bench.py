#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_plot_bench.py: scripts/plot-bench draws lookup (an older report without "bench", and a newer
one with nulls and fields it does not know), disk, disk --mem-limit, region and step reports into PNG and
SVG files; a failed report and non-JSON input exit non-zero with a message. Exits 77 without
matplotlib."""
import json
import os
import subprocess
import sys
import tempfile

src = os.environ.get("EHT_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..")
script = os.path.join(src, "scripts", "plot-bench")


def have_matplotlib():
    for py in ("/usr/bin/python3", sys.executable):
        if os.path.exists(py) and subprocess.run([py, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            return True
    return False


def main():
    if not have_matplotlib():
        print("SKIP: matplotlib not installed (python3-matplotlib; scripts/deps.sh)", file=sys.stderr)
        return 77
    fails = 0
    with tempfile.TemporaryDirectory() as d:
        old = {"table_gib": 1.0, "rows": 4000, "row_bytes": 264, "format": "raw", "gpu": True, "link_gbs": 50.0,
               "reps": 3, "results": [
                   {"strategy": "direct", "ids": 6144, "ok": True, "median_ms": 0.2, "rows_per_s": 3e7},
                   {"strategy": "host", "ids": 6144, "ok": True, "median_ms": 0.1, "rows_per_s": 6e7},
                   {"strategy": "host", "ids": 196608, "ok": True, "median_ms": 2.0, "rows_per_s": 9.8e7},
                   {"strategy": "sorted", "ids": 196608, "ok": False, "error": "no GPU"}]}
        new = {"bench": "lookup", "eht_version": "0.9.0", "host": "h", "time_utc": "2026-01-01T00:00:00Z",
               "link_gbs": None, "row_bytes": 264, "a_new_field": {"x": 1}, "results": [
                   {"strategy": "auto", "ids": 6144, "ok": True, "median_ms": 0.15, "rows_per_s": None,
                    "speedup_vs_direct": None, "p99_ms": 0.3}]}
        disk = {"bench": "disk", "drive_iops_4k": None, "results": [
            {"ids": 6144, "ok": True, "cold_ms": 30.0, "cold_prefetch_ms": 20.0, "warm_ms": 0.5,
             "memory_host_ms": None},
            {"ids": 196608, "ok": False, "error": "x", "cold_ms": None}]}
        region = {"bench": "region", "thp": False, "results": [
            {"size_gib": 1, "run": 1, "populate_s": 0.5, "populate_gbs": 2.1, "ceiling_fill_gbs": 9.0,
             "pin_s": None}]}
        dmem = {"bench": "disk-mem", "workload": "text:/x/text.u32", "ids": 6144, "table_gib": 2.0,
                "mem_limit_gib": 1.0, "steady_median_ms": 41.0, "hit_rate": 0.62}
        dmem2 = dict(dmem, mem_limit_gib=0.25, steady_median_ms=127.0, hit_rate=None)
        step = {"bench": "step", "results": [
            {"mode": "decode", "workload": "uniform", "variant": "none", "step": {"median_ms": 3.1}},
            {"mode": "decode", "workload": "uniform", "variant": "host+bg-side", "added_pct": 0.3,
             "step": {"median_ms": 3.11, "cpu_ms_per_step": 2.5}},
            {"mode": "prefill", "workload": "text", "variant": "vllm", "added_pct": None, "step": {}},
            {"mode": "prefill", "workload": "text", "variant": "auto-side", "error": "x"}]}
        paths = {}
        for name, rep in (("old", old), ("new", new), ("disk", disk), ("region", region), ("dmem", dmem),
                          ("dmem2", dmem2), ("step", step)):
            paths[name] = os.path.join(d, name + ".json")
            with open(paths[name], "w") as f:
                json.dump(rep, f)
        out = os.path.join(d, "plots")
        for fmt in ("png", "svg"):
            r = subprocess.run([script, paths["old"], paths["new"], paths["disk"], paths["region"], paths["dmem"],
                                paths["dmem2"], paths["step"], "-o", out, "--format", fmt], capture_output=True,
                               text=True)
            want = ["lookup-latency", "lookup-rows", "disk-cold-warm", "region-populate", "disk-mem", "step"]
            for w in want:
                p = os.path.join(out, "%s.%s" % (w, fmt))
                if r.returncode != 0 or not os.path.exists(p) or os.path.getsize(p) < 1000:
                    print("FAIL: %s not drawn (exit %d): %s" % (p, r.returncode, r.stderr), file=sys.stderr)
                    fails += 1
        with open(os.path.join(d, "err.json"), "w") as f:
            json.dump({"error": "cannot open", "command": "eht bench disk"}, f)
        r = subprocess.run([script, os.path.join(d, "err.json"), "-o", out], capture_output=True, text=True)
        if r.returncode == 0 or "cannot open" not in r.stderr:
            print("FAIL: a failed report: exit %d, %r" % (r.returncode, r.stderr), file=sys.stderr)
            fails += 1
        r = subprocess.run([script, "-", "-o", out], input="not json", capture_output=True, text=True)
        if r.returncode == 0 or "not JSON" not in r.stderr:
            print("FAIL: non-JSON input: exit %d, %r" % (r.returncode, r.stderr), file=sys.stderr)
            fails += 1
    print("test_plot_bench: %s" % ("ok" if not fails else "%d failure(s)" % fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
