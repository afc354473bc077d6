# SPDX-License-Identifier: Apache-2.0
"""eht bench step's report (bench_step.py says what it measures): a variant's figures as one text line,
and the summary per variant over --rounds."""
import statistics

from .bench_step_time import median_ci


def _spread(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)} if xs else None


def _pooled(pair_lists):
    """Every round's pairs (variant, other) pooled: the median of their differences with its 95 %
    confidence interval and the pair count (us), None without pairs."""
    diffs = [(v - n) * 1e3 for pairs in pair_lists for v, n in pairs]
    if not diffs:
        return None
    lo, hi = median_ci(diffs)
    return {"median": statistics.median(diffs), "ci": [lo, hi], "pairs": len(diffs)}


def summarize_rounds(results):
    """Per (mode, workload, variant) with lookups, in the order first seen: how many rounds measured it
    and the median / min / max over them of the time added back to back and synced (us), of the
    process CPU per step (synced, ms), of eht's pool's part of it (ms) and of what the variant's graph
    adds to the launch call (us); those two None where the rounds did not measure them. And, where
    the copy variant ran in the same rounds, the variant less the copies round by round (back to back
    and synced, us): the floor of any host table measured beside it, which the engine-native targets
    are stated against (None for copy itself and where no round has both). And the same two figures
    taken pair by pair (the median of each pair's difference), and those less the copies' round by
    round (None where the rounds lack them). And the variant alternated with the copies' step itself
    (vs_copy, pair by pair, back to back and synced: over_copy_alternated_*; None where the rounds
    lack it): the same cost over the copies, without two runs' drift between; and its pairs of every
    round pooled, with the 95 % confidence interval of their median (over_copy_pooled_*: what the
    figure resolves, None without pairs in the JSON). For -pieces variants the same two against the
    same pieces without lookups (vs_pieces: over_pieces_alternated_* and over_pieces_pooled_*): what
    the lookups cost that placement. With --trace, the main
    stream's stalls at both joins in the graph's replays, queued and synced (us, None without the
    graph half). Rounds that failed are left out."""
    copies = {}
    for r in results:
        if r["variant"] == "copy" and "error" not in r and "added_us" in r:
            copies[(r["mode"], r["workload"], r.get("round"))] = r
    rows, order = {}, []
    for r in results:
        if "error" in r or r["variant"] == "none" or "added_us" not in r:
            continue
        k = (r["mode"], r["workload"], r["variant"])
        if k not in rows:
            rows[k] = {"b2b": [], "synced": [], "cpu": [], "pool": [], "launch": [], "ob2b": [], "osynced": [],
                       "gqueued": [], "gsynced": [], "pb2b": [], "psynced": [], "opb2b": [], "opsynced": [],
                       "ab2b": [], "asynced": [], "qb2b": [], "qsynced": [], "xb2b": [], "xsynced": [],
                       "yb2b": [], "ysynced": []}
            order.append(k)
        if "back_to_back_added_us" in r:
            rows[k]["b2b"].append(r["back_to_back_added_us"])
        rows[k]["synced"].append(r["added_us"])
        for key, name in (("pb2b", "back_to_back_paired_added_us"), ("psynced", "paired_added_us")):
            if name in r:
                rows[k][key].append(r[name])
        c = copies.get((r["mode"], r["workload"], r.get("round"))) if r["variant"] != "copy" else None
        if c is not None:
            rows[k]["osynced"].append(r["added_us"] - c["added_us"])
            if "back_to_back_added_us" in r and "back_to_back_added_us" in c:
                rows[k]["ob2b"].append(r["back_to_back_added_us"] - c["back_to_back_added_us"])
            for key, name in (("opb2b", "back_to_back_paired_added_us"), ("opsynced", "paired_added_us")):
                if name in r and name in c:
                    rows[k][key].append(r[name] - c[name])
        # alternated with the copies' step (vs_copy) and, for -pieces variants, with the same pieces
        # without lookups (vs_pieces): each pair-by-pair figure, and the pairs themselves to pool
        for src, keys in (("vs_copy", ("ab2b", "asynced", "qb2b", "qsynced")),
                          ("vs_pieces", ("xb2b", "xsynced", "yb2b", "ysynced"))):
            alt = r.get(src) or {}
            for key, name in zip(keys, ("back_to_back_paired_added_us", "paired_added_us")):
                if alt.get(name) is not None:
                    rows[k][key].append(alt[name])
            for key, name in zip(keys[2:], ("back_to_back_pairs_ms", "pairs_ms")):
                if alt.get(name):
                    rows[k][key].append(alt[name])
        st = r["step"]
        rows[k]["cpu"].append(st["cpu_ms_per_step"])
        if st.get("cpu_ms_by_thread"):
            rows[k]["pool"].append(st["cpu_ms_by_thread"]["pool"])
        for how, key in (("queued", "gqueued"), ("synced", "gsynced")):
            g = ((r.get("trace") or {}).get("graph") or {}).get(how) or {}
            stalls = [g.get("stall0_ms"), g.get("stall1_ms")]
            if any(x is not None for x in stalls):
                rows[k][key].append(sum(x for x in stalls if x is not None) * 1e3)
        launch_none = (r.get("none_paired") or {}).get("launch_us")
        if st.get("launch_us") is not None and launch_none is not None:
            rows[k]["launch"].append(st["launch_us"] - launch_none)
    return [{"mode": k[0], "workload": k[1], "variant": k[2], "rounds": len(rows[k]["synced"]),
             "back_to_back_added_us": _spread(rows[k]["b2b"]), "added_us": _spread(rows[k]["synced"]),
             "cpu_ms_per_step": _spread(rows[k]["cpu"]), "pool_cpu_ms_per_step": _spread(rows[k]["pool"]),
             "launch_added_us": _spread(rows[k]["launch"]),
             "paired_back_to_back_added_us": _spread(rows[k]["pb2b"]),
             "paired_added_us": _spread(rows[k]["psynced"]),
             "over_copy_back_to_back_us": _spread(rows[k]["ob2b"]),
             "over_copy_added_us": _spread(rows[k]["osynced"]),
             "over_copy_paired_back_to_back_us": _spread(rows[k]["opb2b"]),
             "over_copy_paired_added_us": _spread(rows[k]["opsynced"]),
             "over_copy_alternated_back_to_back_us": _spread(rows[k]["ab2b"]),
             "over_copy_alternated_added_us": _spread(rows[k]["asynced"]),
             "over_copy_pooled_back_to_back_us": _pooled(rows[k]["qb2b"]),
             "over_copy_pooled_added_us": _pooled(rows[k]["qsynced"]),
             "over_pieces_alternated_back_to_back_us": _spread(rows[k]["xb2b"]),
             "over_pieces_alternated_added_us": _spread(rows[k]["xsynced"]),
             "over_pieces_pooled_back_to_back_us": _pooled(rows[k]["yb2b"]),
             "over_pieces_pooled_added_us": _pooled(rows[k]["ysynced"]),
             "graph_stall_queued_us": _spread(rows[k]["gqueued"]),
             "graph_stall_synced_us": _spread(rows[k]["gsynced"])} for k in order]


