#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_plot_bench.py: scripts/plot-bench draws lookup (an older report without "bench", and a newer
one with nulls and fields it does not know), disk, disk --mem-limit, region and step reports into PNG and
SVG files; a failed report and non-JSON input exit non-zero with a message. In the SVGs: one colour
per strategy (every series of a strategy in its colour, strategies apart, the same colour in the
latency and the hot-set plot), vLLM's kernel as the baseline line on both lookup latency plots
(from docs/plots/vllm-baseline.json, its legend saying so; --baseline none drops it), no host
name in any label. Exits 77 without matplotlib."""
import json
import os
import pathlib
import re
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


def strokes(svg, kind):
    """{gid: colour} of the artists plot-bench named KIND-...: a bar's fill (a hatched bar's through its
    pattern), else a line's stroke."""
    out = {}
    for m in re.finditer(r'<g id="(%s-[^"]*)">(.*?)</g>' % kind, svg, re.S):
        body = m.group(2)
        pat = re.search(r"fill: url\(#([^)]+)\)", body)
        if pat:
            c = re.search(r'<pattern id="%s"[^>]*>\s*<rect [^>]*fill="(#[0-9a-f]{6})"' % pat.group(1), svg)
        else:
            c = re.search(r"fill: (#[0-9a-f]{6})", body) or re.search(r"stroke: (#[0-9a-f]{6})", body)
        out[m.group(1)] = c.group(1) if c else None
    return out


def by_strategy(series):
    """{strategy: {colours}} from series-STRATEGY-... ids."""
    out = {}
    for gid, c in series.items():
        out.setdefault(gid.split("-")[1], set()).add(c)
    return out


def check_svgs(out):
    """Grouping by strategy, the baseline line and no host names; returns the failures."""
    fails = 0
    svg = {n: pathlib.Path(out, n + ".svg").read_text(encoding="utf-8")
           for n in ("lookup-latency", "lookup-rows", "lookup-hotset")}
    groups = {n: by_strategy(strokes(svg[n], "series")) for n in svg}
    for n, g in groups.items():
        want = {"direct", "host", "auto"} if n != "lookup-hotset" else {"host", "auto"}
        if not want <= set(g) or any(len(c) != 1 or None in c for c in g.values()):
            print("FAIL: %s: series not one colour per strategy: %r" % (n, g), file=sys.stderr)
            fails += 1
        elif len({next(iter(c)) for c in g.values()}) != len(g):
            print("FAIL: %s: two strategies share a colour: %r" % (n, g), file=sys.stderr)
            fails += 1
    if groups["lookup-latency"].get("host") != groups["lookup-hotset"].get("host"):
        print("FAIL: HOST's colour differs between plots: %r" % groups, file=sys.stderr)
        fails += 1
    for n in ("lookup-latency", "lookup-hotset"):
        base = strokes(svg[n], "baseline")
        if "baseline-vllm" not in base or "vLLM's kernel, standalone, same H200" not in svg[n]:
            print("FAIL: %s: no vLLM baseline line with its legend: %r" % (n, base), file=sys.stderr)
            fails += 1
    # step: the variants' ticks grouped by strategy (each strategy's variants side by side), in its colour
    step = pathlib.Path(out, "step.svg").read_text(encoding="utf-8")
    ticks = re.findall(r"<!-- ((?:vllm|host|auto)[a-z+-]*) -->\s*<g (?:style=\"fill: (#[0-9a-f]{6})\" )?", step)[:4]
    strat = [v.split("-")[0].split("+")[0] for v, _ in ticks]
    runs = [k for i, k in enumerate(strat) if i == 0 or strat[i - 1] != k]
    colours = {k: {c or "#000000" for (v, c), k2 in zip(ticks, strat) if k2 == k} for k in strat}
    if len(ticks) != 4 or len(runs) != len(set(runs)) or colours.get("host") != groups["lookup-latency"].get("host") \
            or any(len(c) != 1 for c in colours.values()):
        print("FAIL: step: variants not grouped by strategy in its colour: %r" % ticks, file=sys.stderr)
        fails += 1
    for n, s in svg.items():
        if "somehost" in s:
            print("FAIL: %s: a host name in a label" % n, file=sys.stderr)
            fails += 1
    return fails


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
        new = {"bench": "lookup", "eht_version": "0.9.0", "host": "somehost", "time_utc": "2026-01-01T00:00:00Z",
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
            {"mode": "decode", "workload": "uniform", "variant": "auto-side", "added_pct": 0.2, "step": {}},
            {"mode": "decode", "workload": "uniform", "variant": "vllm", "added_pct": 0.5, "step": {}},
            {"mode": "decode", "workload": "uniform", "variant": "host-side", "added_pct": 0.4, "step": {}},
            {"mode": "prefill", "workload": "text", "variant": "vllm", "added_pct": None, "step": {}},
            {"mode": "prefill", "workload": "text", "variant": "auto-side", "error": "x"}]}
        def hot(k, prefill):  # `eht bench lookup --hotset K --graph --ids-on both` on real text
            return {"bench": "lookup", "host": "somehost", "results": [
                {"strategy": s, "ids": 196608, "ok": True, "hot_rows": k, "hot_hit_fraction": 0.3 if k else None,
                 "link_floor_ms": 0.94, "graph": {"median_ms": prefill}, "gpu_ids": {"median_ms": prefill + 0.1},
                 "host_ids": {"median_ms": prefill + 0.5}} for s in ("host", "auto")]}
        paths = {}
        for name, rep in (("old", old), ("new", new), ("hot0", hot(0, 1.4)), ("hot1m", hot(1 << 20, 0.75)),
                          ("disk", disk), ("region", region), ("dmem", dmem), ("dmem2", dmem2), ("step", step)):
            paths[name] = os.path.join(d, name + ".json")
            with open(paths[name], "w") as f:
                json.dump(rep, f)
        out = os.path.join(d, "plots")
        for fmt in ("png", "svg"):
            names = ("old", "new", "hot0", "hot1m", "disk", "region", "dmem", "dmem2", "step")
            r = subprocess.run([script] + [paths[n] for n in names] + ["-o", out, "--format", fmt],
                               capture_output=True, text=True)
            want = ["lookup-latency", "lookup-rows", "lookup-hotset", "disk-cold-warm", "region-populate", "disk-mem",
                    "step"]
            for w in want:
                p = os.path.join(out, "%s.%s" % (w, fmt))
                if r.returncode != 0 or not os.path.exists(p) or os.path.getsize(p) < 1000:
                    print("FAIL: %s not drawn (exit %d): %s" % (p, r.returncode, r.stderr), file=sys.stderr)
                    fails += 1
        if not fails:
            fails += check_svgs(out)
        r = subprocess.run([script, paths["old"], paths["hot0"], paths["hot1m"], "--baseline", "none", "-o",
                            os.path.join(d, "nobase"), "--format", "svg"], capture_output=True, text=True)
        if r.returncode != 0 or any("baseline-vllm" in pathlib.Path(d, "nobase", n + ".svg").read_text()
                                    for n in ("lookup-latency", "lookup-hotset")):
            print("FAIL: --baseline none still draws the line (exit %d): %s" % (r.returncode, r.stderr),
                  file=sys.stderr)
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
