# SPDX-License-Identifier: Apache-2.0
"""eht bench step's clocks (bench_step.py says what it measures): the process's and its threads' CPU,
a graph's replays timed synced, alternated with the step without lookups or queued back to back,
eager steps traced with events, and profiled timelines (torch.profiler) summarized."""
import bisect
import json
import math
import os
import resource
import statistics
import time


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _thread_kind(name):
    return ("pool" if name.startswith("eht-pool/") else "poller" if name == "eht-bell"
            else "eht" if name.startswith("eht-") else "rest")


def _thread_readings():
    """(kind, CPU seconds, times run on a CPU or None) of each of this process's threads; None without
    /proc. Nanoseconds and runs from schedstat where the kernel keeps it, else clock ticks from stat."""
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    got = []
    for tid in tids:
        base = "/proc/self/task/%s/" % tid
        try:
            with open(base + "comm") as f:
                name = f.read().strip()
            try:
                with open(base + "schedstat") as f:
                    fields = f.read().split()
                sec, runs = int(fields[0]) * 1e-9, int(fields[2])
            except (OSError, ValueError, IndexError):
                with open(base + "stat") as f:
                    st = f.read()
                fields = st[st.rindex(")") + 2:].split()
                sec, runs = (int(fields[11]) + int(fields[12])) / tick, None
        except (OSError, ValueError, IndexError):
            continue  # (the thread ended while we looked)
        got.append((_thread_kind(name), sec, runs))
    return got


def thread_stats():
    """One reading of this process's threads by kind, from their names (eht names its own): (CPU
    seconds, times put on a CPU), each {"pool": eht's CPU pool (eht-pool/N), "poller": the doorbell
    poller (eht-bell), "eht": eht's other threads, "rest": every other thread (Python's, the CUDA
    driver's)}. The CPU is {} without /proc, the runs (wake-ups and preemptions, schedstat) {} where
    the kernel keeps no schedstat. A thread that ends between two readings takes its figures with it
    (eht's threads live as long as their engine)."""
    got = _thread_readings()
    if got is None:
        return {}, {}
    cpu = {"pool": 0.0, "poller": 0.0, "eht": 0.0, "rest": 0.0}
    runs = {"pool": 0, "poller": 0, "eht": 0, "rest": 0}
    for kind, sec, n in got:
        cpu[kind] += sec
        runs[kind] += n or 0
    return cpu, (runs if all(n is not None for _, _, n in got) else {})


def thread_cpu_s():
    """This process's CPU seconds by kind of thread (thread_stats)."""
    return thread_stats()[0]


def thread_runs():
    """Times this process's threads were put on a CPU, by kind (thread_stats): how often the poller
    and the pool wake in a step."""
    return thread_stats()[1]


def thread_cpu_ms_per_step(c0, c1, steps):
    """The CPU per step (ms) of each kind of thread between two thread_cpu_s() readings."""
    if not c0 or not c1 or steps <= 0:
        return None
    return {k: (c1[k] - c0[k]) * 1e3 / steps for k in c1}


def pct(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]

def _warm(torch, g, feed, warmup, blocking):
    """The timing events of a run, after its warmup replays of g (fed 0 .. warmup - 1)."""
    start = torch.cuda.Event(enable_timing=True, blocking=blocking)
    end = torch.cuda.Event(enable_timing=True, blocking=blocking)
    for i in range(warmup):
        feed(i)
        g.replay()
    torch.cuda.synchronize()
    return start, end


def _replay_ms(start, end, graph, launches=None):
    """One replay of graph between the two events: its GPU time (ms), which includes the launch (the
    start event runs at once on the idle stream). launches: gets the launch call's own time (us)."""
    start.record()
    l0 = time.perf_counter()
    graph.replay()
    l1 = time.perf_counter()
    end.record()
    end.synchronize()
    if launches is not None:
        launches.append((l1 - l0) * 1e6)
    return start.elapsed_time(end)