def summary_line(s):
    def us(d):
        return "-" if d is None else "%+.1f us (%+.1f .. %+.1f)" % (d["median"], d["min"], d["max"])
    out = "%-8s %-7s %-22s %d rounds: added back to back %s, synced %s; cpu %.2f ms/step" % (
        s["mode"], s["workload"], s["variant"], s["rounds"], us(s["back_to_back_added_us"]), us(s["added_us"]),
        s["cpu_ms_per_step"]["median"])
    if s.get("pool_cpu_ms_per_step"):
        out += " (pool %.2f)" % s["pool_cpu_ms_per_step"]["median"]
    if s.get("launch_added_us"):
        out += "; launch %+.0f us" % s["launch_added_us"]["median"]
    if s.get("paired_added_us"):
        out += "; pair by pair: back to back %s, synced %s" % (us(s.get("paired_back_to_back_added_us")),
                                                               us(s["paired_added_us"]))
    if s.get("over_copy_added_us"):
        out += "; over the copies, round by round: back to back %s, synced %s" % (
            us(s.get("over_copy_back_to_back_us")), us(s["over_copy_added_us"]))
    if s.get("over_copy_paired_added_us"):
        out += "; over the copies pair by pair: back to back %s, synced %s" % (
            us(s.get("over_copy_paired_back_to_back_us")), us(s["over_copy_paired_added_us"]))
    if s.get("over_copy_alternated_added_us") or s.get("over_copy_alternated_back_to_back_us"):
        out += "; alternated with the copies, pair by pair: back to back %s, synced %s" % (
            us(s.get("over_copy_alternated_back_to_back_us")), us(s.get("over_copy_alternated_added_us")))
    def ci(d):
        return "-" if d is None else "%+.1f us [%+.1f .. %+.1f] of %d pairs" % (
            d["median"], d["ci"][0], d["ci"][1], d["pairs"])
    if s.get("over_copy_pooled_added_us") or s.get("over_copy_pooled_back_to_back_us"):
        out += "; the same, every round's pairs pooled (95 %% CI of the median): back to back %s, synced %s" % (
            ci(s.get("over_copy_pooled_back_to_back_us")), ci(s.get("over_copy_pooled_added_us")))
    if s.get("over_pieces_alternated_added_us") or s.get("over_pieces_alternated_back_to_back_us"):
        out += ("; alternated with the same pieces without lookups, pair by pair: back to back %s, synced %s; "
                "pooled: back to back %s, synced %s") % (
            us(s.get("over_pieces_alternated_back_to_back_us")), us(s.get("over_pieces_alternated_added_us")),
            ci(s.get("over_pieces_pooled_back_to_back_us")), ci(s.get("over_pieces_pooled_added_us")))
    if s.get("graph_stall_queued_us") or s.get("graph_stall_synced_us"):
        out += "; stalls at the joins in the graph: queued %s, synced %s" % (
            us(s.get("graph_stall_queued_us")), us(s.get("graph_stall_synced_us")))
    return out


def line(r):
    if "error" in r:
        return "%-8s %-7s %-22s error: %s" % (r["mode"], r["workload"], r["variant"], r["error"])
    s = r["step"]
    out = "%-8s %-7s %-22s step %8.3f ms (p90 %8.3f)" % (r["mode"], r["workload"], r["variant"], s["median_ms"],
                                                          s["p90_ms"])
    if "added_us" in r:
        out += "  added %+9.1f us (%+6.2f %%)" % (r["added_us"], r["added_pct"])
        if r.get("none_paired"):
            out += " [%+.1f us against the none run]" % r["added_vs_none_alone_us"]
    out += "  cpu %7.2f ms/step" % s["cpu_ms_per_step"]
    byt = s.get("cpu_ms_by_thread")
    if byt and (byt["pool"] or byt["poller"]):
        out += " (pool %.2f, poller %.2f" % (byt["pool"], byt["poller"])
        runs = s.get("runs_per_step_by_thread") or {}
        if runs.get("poller") is not None:  # its naps: how often it was put on a CPU
            out += " in %.0f runs" % runs["poller"]
        out += ")"
    if "launch_us" in s and (r.get("none_paired") or {}).get("launch_us") is not None:
        out += "  launch %.0f us (%+.0f)" % (s["launch_us"], s["launch_us"] - r["none_paired"]["launch_us"])
    if "lookups_alone" in r:
        out += "  lookups alone %7.3f ms" % r["lookups_alone"]["median_ms"]
    if r.get("eager_call_us"):  # -pieces: each table's eager call on the launching thread, synced steps
        out += "  eager calls %s us" % " / ".join("%.1f (p90 %.1f)" % (c["median"], c["p90"]) if c else "-"
                                                  for c in r["eager_call_us"])
    if "back_to_back_added_us" in r:
        out += "\n    back to back: step %.3f ms, added %+.1f us (%+.2f %%), cpu %.2f ms/step" % (
            r["back_to_back"]["median_ms"], r["back_to_back_added_us"], r["back_to_back_added_pct"],
            r["back_to_back"]["cpu_ms_per_step"])
    vc = r.get("vs_copy")
    if r.get("vs_copy_error"):
        out += "\n    alternated with the copies: not measured (%s)" % r["vs_copy_error"]
    if vc:
        def ci(key):  # the pair-by-pair median's 95 % interval, where the result has it
            c = vc.get(key)
            return " [%+.1f .. %+.1f]" % (c[0], c[1]) if c else ""
        out += ("\n    alternated with the copies: added %+.1f us back to back (pair by pair %+.1f%s), %+.1f synced "
                "(%+.1f%s)") % (vc["back_to_back_added_us"], vc["back_to_back_paired_added_us"],
                                ci("back_to_back_paired_added_ci_us"), vc["added_us"], vc["paired_added_us"],
                                ci("paired_added_ci_us"))
    vp = r.get("vs_pieces")
    if r.get("vs_pieces_error"):
        out += "\n    alternated with the same pieces without lookups: not measured (%s)" % r["vs_pieces_error"]
    if vp:
        out += ("\n    alternated with the same pieces without lookups: added %+.1f us back to back (pair by pair "
                "%+.1f), %+.1f synced (%+.1f)") % (vp["back_to_back_added_us"], vp["back_to_back_paired_added_us"],
                                                   vp["added_us"], vp["paired_added_us"])
    for q, label in (("timeline", "timeline"), ("timeline_queued", "timeline, queued")):
        tl = r.get(q)
        if not tl:
            continue
        out += ("\n    %s: span %.0f us, model kernels %.0f us%s; eht: %d kernels %.0f us (grid <= %d), "
                "%d copies %.0f us, from %s to %s us" % (
                    label, tl["span_us"], tl["model_kernel_us"],
                    " (%+.0f against none)" % tl["model_slowdown_us"] if "model_slowdown_us" in tl else "",
                    tl["eht_kernels"], tl["eht_kernel_us"], tl["eht_max_grid"], tl["eht_copies"], tl["eht_copy_us"],
                    "-" if tl["eht_first_us"] is None else "%.0f" % tl["eht_first_us"],
                    "-" if tl["eht_last_us"] is None else "%.0f" % tl["eht_last_us"]))
        if tl.get("main_idle_us") is not None:
            out += "; the model's stream idle %.1f us%s, longest gap %.1f us" % (
                tl["main_idle_us"], " (%+.1f against none)" % tl["main_idle_added_us"] if "main_idle_added_us" in tl
                else "", tl["main_longest_gap_us"])
        if tl.get("main_eht"):
            out += "; on the model's stream: " + ", ".join(
                "%s %gx %.1f us" % (k, v["launches"], v["us"]) for k, v in sorted(tl["main_eht"].items()))
        if tl.get("gap_us") is not None:
            out += "; idle between steps %.1f us%s" % (
                tl["gap_us"], " (%+.1f against none)" % tl["gap_added_us"] if "gap_added_us" in tl else "")
    t = r.get("trace")
    if t:
        f = lambda k: ("%.3f" % t[k]) if t.get(k) is not None else "-"  # noqa: E731
        out += "\n    eager: step %s ms, layers %s (interference %s), lookup0 %s / lookup1 %s, stall0 %s / stall1 %s" % (
            f("step_ms"), f("layers_ms"), f("interference_ms"), f("lookup0_ms"), f("lookup1_ms"), f("stall0_ms"),
            f("stall1_ms"))
        if t.get("graph_error"):
            out += "\n    graph: not timed (%s)" % t["graph_error"]
        for label, gt in sorted((t.get("graph") or {}).items(), key=lambda kv: kv[0] != "synced"):
            g = lambda k: ("%.3f" % gt[k]) if gt.get(k) is not None else "-"  # noqa: E731
            out += "\n    graph, %s: step %s ms, lookup0 %s / lookup1 %s, stall0 %s / stall1 %s" % (
                label, g("step_ms"), g("lookup0_ms"), g("lookup1_ms"), g("stall0_ms"), g("stall1_ms"))
    return out