def time_graph(torch, g, feed, reps, warmup, blocking):
    """Median/p90 (ms) of replays timed by events, and the process CPU (ms) per replay."""
    start, end = _warm(torch, g, feed, warmup, blocking)
    times = []
    c0, w0 = cpu_s(), time.perf_counter()
    for i in range(reps):
        feed(warmup + i)
        times.append(_replay_ms(start, end, g))
    c1, w1 = cpu_s(), time.perf_counter()
    return {"median_ms": statistics.median(times), "p90_ms": pct(times, 0.9),
            "cpu_ms_per_step": (c1 - c0) * 1e3 / reps, "wall_ms_per_step": (w1 - w0) * 1e3 / reps}


def _paired(tv, tn):
    """The figures of pairs (variant, none) timed in order, ms: the median of each pair's difference (a
    GPU whose clocks change over seconds moves both runs of a pair alike, where it moves the two
    medians apart by chance), its 95 % confidence interval (median_ci), and every pair in the order
    run (to 0.1 us: how far the pairs spread, for a reader's own statistic)."""
    diffs = [v - n for v, n in zip(tv, tn)]
    return {"paired_added_ms": statistics.median(diffs), "paired_added_ci_ms": median_ci(diffs),
            "pairs_ms": [[round(v, 4), round(n, 4)] for v, n in zip(tv, tn)]}


def abba(n):
    """The order of n pairs of runs (variant, none), n rounded up to even: the variant first in one pair,
    second in the next (ABBA), so that neither is always the one run first, or always the one that
    follows the other (a fixed order put tens of microseconds of the runs' order into the difference).
    Yields (pair index, variant first)."""
    for i in range(n + n % 2):
        yield i, i % 2 == 0


def time_paired(torch, g_none, g, feed, reps, warmup, blocking, none_cpu_ms):
    """Replays of the variant's graph and the step without lookups, alternated (the GPU's clocks drift
    over a run by more than the effects measured) in ABBA order (abba): both medians and p90s, and the
    variant's process CPU per step (the loop's, less the none step's own, measured alone), and the median
    of the pairs' differences (paired_added_ms)."""
    start, end = _warm(torch, g, feed, warmup, blocking)
    tv, tn, lv, ln = [], [], [], []
    reps += reps % 2
    (t0, r0), c0, w0 = thread_stats(), cpu_s(), time.perf_counter()
    for i, var_first in abba(reps):
        pair = ((g, tv, lv), (g_none, tn, ln))
        for graph, times, launches in (pair if var_first else pair[::-1]):
            feed(warmup + i)
            times.append(_replay_ms(start, end, graph, launches))
    c1, w1, (t1, r1) = cpu_s(), time.perf_counter(), thread_stats()
    var = {"median_ms": statistics.median(tv), "p90_ms": pct(tv, 0.9), **_paired(tv, tn),
           "cpu_ms_per_step": (c1 - c0) * 1e3 / reps - none_cpu_ms,
           "wall_ms_per_step": (w1 - w0) * 1e3 / reps - statistics.median(tn),
           # eht's threads work for the variant's steps only; "rest" includes the none steps' own
           "cpu_ms_by_thread": thread_cpu_ms_per_step(t0, t1, reps),
           # times each kind of thread was put on a CPU per step (the poller's naps, the pool's wake-ups)
           "runs_per_step_by_thread": ({k: (r1[k] - r0[k]) / reps for k in r1} if r0 and r1 and reps > 0 else None),
           # the graph's launch call (part of a synced step's time): the variant's graph has more nodes
           "launch_us": statistics.median(lv)}
    none = {"median_ms": statistics.median(tn), "p90_ms": pct(tn, 0.9), "launch_us": statistics.median(ln)}
    return var, none


def back_to_back_pairs(reps, share=2):
    """How many pairs of bursts time_back_to_back runs for reps timed replays: reps / share (at least
    6). Each pair gives one difference, and 6 of them (the count before) left a decode step's figure
    spreading by tens of microseconds between rounds; a pair of decode bursts takes ~45 ms (share 2).
    A prefill's takes ~0.75 s and its bursts spread a fifth as far as its synced pairs (share 6)."""
    return max(6, reps // share)


def median_ci(xs, level=0.95):
    """The distribution-free confidence interval of the median of xs, (low, high), from their order
    statistics (the binomial's tails); (min, max) where xs are too few for the level, None for none.
    A power-capped GPU's prefill steps spread by milliseconds: this says what a median resolves."""
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return None
    # [s[j], s[n-1-j]] covers the median with 1 - 2 P(Binomial(n, 1/2) <= j): the largest such j
    j, tail = -1, math.comb(n, 0) / 2.0 ** n
    while tail <= (1.0 - level) / 2:
        j += 1
        tail += math.comb(n, j + 1) / 2.0 ** n
    return (s[j], s[n - 1 - j]) if j >= 0 else (s[0], s[-1])


def time_back_to_back(torch, g_none, g, feed, reps, warmup, blocking, burst=8, share=2):
    """Steps as a pipelining engine runs them: bursts of `burst` replays queued back to back (each fed
    new ids by a copy on the stream, no host sync between), so each launch hides behind the step
    before it and what is left is the GPU's time per step. Bursts of the variant and of the step
    without lookups alternate in ABBA order (abba); medians and p90s of the per-step time of each
    burst (ms), and the variant's process CPU per step."""
    def burst_ms(graph, first):
        start = torch.cuda.Event(enable_timing=True, blocking=blocking)
        end = torch.cuda.Event(enable_timing=True, blocking=blocking)
        start.record()
        for i in range(burst):
            feed(first + i)
            graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / burst
    burst_ms(g, 0)
    burst_ms(g_none, 0)
    tv, tn, cpu = [], [], 0.0

    def variant(k):
        nonlocal cpu
        c0 = cpu_s()
        tv.append(burst_ms(g, warmup + k * burst))
        cpu += cpu_s() - c0

    for k, var_first in abba(back_to_back_pairs(reps, share)):
        if var_first:
            variant(k)
        tn.append(burst_ms(g_none, warmup + k * burst))
        if not var_first:
            variant(k)
    var = {"median_ms": statistics.median(tv), "p90_ms": pct(tv, 0.9), "cpu_ms_per_step": cpu * 1e3 / (len(tv) * burst),
           **_paired(tv, tn)}
    return var, {"median_ms": statistics.median(tn), "p90_ms": pct(tn, 0.9)}


TRACE_KEYS = ("step", "lookup0", "lookup1", "stall0", "stall1", "layers")


def mark_times(elapsed, place):
    """One traced step's figures (ms) from its marks (trace_step's points): elapsed(a, b) gives the
    time between marks a and b, or None where either is missing. The step; each table's lookup (side:
    from the fork, table 1 after table 0; inline: its own span); the main stream's stall at each
    consuming layer (waiting for the rows, or running the inline lookup); the layers (step less the
    stalls)."""
    got = {"step": elapsed("start", "end")}
    for t in range(2):
        got["stall%d" % t] = elapsed("before_wait%d" % t, "after_wait%d" % t)
        first = ("side_start" if t == 0 else "lookup0_end") if place == "side" else "lookup%d_start" % t
        got["lookup%d" % t] = elapsed(first, "lookup%d_end" % t)
    stalls = [got["stall0"], got["stall1"]]
    got["layers"] = None if got["step"] is None else got["step"] - sum(x for x in stalls if x is not None)
    return got


def median_marks(runs):
    """{KEY_ms: median over the runs of mark_times' KEY (None where no run has it)}."""
    out = {}
    for k in TRACE_KEYS:
        xs = [r[k] for r in runs if r[k] is not None]
        out[k + "_ms"] = statistics.median(xs) if xs else None
    return out


def _elapsed(marks):
    return lambda a, b: marks[a].elapsed_time(marks[b]) if a in marks and b in marks else None


def trace_step(torch, step, engines, place, side, feed, reps):
    """Medians (ms) over eager steps of mark_times' figures."""
    runs = []
    for i in range(reps):
        feed(i)
        torch.cuda.synchronize()
        m = {}
        step.body(engines, place, side, marks=m)
        torch.cuda.synchronize()
        runs.append(mark_times(_elapsed(m), place))
    return median_marks(runs)


def trace_graph(torch, step, engines, place, side, feed, reps, burst=8):
    """--trace's graph half: the step captured with its marks as event nodes (torch.cuda.Event(...,
    external=True)), so the joins are timed in the replays themselves, unprofiled: each replay after a
    sync ("synced"), and bursts of `burst` replays queued back to back ("queued": the marks time each
    burst's last replay, queued behind the others). {"synced": ..., "queued": ...}, each median_marks
    over reps runs; None where this torch cannot record events inside a graph."""
    try:
        torch.cuda.Event(enable_timing=True, external=True)
    except TypeError:
        return None
    m = {}
    g = step.capture(engines, place, side, marks=m)
    out = {}
    for label, n in (("synced", 1), ("queued", burst)):
        runs = []
        for i in range(reps):
            torch.cuda.synchronize()
            for k in range(n):
                feed(i * n + k)
                g.replay()
            torch.cuda.synchronize()
            runs.append(mark_times(_elapsed(m), place))
        out[label] = median_marks(runs)
    del g
    return out


def _eht_piece(e):
    """eht's kernels, and copies other than device to device (the bench feeds ids that way)."""
    name = e.get("name", "")
    return name.startswith("eht_") or e.get("cat") == "gpu_memcpy" and "DtoD" not in name


def _model_kernel(e):
    """A kernel of the model's (every kernel not eht's)."""
    return e.get("cat") == "kernel" and not e.get("name", "").startswith("eht_")


def _gpu_events(trace_events, per_replay=1):
    """The kernels, copies and memsets that graph launches ran, grouped per replay (in order) of
    per_replay graph launches each (vLLM's pieces: Pieces.launches, one step in three graphs). Each
    replay's group also gets eht's pieces that no launch ran but that started at or after its first
    event and before the next replay's: a pushed request's copies, which eht's CPU issues on its own
    stream as the step runs (other work of no launch is left out)."""
    launches = {e["args"]["correlation"] for e in trace_events
                if e.get("ph") == "X" and "GraphLaunch" in e.get("name", "") and "correlation" in e.get("args", {})}
    per, strays = {}, []
    for e in trace_events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            c = e.get("args", {}).get("correlation")
            if c in launches:
                per.setdefault(c, []).append(e)
            elif _eht_piece(e):
                strays.append(e)
    order = sorted(per)
    groups = [sum((per[c] for c in order[i:i + per_replay]), [])
              for i in range(0, len(order) - per_replay + 1, per_replay)]
    starts = [min(x["ts"] for x in g) for g in groups]
    for e in strays:
        k = bisect.bisect_right(starts, e["ts"]) - 1
        if k >= 0:
            groups[k].append(e)
    return [sorted(g, key=lambda e: e["ts"]) for g in groups]


def _stream(e):
    return e.get("args", {}).get("stream", e.get("tid"))


def _main_stream(evs):
    """The stream that ran the most model-kernel time in one replay's events (None without any)."""
    busy = {}
    for e in evs:
        if _model_kernel(e):
            busy[_stream(e)] = busy.get(_stream(e), 0.0) + e["dur"]
    return max(busy, key=busy.get) if busy else None


def main_stream_eht(evs):
    """eht's kernels on the model's own stream in one replay: {name: [launches, us]}. A split
    lookup's halves run there (its ring kernel where the prefetch starts, its join, which polls for
    the rows and then dequantizes, where it is waited for), so their time is the model's: a join
    that ran long waited for rows, one near a dequant's time did not."""
    main, out = _main_stream(evs), {}
    for e in evs:
        if main is None or _stream(e) != main:
            continue
        if e.get("cat") == "kernel" and e.get("name", "").startswith("eht_"):
            n, us = out.get(e["name"], (0, 0.0))
            out[e["name"]] = [n + 1, us + e["dur"]]
    return out


def main_stream_idle(evs):
    """(idle us, longest gap us) of the stream that ran the most model-kernel time in one replay's
    events: the time between its first event's start and its last one's end when nothing ran on it.
    Beside the step without lookups' figure, what the model's stream waited for (rows not yet there at
    a join, or anything else it depends on) rather than ran slower."""
    main = _main_stream(evs)
    if main is None:
        return None, None
    idle, longest, end = 0.0, 0.0, None
    for e in sorted((e for e in evs if _stream(e) == main), key=lambda e: e["ts"]):
        if end is not None and e["ts"] > end:
            idle += e["ts"] - end
            longest = max(longest, e["ts"] - end)
        end = e["ts"] + e["dur"] if end is None else max(end, e["ts"] + e["dur"])
    return idle, longest


def summarize_replay(evs):
    """One replay's GPU events -> where the time went (us): span, model kernels, eht kernels and copies,
    and the model's stream's idle time (main_stream_idle)."""
    t0 = min(e["ts"] for e in evs)
    t1 = max(e["ts"] + e["dur"] for e in evs)
    idle, longest = main_stream_idle(evs)
    out = {"span_us": t1 - t0, "model_kernel_us": 0.0, "eht_kernel_us": 0.0, "eht_copy_us": 0.0,
           "eht_kernels": 0, "eht_copies": 0, "eht_max_grid": 0, "eht_first_us": None, "eht_last_us": None,
           "main_idle_us": idle, "main_longest_gap_us": longest, "main_eht": main_stream_eht(evs)}
    for e in evs:
        if _model_kernel(e):
            out["model_kernel_us"] += e["dur"]
            continue
        if not _eht_piece(e):
            continue
        if e.get("cat") == "kernel":
            out["eht_kernel_us"] += e["dur"]
            out["eht_kernels"] += 1
            grid = e.get("args", {}).get("grid") or [0]
            blocks = 1
            for g in grid:
                blocks *= g
            out["eht_max_grid"] = max(out["eht_max_grid"], blocks)
        else:
            out["eht_copy_us"] += e["dur"]
            out["eht_copies"] += 1
        a, b = e["ts"] - t0, e["ts"] + e["dur"] - t0
        out["eht_first_us"] = a if out["eht_first_us"] is None else min(out["eht_first_us"], a)
        out["eht_last_us"] = b if out["eht_last_us"] is None else max(out["eht_last_us"], b)
    return out


def median_main_eht(per_replay):
    """main_stream_eht of each replay -> {name: {"launches", "us"}}: per kernel, the median over the
    replays of its launches and of its time (a replay that ran none counts 0)."""
    names = sorted({k for r in per_replay for k in r})
    return {k: {"launches": statistics.median([r.get(k, (0, 0.0))[0] for r in per_replay]),
                "us": statistics.median([r.get(k, (0, 0.0))[1] for r in per_replay])} for k in names}


def replay_gaps(reps):
    """Per-replay GPU events (in launch order, as _gpu_events gives them) -> the idle gaps (us) between
    one replay's last event's end and the next replay's first event's start (never below 0)."""
    return [max(0.0, min(e["ts"] for e in b) - max(e["ts"] + e["dur"] for e in a))
            for a, b in zip(reps, reps[1:]) if a and b]


# --timeline's profiles of a variant's graph: (report key, replays, queued, file suffix): after each
# sync, then queued as a burst of the back-to-back figure's default 8.
TIMELINES = (("timeline", 5, False, ""), ("timeline_queued", 8, True, "-queued"))


def timeline(torch, g, feed, reps, path, queued=False):
    """Profiles reps replays of g (a CUDA graph, or Pieces: a step in g.launches graphs; fed new ids),
    each after a sync or (queued) all back to back with a sync at the end only, writes the trace to
    path and returns the medians of summarize_replay over the replays, and for queued ones of
    replay_gaps as gap_us (None where the profiler saw none)."""
    from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415
    for i in range(3):
        feed(i)
        g.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(reps):
            feed(3 + i)
            if not queued:
                torch.cuda.synchronize()
            g.replay()
            if not queued:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
    prof.export_chrome_trace(path)
    with open(path) as f:
        reps_seen = _gpu_events(json.load(f).get("traceEvents", []), getattr(g, "launches", 1))
    sums = [summarize_replay(r) for r in reps_seen if r]
    if not sums:
        return None
    out = {"file": os.path.basename(path), "replays": len(sums), "queued": queued}
    for k in sums[0]:
        if k == "main_eht":
            continue
        xs = [x[k] for x in sums if x[k] is not None]
        out[k] = statistics.median(xs) if xs else None
    out["main_eht"] = median_main_eht([x["main_eht"] for x in sums])
    if queued:
        gaps = replay_gaps(reps_seen)
        out["gap_us"] = statistics.median(gaps) if gaps else None
    return out