def markdown_table(summary):
    """The summary as a markdown table, one row per (mode, workload, variant), time added back to back
    [synced] (us): over the step without lookups (the median over the rounds of the pair-by-pair
    figures) or, for a -pieces variant, over the same pieces without lookups (every round's pairs
    pooled); over the copies alternated with it (pooled); then the process's CPU per step (ms, the
    pool's part in parentheses). A figure the rounds lack is '-'."""
    def pair(b2b, synced):
        if b2b is None and synced is None:
            return "-"
        return "%s [%s]" % tuple("-" if d is None else "%+.1f" % d["median"] for d in (b2b, synced))

    out = ["| mode | workload | variant | rounds | over the step without lookups (pieces: the same pieces) "
           "| over the copies (alternated) | CPU ms a step (pool) |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for s in summary:
        if s.get("over_pieces_pooled_back_to_back_us") or s.get("over_pieces_pooled_added_us"):
            base = pair(s.get("over_pieces_pooled_back_to_back_us"), s.get("over_pieces_pooled_added_us"))
        else:
            base = pair(s.get("paired_back_to_back_added_us") or s.get("back_to_back_added_us"),
                        s.get("paired_added_us") or s.get("added_us"))
        over = pair(s.get("over_copy_pooled_back_to_back_us"), s.get("over_copy_pooled_added_us"))
        cpu = s.get("cpu_ms_per_step")
        pool = s.get("pool_cpu_ms_per_step")
        cpus = "-" if cpu is None else "%.2f" % cpu["median"] + ("" if pool is None else " (%.2f)" % pool["median"])
        out.append("| %s | %s | `%s` | %d | %s | %s | %s |" % (s["mode"], s["workload"], s["variant"], s["rounds"],
                                                            base, over, cpus))
    return "\n".join(out)


def main(argv=None):
    """python3 -m eht.bench_step_report REPORT.json...: each `eht bench step --json` report's summary
    as a markdown table (docs/BENCHMARKS.md's form)."""
    import json  # noqa: PLC0415
    import sys  # noqa: PLC0415
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python3 -m eht.bench_step_report REPORT.json...", file=sys.stderr)
        return 2
    for p in paths:
        try:
            with open(p, encoding="utf-8") as f:
                rep = json.load(f)
            summary = rep.get("summary") or summarize_rounds(rep.get("results") or [])
        except (OSError, ValueError, KeyError, TypeError) as e:
            print("%s: not an eht bench step report (%s)" % (p, e), file=sys.stderr)
            return 1
        if len(paths) > 1:
            print("%s:\n" % p)
        print(markdown_table(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
