#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_bench_step.py: `eht bench step` without a GPU: the CLI runs the Python bench (--help, --dry-run
--json gives the report's envelope with the plan of each mode and the parsed variants), bad options
exit 2 with a message, the variant parser reads every form, and --rounds' summary takes the median and
range of each variant's rounds. With torch and a GPU the real run is the
device script's (scripts/gpu-step.sh); here a run without them must exit 77."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

src = os.environ.get("EHT_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, os.path.join(src, "python"))
cli = os.environ.get("EHT_CLI")
fails = 0


def check(cond, what):
    global fails
    if not cond:
        print("FAIL:", what)
        fails += 1


def run(args):
    cmd = [cli, "bench", "step"] if cli else [sys.executable, "-m", "eht.bench_step"]
    env = dict(os.environ, PYTHONPATH=os.path.join(src, "python"))
    return subprocess.run(cmd + args, capture_output=True, text=True, env=env, timeout=120)


FAKE_SMI = """#!/bin/sh
echo "$@" > "$0.args"
[ -n "$FAKE_SMI_SILENT" ] && exit 3
while :; do
  echo "1440, 697.38, 700.00, 0x0000000000000004"
  echo "1500, 690.00, 700.00, 0x0000000000000004"
  echo "1980, 650.00, 700.00, 0x0000000000000000"
  echo "1410, 699.00, 700.00, 0x0000000000000024"
  echo "345, 72.62, 700.00, 0x0000000000000001"
  echo "[N/A], [N/A], 700.00, [N/A]"
  sleep 0.02
done
"""


def pieces_checks(bm):
    """bench_step_model.Pieces over a fake torch that logs every stream operation: the pieces captured
    once each (after an eager warm-up), and each replay launching both lookups eagerly on the side
    stream after the ids, the graphs in order with the main stream waiting for each table's lookup
    before the piece that reads it, and the side stream joined at the end."""
    log = []

    class Stream:
        def __init__(self, name):
            self.name = name

        def wait_stream(self, other):
            log.append(("wait_stream", self.name, other.name))

        def wait_event(self, ev):
            log.append(("wait_event", self.name, ev.name))

    main = Stream("main")
    cur = [main]

    class Ev:
        made = 0

        def __init__(self):
            self.name = "ev%d" % Ev.made
            Ev.made += 1

        def record(self, stream):
            log.append(("record", self.name, stream.name))

    class Graph:
        def __init__(self):
            self.piece = None

        def replay(self):
            log.append(("replay", self.piece))

    capturing = [None]

    class Ctx:
        def __init__(self, on_enter, on_exit):
            self.on_enter, self.on_exit = on_enter, on_exit

        def __enter__(self):
            self.on_enter()

        def __exit__(self, *a):
            self.on_exit()

    class Cuda:
        Event = Ev
        CUDAGraph = Graph

        @staticmethod
        def Stream():
            return Stream("warm")

        @staticmethod
        def current_stream():
            return cur[-1]

        @staticmethod
        def stream(s):
            return Ctx(lambda: cur.append(s), cur.pop)

        @staticmethod
        def graph(g):
            return Ctx(lambda: capturing.__setitem__(0, g), lambda: capturing.__setitem__(0, None))

        @staticmethod
        def synchronize():
            pass

    class Torch:
        cuda = Cuda

    class FakeStep:
        torch, elayers, L, ids = Torch, [1, 14], 16, ["ids0", "ids1"]

        def piece(self, lo, hi, first):
            if capturing[0] is not None:
                capturing[0].piece = (lo, hi)
            log.append(("piece", lo, hi, first, cur[-1].name, capturing[0] is not None))

        def dst(self, t):
            return "rows%d" % t

    class Engine:
        def __init__(self, t):
            self.t = t

        def run(self, ids, out, stream=None):
            log.append(("run", self.t, ids, out, stream.name, cur[-1].name))
            if self.t == 1:
                time.sleep(0.003)  # table 1's call is the slow one: its time must be table 1's

        def start(self, ids, out):
            log.append(("start", self.t, ids, out, cur[-1].name, capturing[0] is not None))

        def wait(self, out):
            log.append(("wait", self.t, out, cur[-1].name, capturing[0] is not None))

    side = Stream("side")
    p = bm.Pieces(FakeStep(), [Engine(0), Engine(1)], side)
    made = [x for x in log if x[0] == "piece"]
    check(made == [("piece", 0, 1, True, "warm", False), ("piece", 1, 14, False, "warm", False),
                   ("piece", 14, 16, False, "warm", False), ("piece", 0, 1, True, "main", True),
                   ("piece", 1, 14, False, "main", True), ("piece", 14, 16, False, "main", True)],
          "the pieces warmed up eagerly, then captured once each: %r" % made)
    del log[:]
    p.replay()
    e0, e1 = p.events[0].name, p.events[1].name
    want = [("wait_stream", "side", "main"), ("run", 0, "ids0", "rows0", "side", "side"), ("record", e0, "side"),
            ("run", 1, "ids1", "rows1", "side", "side"), ("record", e1, "side"), ("replay", (0, 1)),
            ("wait_event", "main", e0), ("replay", (1, 14)), ("wait_event", "main", e1), ("replay", (14, 16)),
            ("wait_stream", "main", "side")]
    check(log == want, "a replay: eager lookups on the side stream, the pieces in order, each waiting for its "
          "table: %r" % log)
    p.replay()
    calls = p.take_call_us()  # (the warm-up made no call: capture_graphs warms the pieces only)
    check(calls is not None and [c["calls"] for c in calls] == [2, 2] and calls[0]["median"] < 2500
          and calls[1]["median"] >= 2900 and calls[1]["p90"] >= calls[1]["median"],
          "each table's eager calls timed on its own: %r" % calls)
    check(p.take_call_us() is None, "taken once: %r" % p.call_us)
    bare = bm.Pieces(FakeStep(), [], side)
    del log[:]
    bare.replay()
    check(log == [("replay", (0, 1)), ("replay", (1, 14)), ("replay", (14, 16))],
          "without engines: the pieces alone: %r" % log)
    # split: both starts at the head of the first piece, each table's wait at the head of the piece that
    # reads its rows, all on the piece's own stream, warmed up eagerly then captured; a replay is the
    # three graphs and nothing eager
    del log[:]
    sp = bm.Pieces(FakeStep(), [Engine(0), Engine(1)], side, split=True)
    made = [x for x in log if x[0] in ("start", "wait", "piece")]
    want = []
    for stream, cap in (("warm", False), ("main", True)):
        want += [("start", 0, "ids0", "rows0", stream, cap), ("start", 1, "ids1", "rows1", stream, cap),
                 ("piece", 0, 1, True, stream, cap), ("wait", 0, "rows0", stream, cap),
                 ("piece", 1, 14, False, stream, cap), ("wait", 1, "rows1", stream, cap),
                 ("piece", 14, 16, False, stream, cap)]
    check(made == want, "split pieces: the halves inside the pieces: %r" % made)
    del log[:]
    sp.replay()
    check(log == [("replay", (0, 1)), ("replay", (1, 14)), ("replay", (14, 16))] and sp.take_call_us() is None,
          "split pieces: a replay is the graphs alone, no eager call: %r" % log)
    # split with the copies (engines without halves: copy-split-pieces): both tables' copies forked on
    # the side stream at the first piece's head and joined back at its end, inside its capture
    class Copy:
        def __init__(self, t):
            self.t = t

        def run(self, ids, out, stream=None):
            log.append(("run", self.t, ids, out, stream.name, cur[-1].name))

    del log[:]
    cp = bm.Pieces(FakeStep(), [Copy(0), Copy(1)], side, split=True)
    want = []
    for stream, cap in (("warm", False), ("main", True)):
        want += [("wait_stream", "side", stream), ("run", 0, "ids0", "rows0", "side", stream),
                 ("run", 1, "ids1", "rows1", "side", stream), ("piece", 0, 1, True, stream, cap),
                 ("wait_stream", stream, "side"), ("piece", 1, 14, False, stream, cap),
                 ("piece", 14, 16, False, stream, cap)]
    made = [x for x in log if x[0] in ("run", "piece") or (x[0] == "wait_stream" and "side" in x)]
    check(made == want, "copy-split pieces: the copies forked and joined inside the first piece: %r" % made)
    del log[:]
    cp.replay()
    check(log == [("replay", (0, 1)), ("replay", (1, 14)), ("replay", (14, 16))],
          "copy-split pieces: a replay is the graphs alone: %r" % log)


def clocks_checks():
    """The clocks beside a mode's runs: nvidia-smi's lines summarized, and the sampler run over a fake
    nvidia-smi (its arguments, its samples, its end), or saying why it measured nothing."""
    from eht import bench_step_clocks as bc
    lines = ["1440, 697.38, 700.00, 0x0000000000000004", "1500, 690.00, 700.00, 0x4",
             "1980, 650.00, 700.00, 0x0", "1410, 699.00, 700.00, 0x24", "345, 72.62, 700.00, 0x1",
             "[N/A], [N/A], 700.00, [N/A]", ""]
    c = bc.summarize(lines)
    check(c["samples"] == 5 and c["busy_samples"] == 4 and c["unread_lines"] == 1 and c["power_limit_w"] == 700.0
          and c["sm_clock_mhz"] == {"median": 1470.0, "p10": 1410, "p90": 1980}
          and abs(c["power_w"] - 693.69) < 1e-9 and c["power_capped_fraction"] == 0.75
          and c["thermal_fraction"] == 0.25, "nvidia-smi's lines summarized: %r" % c)
    ln = bc.clocks_line("prefill", "uniform", dict(c, mode="prefill", workload="uniform"))
    check("SM clock 1470 MHz (p10 1410, p90 1980), 694 W of 700 W, at the power cap in 75 % of 4 busy samples, "
          "thermally slowed in 25 %" in ln, "the clocks' line: %s" % ln)
    idle = bc.summarize(["345, 72.62, 700.00, 0x1"])
    check(idle["busy_samples"] == 0 and "sm_clock_mhz" not in idle
          and "idle in all 1 samples" in bc.clocks_line("decode", "text", idle), "an idle GPU: %r" % idle)
    check(bc.gpu_id(type("P", (), {"uuid": "8c7b-1"})()) == "GPU-8c7b-1" and bc.gpu_id(object()) is None, "gpu_id")
    with tempfile.TemporaryDirectory() as d:
        smi = os.path.join(d, "nvidia-smi")
        with open(smi, "w") as f:
            f.write(FAKE_SMI)
        os.chmod(smi, 0o755)
        sampler = bc.ClockSampler("GPU-8c7b-1", 50, smi)
        deadline = time.monotonic() + 20  # (a loaded CI machine may start the fake late)
        while os.fstat(sampler.out.fileno()).st_size < 240 and time.monotonic() < deadline:  # (a whole loop)
            time.sleep(0.05)
        c = sampler.stop()
        with open(smi + ".args") as f:
            args = f.read().split()
        check(args == ["--id=GPU-8c7b-1", "--query-gpu=" + bc.QUERY, "--format=csv,noheader,nounits", "-lms", "50"],
              "nvidia-smi's arguments: %r" % args)
        # (stopped anywhere in its loop after the first: 4 busy and 1 idle sample at least)
        check("error" not in c and c["busy_samples"] >= 4 and c["samples"] >= 5
              and 0.5 <= c["power_capped_fraction"] <= 1.0 and c["power_limit_w"] == 700.0,
              "sampled beside the runs: %r" % c)
        check(sampler.proc is None and sampler.stop() == {"error": None}, "stopped once, and it is gone")
        os.environ["FAKE_SMI_SILENT"] = "1"
        try:
            silent = bc.ClockSampler("GPU-8c7b-1", 50, smi)
            silent.proc.wait(timeout=10)
            c = silent.stop()
        finally:
            del os.environ["FAKE_SMI_SILENT"]
        check(c.get("error") == "nvidia-smi gave no sample (exit 3)" and "not measured (nvidia-smi gave no sample"
              in bc.clocks_line("decode", "uniform", c), "an nvidia-smi that fails at once: %r" % c)
    c = bc.ClockSampler("GPU-8c7b-1", 50, "/nonexistent/nvidia-smi").stop()
    check("nonexistent" in (c.get("error") or ""), "no such nvidia-smi: %r" % c)
    check(bc.ClockSampler(None, 50, "/bin/true").stop() == {"error": "the GPU's UUID is unknown"}, "no UUID")


def main():
    from eht import bench_step as bs
    from eht import bench_step_model as bm
    from eht import bench_step_report as br
    from eht import bench_step_time as bt
    v = bs.parse_variant("host+bg+cap16-side")
    check(v["strategy"] == "host" and v["background"] and v["sm_cap"] == 16 and v["place"] == "side",
          "host+bg+cap16-side parsed: %r" % v)
    v = bs.parse_variant("vllm")
    check(v.get("vllm") and v["place"] == "side" and v["background"], "vllm is vLLM's algorithm on the side stream: %r" % v)
    v = bs.parse_variant("vllm-inline")
    check(v.get("vllm") and v["place"] == "inline" and not v["background"], "vllm-inline: the full grid inline: %r" % v)
    v = bs.parse_variant("layer-side")
    check(v.get("layer") and v["background"] and v["place"] == "side", "layer-side: the engine's call, background: %r" % v)
    check(not bs.parse_variant("layer-inline")["background"], "layer-inline: the engine's call, inline")
    check(bs.parse_variant("none")["strategy"] is None, "none has no strategy")
    check(bs.parse_variant("auto-inline")["place"] == "inline", "auto-inline")
    v = bs.parse_variant("host+bg+ldq-side")
    check(v["late_dequant"] and v["background"] and not bs.parse_variant("host+bg-side")["late_dequant"],
          "ldq: late dequant: %r" % v)
    v = bs.parse_variant("host+bg+raw-side")
    check(v.get("raw_only") and not v["late_dequant"] and not bs.parse_variant("host+bg-side").get("raw_only"),
          "raw: no dequant: %r" % v)
    try:
        bs.parse_variant("host+bg+raw+ldq-side")
        check(False, "raw with ldq accepted")
    except ValueError as e:
        check("exclude" in str(e), "raw with ldq: %s" % e)
    try:
        bs.parse_variant("auto+bg+predict-side")
        check(False, "predict is no option (the predicting poller was removed)")
    except ValueError:
        pass
    v = bs.parse_variant("auto+bg+push-side")
    check(v.get("push") is True and v["background"] and bs.parse_variant("auto+bg-side").get("push") is None,
          "push: %r" % v)
    v = bs.parse_variant("auto+bg+stream-side")
    check(v.get("push") is False and v["background"], "stream: %r" % v)
    try:
        bs.parse_variant("auto+bg+pushdq-side")
        check(False, "pushdq is no option (the pushed dequant of captured prefills was removed)")
    except ValueError:
        pass
    check(bs.parse_variant("layer+stream-side")["push"] is False and bs.parse_variant("layer-side")["push"] is None,
          "layer ways: %r" % bs.parse_variant("layer+stream-side"))
    # vLLM's newer placement: eager lookups on the side stream between graph pieces
    pcs = {n: bs.parse_variant(n) for n in ("layer-pieces", "copy-pieces", "vllm-pieces", "layer+stream-pieces")}
    check(all(v["place"] == "pieces" for v in pcs.values()) and pcs["layer-pieces"]["background"]
          and pcs["layer-pieces"].get("layer") and pcs["copy-pieces"].get("copy_only")
          and not pcs["copy-pieces"]["background"] and pcs["vllm-pieces"].get("vllm")
          and pcs["vllm-pieces"]["background"] and pcs["layer+stream-pieces"]["push"] is False,
          "the -pieces variants: %r" % pcs)
    for bad in ("vllm-pieced", "layer-piece", "copy-side"):
        try:
            bs.parse_variant(bad)
            check(bad == "copy-side", "%s accepted" % bad)  # (copy-side: a strategy name eht lacks)
        except ValueError:
            pass
    cs = bs.parse_variant("copy-split-pieces")  # the copies captured into the pieces
    check(cs["place"] == "split-pieces" and cs.get("copy_only") and not cs["background"], "copy-split-pieces: %r" % cs)
    spl = {n: bs.parse_variant(n) for n in ("layer-split", "layer-split-pieces", "layer+nohot-split-pieces")}
    check(spl["layer-split"]["place"] == "split" and spl["layer-split-pieces"]["place"] == "split-pieces"
          and all(v["background"] and v.get("layer") for v in spl.values())
          and spl["layer+nohot-split-pieces"]["no_hot"], "the -split variants: %r" % spl)
    for bad in ("layer-split-inline", "copy-split", "layer+push-splat"):
        try:
            bs.parse_variant(bad)
            check(False, "variant %r refused" % bad)
        except ValueError:
            pass
    pieces_checks(bm)
    v = bs.parse_variant("layer+nohot-inline")
    check(v.get("layer") and v["no_hot"] and not v["background"] and not bs.parse_variant("layer-inline")["no_hot"],
          "layer+nohot: the inline way without the hot set: %r" % v)
    check(bs.parse_variant("auto+bg+nohot-side").get("no_hot") and not bs.parse_variant("auto+bg-side").get("no_hot"),
          "nohot: a strategy's hot set left out")
    for bad in ("layer+push-inline", "layer+push+stream-side", "layer+hot-side", "layerx-side", "layer-middle"):
        try:
            bs.parse_variant(bad)
            check(False, "%s is no variant" % bad)
        except ValueError:
            pass
    # CPU by kind of thread: a thread named as eht names its pool's workers is counted as the pool's.
    import ctypes  # noqa: PLC0415
    import threading  # noqa: PLC0415
    libc = ctypes.CDLL(None, use_errno=True)

    def burn(name, secs, burnt, release):
        libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME, this thread only
        t0 = time.thread_time()
        while time.thread_time() - t0 < secs:
            pass
        burnt.set()
        release.wait()  # alive while read: a thread's time goes with it

    def settled(names):
        # Thread.join returns before the kernel's thread is gone: wait until /proc no longer lists these
        # names, so a later reading does not lose a thread that was still exiting (a CI run did).
        for _ in range(500):
            alive = set()
            for tid in os.listdir("/proc/self/task"):
                try:
                    with open("/proc/self/task/%s/comm" % tid) as f:
                        alive.add(f.read().strip())
                except OSError:
                    pass
            if not alive & set(names):
                return
            time.sleep(0.01)
        check(False, "threads %r still listed after 5 s" % (names,))

    c0 = bt.thread_cpu_s()
    if c0:  # (Linux /proc)
        release = threading.Event()
        started = []
        for name, secs in (("eht-pool/0", 0.2), ("eht-bell", 0.1)):
            burnt = threading.Event()
            th = threading.Thread(target=burn, args=(name, secs, burnt, release))
            th.start()
            started.append((th, burnt))
        for th, burnt in started:
            burnt.wait(30)
        c1 = bt.thread_cpu_s()
        release.set()
        for th, _ in started:
            th.join()
        settled(("eht-pool/0", "eht-bell"))
        per = bt.thread_cpu_ms_per_step(c0, c1, 10)
        check(19.0 <= per["pool"] <= 25.0, "the named pool thread's 200 ms of CPU, per step of 10: %r" % per)
        check(9.0 <= per["poller"] <= 15.0 and per["eht"] < 1.0, "the poller's 100 ms: %r" % per)
    check(bt.thread_cpu_ms_per_step({}, {"pool": 1.0}, 1) is None, "no reading, no split")
    # The variant and the step without lookups alternate in ABBA order: a GPU whose every replay runs
    # 4 us slower than the one before (clocks drifting) must not move the difference (a fixed order,
    # the variant always first, made it 4 us smaller per replay of drift).
    class Clock:
        ms = 0.0

    class FakeEvent:
        def __init__(self, enable_timing=True, blocking=False, external=False):
            self.t = None

        def record(self, stream=None):
            self.t = Clock.ms

        def synchronize(self):
            pass

        def elapsed_time(self, other):
            return other.t - self.t

    class Graph:
        runs = 0

        def __init__(self, ms):
            self.ms = ms

        def replay(self):
            Clock.ms += self.ms + 0.004 * Graph.runs
            Graph.runs += 1

    class Cuda:
        Event = FakeEvent

        @staticmethod
        def synchronize():
            pass

    class FakeTorch:
        cuda = Cuda

    for reps in (15, 40):
        var, none = bt.time_paired(FakeTorch, Graph(3.0), Graph(3.01), lambda i: None, reps, 2, False, 0.0)
        added = (var["median_ms"] - none["median_ms"]) * 1e3
        check(abs(added - 10.0) < 0.5, "synced pairs, %d replays under a drift: +%.2f us, not +10" % (reps, added))
        check(abs(var["paired_added_ms"] * 1e3 - 10.0) < 0.5, "synced pairs, %d replays, pair by pair: %r" % (reps, var))
        # every pair is kept, in order, and gives the median the report prints
        pairs = var["pairs_ms"]
        check(len(pairs) == reps + reps % 2 and all(v > n for v, n in pairs)
              and abs(statistics.median(v - n for v, n in pairs) - var["paired_added_ms"]) < 1e-3,
              "synced pairs kept, %d replays: %r" % (reps, pairs))
    for burst in (2, 8):
        var, none = bt.time_back_to_back(FakeTorch, Graph(3.0), Graph(3.01), lambda i: None, 40, 2, False, burst)
        added = (var["median_ms"] - none["median_ms"]) * 1e3
        check(abs(added - 10.0) < 0.5, "bursts of %d under a drift: +%.2f us, not +10" % (burst, added))
        check(abs(var["paired_added_ms"] * 1e3 - 10.0) < 0.5, "bursts of %d, pair by pair: %r" % (burst, var))
        check(len(var["pairs_ms"]) == bt.back_to_back_pairs(40) + bt.back_to_back_pairs(40) % 2,
              "bursts of %d: the pairs kept: %r" % (burst, var["pairs_ms"]))
    # Pair by pair under clocks that change in phases (a slow phase of 1 ms a replay, 9 replays
    # long, every 25): each pair's difference is the variant's, whatever the phase it ran in.
    class Phased(Graph):
        def replay(self):
            Clock.ms += self.ms + (1.0 if Graph.runs % 25 < 9 else 0.0)
            Graph.runs += 1
    for reps in (15, 40):
        var, none = bt.time_paired(FakeTorch, Phased(3.0), Phased(3.01), lambda i: None, reps, 2, False, 0.0)
        check(abs(var["paired_added_ms"] * 1e3 - 10.0) < 0.5, "synced pairs, %d replays in phases: %r" % (reps, var))
    check(bt.back_to_back_pairs(40) == 20 and bt.back_to_back_pairs(15) == 7 and bt.back_to_back_pairs(1) == 6
          and bt.back_to_back_pairs(48, 6) == 8 and bt.back_to_back_pairs(15, 6) == 6,
          "bursts per back-to-back figure: %r" % [bt.back_to_back_pairs(n) for n in (40, 15, 1)])
    check([f for _, f in bt.abba(5)] == [True, False, True, False, True, False], "abba(5): %r" % list(bt.abba(5)))
    # A variant alternated with the copies' step: its pairs and each median's interval, in us, around +10.
    vc = bs.against_copy(FakeTorch, Graph(3.0), Graph(3.01), lambda i: None,
                         {"reps": 16, "back_to_back_share": 2}, type("A", (), {"warmup": 2, "burst": 4})(), False)
    def ci_us(pairs):
        return [x * 1e3 for x in bt.median_ci([v - n for v, n in pairs])]
    check(len(vc["pairs_ms"]) == 16 and len(vc["back_to_back_pairs_ms"]) == 8
          # (the pairs are kept to 0.1 us: their interval is the figure's within that)
          and all(lo <= m <= hi and lo < 10.0 < hi and all(abs(x - y) < 0.2 for x, y in zip((lo, hi), ci_us(p)))
                  for (lo, hi), m, p in (
                      (vc["paired_added_ci_us"], vc["paired_added_us"], vc["pairs_ms"]),
                      (vc["back_to_back_paired_added_ci_us"], vc["back_to_back_paired_added_us"],
                       vc["back_to_back_pairs_ms"]))),
          "against the copies, pairs and intervals: %r" % vc)
    # Runs by kind of thread: a thread named as eht names its poller that naps 40 times is put on a
    # CPU 40 times more, give or take a few preemptions (not its nanoseconds, schedstat's first field).
    r0 = bt.thread_runs()
    if r0:  # (a kernel with schedstat)
        def nap(n, done):
            libc.prctl(15, b"eht-bell", 0, 0, 0)
            for _ in range(n):
                time.sleep(0.001)
            done.set()
            release.wait()
        release, done = threading.Event(), threading.Event()
        th = threading.Thread(target=nap, args=(40, done))
        th.start()
        done.wait(30)
        r1 = bt.thread_runs()
        release.set()
        th.join()
        check(40 <= r1["poller"] - r0["poller"] < 400 and r1["pool"] == r0["pool"],
              "the napping poller's runs: %r -> %r" % (r0, r1))
    r = {"mode": "decode", "workload": "uniform", "variant": "host+bg-side", "added_us": 30.0, "added_pct": 1.0,
         "step": {"median_ms": 3.0, "p90_ms": 3.1, "cpu_ms_per_step": 3.6, "launch_us": 40.0,
                  "cpu_ms_by_thread": {"pool": 2.9, "poller": 0.6, "eht": 0.0, "rest": 0.1}},
         "none_paired": {"median_ms": 2.97, "p90_ms": 3.0, "launch_us": 12.0}, "added_vs_none_alone_us": 20.0}
    ln = br.line(r)
    check("cpu    3.60 ms/step (pool 2.90, poller 0.60)" in ln and "launch 40 us (+28)" in ln, "report line: %s" % ln)
    r["step"]["runs_per_step_by_thread"] = {"pool": 28.0, "poller": 812.4, "eht": 0.0, "rest": 8.6}
    ln = br.line(r)
    check("(pool 2.90, poller 0.60 in 812 runs)" in ln, "report line with the poller's runs: %s" % ln)

    # --tp: a rank's heads and, per table, the rows of its head ranges (V4.1's, scaled to the table)
    offs = bm.head_offsets(1000003)
    check(all(len(o) == 25 and o[0] == 0 and o[24] == 1000003 and all(o[c] < o[c + 1] for c in range(24))
              for o in offs), "24 ordered head ranges per table covering every row: %r" % offs)
    check(offs[0] != offs[1], "the two tables' head ranges differ (their moduli do)")
    r = bm.Rank(4, 1, 1000003)
    check((r.head_start, r.part) == (6, 6) and r.vocab == [(o[6], o[12]) for o in offs],
          "tp 4 rank 1: heads [6, 12) and their rows: %r %r" % ((r.head_start, r.part), r.vocab))
    r = bm.Rank(5, 4, 1000003)
    check((r.head_start, r.part) == (20, 5) and r.vocab == [(o[20], o[24]) for o in offs],
          "tp 5 rank 4: heads [20, 25), the padded one past 24: %r %r" % ((r.head_start, r.part), r.vocab))
    check(bm.Rank(1, 0, 77).vocab == [(0, 77), (0, 77)], "tp 1: every row")

    v = bs.parse_variant("copy")
    check(v.get("copy_only") and v["strategy"] is None and v["place"] == "side", "copy: the link's floor: %r" % v)
    for bad in ("auto", "fast-side", "auto+x-side", "auto+cap0-side", "auto-middle", "copy-side", "host+push-side",
                "host+stream-side"):
        try:
            bs.parse_variant(bad)
            check(False, "variant %r refused" % bad)
        except ValueError:
            pass

    # --timeline's summary of one profiled replay: a synthetic trace as torch.profiler writes it (two
    # graph launches; kernels of the model, eht's kernels and copies; a kernel of no launch is left out).
    def ev(name, cat, ts, dur, corr, grid=None):
        e = {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "args": {"correlation": corr}}
        if grid:
            e["args"]["grid"] = grid
        return e
    trace = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 0, "dur": 5,
              "args": {"correlation": c}} for c in (7, 9)]
    trace += [ev("nvjet_gemm", "kernel", 100, 80, 7), ev("eht_lk_stage_in", "kernel", 105, 200, 7, [119, 1, 1]),
              ev("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", 120, 10, 7), ev("Memcpy DtoD", "gpu_memcpy", 90, 3, 7),
              ev("nvjet_gemm", "kernel", 1000, 90, 9), ev("eht_lk_expand", "kernel", 1010, 6, 9, [16, 1, 1]),
              ev("stray", "kernel", 5000, 50, 11),
              # eht's CPU pushes a request's rows with copies of no launch: into the replay they ran in
              ev("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", 1020, 4, 50),
              ev("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", 10, 4, 51)]  # (before any replay)
    reps = bt._gpu_events(trace)
    check(len(reps) == 2 and [len(r) for r in reps] == [4, 3], "graph launches grouped: %r" % [len(r) for r in reps])
    if len(reps) == 2:
        s0 = bt.summarize_replay(reps[0])
        check(s0["span_us"] == 215 and s0["model_kernel_us"] == 80 and s0["eht_kernel_us"] == 200
              and s0["eht_max_grid"] == 119 and s0["eht_copies"] == 1 and s0["eht_copy_us"] == 10
              and s0["eht_first_us"] == 15 and s0["eht_last_us"] == 215, "replay summary: %r" % s0)
        s1 = bt.summarize_replay(reps[1])
        check(s1["eht_kernels"] == 1 and s1["eht_max_grid"] == 16 and s1["model_kernel_us"] == 90
              and s1["eht_copies"] == 1 and s1["eht_copy_us"] == 4 and s1["eht_last_us"] == 24, "second: %r" % s1)
        # Queued replays: the GPU's idle time between one replay's last event (replay 0's stage-in
        # kernel, ending at 305) and the next one's first (replay 1's GEMM, starting at 1000).
        check(bt.replay_gaps(reps) == [695], "gap between queued replays: %r" % bt.replay_gaps(reps))
    # vLLM's pieces: a step is three graph launches (Pieces.launches), one replay each three; a
    # launch short of a whole step at the end is left out
    pt = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 0, "dur": 5,
           "args": {"correlation": c}} for c in range(20, 27)]
    pt += [ev("nvjet_gemm", "kernel", 100 * c, 50, c) for c in range(20, 27)]
    pt += [ev("eht_lk_ring", "kernel", 2005, 3, 20, [24, 1, 1]),
           ev("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", 2060, 4, 60)]
    pr = bt._gpu_events(pt, 3)
    check([len(r) for r in pr] == [5, 3], "three launches a step grouped: %r" % [len(r) for r in pr])
    if len(pr) == 2:
        sp = bt.summarize_replay(pr[0])
        check(sp["span_us"] == 250 and sp["model_kernel_us"] == 150 and sp["eht_kernels"] == 1
              and sp["eht_copies"] == 1, "a pieces step's summary: %r" % sp)
        check(bt.replay_gaps(pr) == [50], "the gap between two pieces steps: %r" % bt.replay_gaps(pr))
    overlap = [[ev("a", "kernel", 0, 50, 1)], [ev("b", "kernel", 40, 10, 2)], [ev("c", "kernel", 60, 5, 3)]]
    check(bt.replay_gaps(overlap) == [0.0, 10.0] and bt.replay_gaps(overlap[:1]) == [],
          "gaps never negative, none for one replay: %r" % bt.replay_gaps(overlap))
    # The model's stream's idle time inside a replay: stream 7 runs the most model time; it waits 10 us
    # and then 30 us (rows not there at a join); the side stream's eht kernel and the other stream's
    # short model kernel are not its own; overlapping events on it count once.
    def on(e, stream):
        e["args"]["stream"] = stream
        return e
    side = [on(ev("gemm", "kernel", 0, 50, 1), 7), on(ev("gemm", "kernel", 60, 40, 1), 7),
            on(ev("Memcpy DtoD", "gpu_memcpy", 70, 10, 1), 7), on(ev("gemm", "kernel", 130, 20, 1), 7),
            on(ev("eht_lk_expand", "kernel", 0, 120, 1), 13), on(ev("small", "kernel", 100, 5, 1), 21)]
    check(bt.main_stream_idle(side) == (40.0, 30.0), "the model's stream idle: %r" % (bt.main_stream_idle(side),))
    check(bt.main_stream_idle([on(ev("eht_lk_expand", "kernel", 0, 9, 1), 13)]) == (None, None),
          "no model kernel: no idle figure")
    s = bt.summarize_replay(side)
    check(s["main_idle_us"] == 40.0 and s["main_longest_gap_us"] == 30.0, "the replay's summary has it: %r" % s)
    # eht's kernels on the model's stream (a split lookup's ring and join): counted there only, not
    # the side stream's dequant; medians over replays, a replay without one counting 0
    check(s["main_eht"] == {}, "no eht kernel on the model's stream: %r" % s["main_eht"])
    split = side + [on(ev("eht_lk_ring", "kernel", 55, 3, 1), 7), on(ev("eht_lk_expand_after", "kernel", 100, 9, 1), 7),
                    on(ev("eht_lk_ring", "kernel", 150, 4, 1), 7)]
    me = bt.summarize_replay(split)["main_eht"]
    check(me == {"eht_lk_ring": [2, 7.0], "eht_lk_expand_after": [1, 9.0]}, "eht on the model's stream: %r" % me)
    med = bt.median_main_eht([me, {"eht_lk_ring": [2, 9.0]}, {"eht_lk_ring": [2, 8.0], "eht_lk_expand_after": [1, 5.0]}])
    check(med == {"eht_lk_expand_after": {"launches": 1, "us": 5.0}, "eht_lk_ring": {"launches": 2, "us": 8.0}},
          "medians of eht's kernels on the model's stream: %r" % med)
    # --trace's figures from a step's marks (times in ms from the step's start): side lookups run from
    # the fork (table 1 after table 0), the main stream stalls 0.02 and 0.03 ms at the joins, and the
    # layers are the step less the stalls; inline, each lookup is its own span.
    at = {"start": 0.0, "side_start": 0.01, "lookup0_end": 0.10, "lookup1_end": 0.25, "before_wait0": 0.08,
          "after_wait0": 0.10, "before_wait1": 1.50, "after_wait1": 1.53, "end": 3.00}
    el = lambda a, b: at[b] - at[a] if a in at and b in at else None  # noqa: E731
    got = bt.mark_times(el, "side")
    near = lambda x, y: x is not None and abs(x - y) < 1e-9  # noqa: E731
    check(near(got["step"], 3.0) and near(got["lookup0"], 0.09) and near(got["lookup1"], 0.15)
          and near(got["stall0"], 0.02) and near(got["stall1"], 0.03) and near(got["layers"], 2.95),
          "side marks: %r" % got)
    inl = dict(at, lookup0_start=0.08, lookup0_end=0.10, lookup1_start=1.50, lookup1_end=1.53)
    el = lambda a, b: inl[b] - inl[a] if a in inl and b in inl else None  # noqa: E731
    got = bt.mark_times(el, "inline")
    check(near(got["lookup0"], 0.02) and near(got["lookup1"], 0.03), "inline marks: %r" % got)
    none = bt.mark_times(lambda a, b: None if "lookup" in a + b or a == "side_start" else 0.5, "side")
    check(none["lookup0"] is None and near(none["layers"], -0.5), "missing marks give None: %r" % none)
    med = bt.median_marks([dict(got, stall0=x) for x in (0.01, 0.05, 0.02)] + [dict(got, stall0=None)])
    check(near(med["stall0_ms"], 0.02) and near(med["step_ms"], 3.0) and set(med) == {k + "_ms" for k in bt.TRACE_KEYS},
          "medians over runs, a missing mark left out: %r" % med)
    tr = {"step_ms": 3.0, "layers_ms": 2.95, "interference_ms": 0.01, "lookup0_ms": 0.09, "lookup1_ms": 0.15,
          "stall0_ms": 0.002, "stall1_ms": 0.001,
          "graph": {"queued": dict(med, stall0_ms=0.041), "synced": dict(med, stall0_ms=0.003)}}
    ln = br.line({"mode": "decode", "workload": "uniform", "variant": "layer-side",
                  "step": {"median_ms": 3.0, "p90_ms": 3.1, "cpu_ms_per_step": 2.8}, "trace": tr})
    check("\n    eager: step 3.000 ms" in ln and ln.index("graph, synced:") < ln.index("graph, queued:")
          and "graph, queued: step 3.000 ms, lookup0 0.020 / lookup1 0.030, stall0 0.041 / stall1 0.030" in ln,
          "trace lines: %s" % ln)
    ln = br.line({"mode": "decode", "workload": "uniform", "variant": "layer-side",
                  "step": {"median_ms": 3.0, "p90_ms": 3.1, "cpu_ms_per_step": 2.8},
                  "trace": dict(tr, graph=None, graph_error="RuntimeError: capture refused")})
    check("\n    graph: not timed (RuntimeError: capture refused)" in ln and "graph, " not in ln,
          "a graph trace that failed: %s" % ln)
    ln = br.line({"mode": "decode", "workload": "uniform", "variant": "layer-pieces",
                  "step": {"median_ms": 3.0, "p90_ms": 3.1, "cpu_ms_per_step": 2.8},
                  "eager_call_us": [{"median": 21.5, "p90": 40.25, "calls": 40}, None]})
    check("  eager calls 21.5 (p90 40.2) / - us" in ln, "a -pieces variant's eager calls: %s" % ln)
    # The report's line for a variant profiled after each sync and queued.
    tl = {"span_us": 3000, "model_kernel_us": 2900, "model_slowdown_us": 12.0, "eht_kernels": 4, "eht_kernel_us": 70,
          "eht_max_grid": 48, "eht_copies": 0, "eht_copy_us": 0, "eht_first_us": 0, "eht_last_us": 500}
    row = {"mode": "decode", "workload": "uniform", "variant": "layer-side",
           "step": {"median_ms": 3.0, "p90_ms": 3.1, "cpu_ms_per_step": 2.8}, "added_us": 20.0, "added_pct": 0.7,
           "timeline": dict(tl), "timeline_queued": dict(tl, gap_us=3.5, gap_added_us=2.0, main_idle_us=31.5,
                                                        main_idle_added_us=24.0, main_longest_gap_us=20.0)}
    ln = br.line(row)
    check("\n    timeline: span 3000 us" in ln and "\n    timeline, queued: span 3000 us" in ln
          and "idle between steps 3.5 us (+2.0 against none)" in ln and ln.count("idle between") == 1
          and "the model's stream idle 31.5 us (+24.0 against none), longest gap 20.0 us" in ln
          and ln.count("stream idle") == 1 and "model's stream:" not in ln,
          "timeline lines: %s" % ln)
    row["timeline_queued"]["main_eht"] = {"eht_lk_ring": {"launches": 2, "us": 6.5},
                                          "eht_lk_expand_after": {"launches": 2, "us": 11.25}}
    ln = br.line(row)
    check("; on the model's stream: eht_lk_expand_after 2x 11.2 us, eht_lk_ring 2x 6.5 us" in ln
          and ln.count("model's stream:") == 1, "eht's kernels on the model's stream: %s" % ln)

    # --rounds: the summary over the rounds of each variant (a failed round and the none rows left out).
    def res(variant, rnd, b2b, synced, cpu, mode="decode", err=False):
        r = {"mode": mode, "workload": "uniform", "variant": variant, "round": rnd, "added_us": synced,
             "step": {"cpu_ms_per_step": cpu}}
        if b2b is not None:
            r["back_to_back_added_us"] = b2b
        if err:
            r = {"mode": mode, "workload": "uniform", "variant": variant, "round": rnd, "error": "boom"}
        return r
    results = [res("none", 0, None, 0.0, 0.3), res("host+bg-side", 0, 30.0, 60.0, 3.0),
               res("vllm", 0, 400.0, 410.0, 0.5), res("none", 1, None, 0.0, 0.3),
               res("host+bg-side", 1, 10.0, 80.0, 4.0), res("vllm", 1, 0, 0, 0, err=True),
               res("host+bg-side", 2, 50.0, 70.0, 3.5), res("host+bg-side", 0, -100.0, 500.0, 50.0, mode="prefill"),
               res("copy", 0, 10.0, 20.0, 0.3), res("copy", 2, 5.0, 30.0, 0.3)]
    summ = br.summarize_rounds(results)
    check([(x["mode"], x["variant"], x["rounds"]) for x in summ] ==
          [("decode", "host+bg-side", 3), ("decode", "vllm", 1), ("prefill", "host+bg-side", 1), ("decode", "copy", 2)],
          "summary rows: %r" % [(x["mode"], x["variant"], x["rounds"]) for x in summ])
    # Less the copies of the same round (rounds 0 and 2 have both; round 1 had no copy): back to back
    # 30 - 10 and 50 - 5, synced 60 - 20 and 70 - 30; none for copy itself or where no copy ran.
    if len(summ) == 4:
        h, v, pf, cp = summ
        check(h["over_copy_back_to_back_us"] == {"median": 32.5, "min": 20.0, "max": 45.0}
              and h["over_copy_added_us"] == {"median": 40.0, "min": 40.0, "max": 40.0}, "over the copies: %r" % h)
        check(v["over_copy_added_us"] == {"median": 390.0, "min": 390.0, "max": 390.0}, "vllm over the copies: %r" % v)
        check(pf["over_copy_added_us"] is None and cp["over_copy_added_us"] is None
              and cp["over_copy_back_to_back_us"] is None, "no pair, no figure: %r %r" % (pf, cp))
        ln = br.summary_line(h)
        check("over the copies, round by round: back to back +32.5 us (+20.0 .. +45.0), synced +40.0 us" in ln,
              "summary line over the copies: %s" % ln)
        check("over the copies" not in br.summary_line(cp), "the copies' own line: %s" % br.summary_line(cp))
    if summ:
        h = summ[0]
        check(h["back_to_back_added_us"] == {"median": 30.0, "min": 10.0, "max": 50.0}
              and h["added_us"] == {"median": 70.0, "min": 60.0, "max": 80.0}
              and h["cpu_ms_per_step"]["median"] == 3.5, "median and range over rounds: %r" % h)
        ln = br.summary_line(h)
        check("3 rounds" in ln and "+30.0 us (+10.0 .. +50.0)" in ln and "+70.0 us" in ln, "summary line: %s" % ln)
        check(h["pool_cpu_ms_per_step"] is None and h["launch_added_us"] is None and "pool" not in ln,
              "no split measured, none summarized: %r" % h)
    # The pool's CPU and the launch's added time, where the rounds have them.
    split = []
    for rnd, (pool, lv) in enumerate(((2.0, 30.0), (3.0, 50.0), (2.5, 20.0))):
        r = res("host+bg-side", rnd, 10.0, 60.0, 3.5)
        r["step"].update({"cpu_ms_by_thread": {"pool": pool, "poller": 0.5, "eht": 0.0, "rest": 1.0}, "launch_us": lv})
        r["none_paired"] = {"launch_us": 10.0}
        split.append(r)
    s2 = br.summarize_rounds(split)
    check(len(s2) == 1 and s2[0]["pool_cpu_ms_per_step"] == {"median": 2.5, "min": 2.0, "max": 3.0}
          and s2[0]["launch_added_us"] == {"median": 20.0, "min": 10.0, "max": 40.0}, "split summarized: %r" % s2)
    if s2:
        ln = br.summary_line(s2[0])
        check("(pool 2.50)" in ln and "launch +20 us" in ln, "summary line with the split: %s" % ln)
    check(br.summarize_rounds([res("none", 0, None, 0.0, 0.3)]) == [], "no variant with lookups: no rows")
    # Pair by pair, and pair by pair less the copies of the same round.
    def near(d, m, lo, hi):
        return d is not None and all(abs(d[k] - v) < 1e-9 for k, v in (("median", m), ("min", lo), ("max", hi)))
    paired = []
    rounds = ((25.0, 30.0, 20.0, 10.0), (28.0, 12.0, 21.0, 2.0), (35.0, 40.0, 22.0, 5.0))
    for rnd, (pv, pb, cv, cb) in enumerate(rounds):
        r = dict(res("layer-side", rnd, 0.0, 0.0, 3.0), paired_added_us=pv, back_to_back_paired_added_us=pb)
        c = dict(res("copy", rnd, 0.0, 0.0, 0.3), paired_added_us=cv, back_to_back_paired_added_us=cb)
        paired += [c, r]
    s4 = {x["variant"]: x for x in br.summarize_rounds(paired)}
    lay = s4.get("layer-side", {})
    check(near(lay.get("paired_added_us"), 28.0, 25.0, 35.0)
          and near(lay.get("paired_back_to_back_added_us"), 30.0, 12.0, 40.0)
          and near(lay.get("over_copy_paired_added_us"), 7.0, 5.0, 13.0)
          and near(lay.get("over_copy_paired_back_to_back_us"), 20.0, 10.0, 35.0)
          and s4["copy"]["over_copy_paired_added_us"] is None, "pair by pair over the rounds: %r" % s4)
    if lay:
        ln = br.summary_line(lay)
        check("pair by pair: back to back +30.0 us (+12.0 .. +40.0), synced +28.0 us" in ln
              and "over the copies pair by pair: back to back +20.0 us (+10.0 .. +35.0), synced +7.0 us" in ln,
              "summary line pair by pair: %s" % ln)
    # Alternated with the copies' step itself (vs_copy): the rounds' pair-by-pair figures, summarized
    # and on both lines; a round without it (no copy variant ran) is left out of them.
    alt = []
    for rnd, (ab, asy) in enumerate(((4.0, 9.0), (-2.0, 15.0), (7.0, 11.0))):
        r = res("layer-side", rnd, 0.0, 0.0, 3.0)
        r["vs_copy"] = {"added_us": asy + 1.0, "paired_added_us": asy, "back_to_back_added_us": ab + 1.0,
                        "back_to_back_paired_added_us": ab}
        alt.append(r)
    alt.append(res("layer-side", 3, 0.0, 0.0, 3.0))
    s5 = br.summarize_rounds(alt)
    check(len(s5) == 1 and near(s5[0]["over_copy_alternated_back_to_back_us"], 4.0, -2.0, 7.0)
          and near(s5[0]["over_copy_alternated_added_us"], 11.0, 9.0, 15.0), "alternated with the copies: %r" % s5)
    if s5:
        ln = br.summary_line(s5[0])
        check("alternated with the copies, pair by pair: back to back +4.0 us (-2.0 .. +7.0), synced +11.0 us" in ln,
              "summary line alternated with the copies: %s" % ln)
    check(br.summarize_rounds([res("layer-side", 0, 0.0, 0.0, 3.0)])[0]["over_copy_alternated_added_us"] is None,
          "no copy step alternated, no figure")
    # The median's confidence interval from order statistics: 16 values keep the 4th to the 13th
    # (1 - 2 P(B(16, 1/2) <= 3) = 97.9 %, where dropping one more would give 92.3 %), 64 the 24th to
    # the 41st; 5 values are too few for 95 % (min, max); the values' order does not matter.
    ci16 = bt.median_ci([float(x) for x in reversed(range(16))])
    check(ci16 == (3.0, 12.0) and bt.median_ci(list(range(64))) == (23, 40) and bt.median_ci([5, 1, 3, 2, 4]) == (1, 5)
          and bt.median_ci([]) is None, "median_ci: %r" % (ci16,))
    # ... and it covers the true median at least 95 % of the time (skewed draws, 20 pairs each).
    rng = __import__("random").Random(7)
    cover = sum(lo <= 1.0 <= hi for lo, hi in (bt.median_ci([rng.expovariate(1.0) / 0.6931471805599453
                                                             for _ in range(20)]) for _ in range(2000)))
    check(1900 <= cover <= 2000, "median_ci covered the median in %d of 2000 draws" % cover)
    # Every round's pairs against the copies pooled: the median of the 12 differences and its interval.
    pooled = []
    for rnd in range(3):
        r = res("layer-side", rnd, 0.0, 0.0, 3.0)
        r["vs_copy"] = {"added_us": 1.0, "paired_added_us": 0.0, "back_to_back_added_us": 1.0,
                        "back_to_back_paired_added_us": 0.0,
                        "pairs_ms": [[46.0 + 0.001 * (4 * rnd + i), 46.0] for i in range(4)],
                        "back_to_back_pairs_ms": [[47.002, 47.0]] * 3}
        pooled.append(r)
    s6 = br.summarize_rounds(pooled)[0]
    q = s6["over_copy_pooled_added_us"]
    check(q is not None and q["pairs"] == 12 and abs(q["median"] - 5.5) < 1e-6
          and [round(x, 6) for x in q["ci"]] == [2.0, 9.0]
          and s6["over_copy_pooled_back_to_back_us"]["pairs"] == 9, "pooled pairs: %r" % s6)
    ln = br.summary_line(s6)
    check("every round's pairs pooled (95 % CI of the median): back to back +2.0 us [+2.0 .. +2.0] of 9 pairs, "
          "synced +5.5 us [+2.0 .. +9.0] of 12 pairs" in ln, "summary line, pooled: %s" % ln)
    check(s5[0]["over_copy_pooled_added_us"] is None, "rounds without pairs: no pooled figure: %r" % s5)
    # A -pieces variant against the same pieces without lookups (vs_pieces): its own figures, apart
    # from the copies', summarized, pooled and on both lines.
    vp = []
    for rnd, (ab, asy) in enumerate(((3.0, -20.0), (5.0, -10.0), (1.0, -15.0))):
        r = res("layer-split-pieces", rnd, None, 0.0, 3.0)
        r["vs_pieces"] = {"added_us": asy, "paired_added_us": asy, "back_to_back_added_us": ab,
                          "back_to_back_paired_added_us": ab, "pairs_ms": [[46.001, 46.0]] * 2,
                          "back_to_back_pairs_ms": [[47.003, 47.0]] * 2}
        vp.append(r)
    s7 = br.summarize_rounds(vp)[0]
    check(near(s7["over_pieces_alternated_back_to_back_us"], 3.0, 1.0, 5.0)
          and near(s7["over_pieces_alternated_added_us"], -15.0, -20.0, -10.0)
          and s7["over_pieces_pooled_added_us"]["pairs"] == 6 and s7["over_copy_alternated_added_us"] is None,
          "alternated with the pieces without lookups: %r" % s7)
    ln = br.summary_line(s7)
    check("alternated with the same pieces without lookups, pair by pair: back to back +3.0 us (+1.0 .. +5.0), "
          "synced -15.0 us (-20.0 .. -10.0); pooled: back to back +3.0 us" in ln, "summary line, vs_pieces: %s" % ln)
    # The summaries as a markdown table (python3 -m eht.bench_step_report REPORT.json): a -pieces
    # variant over the same pieces (pooled), a variant over the step without lookups (pair by pair, the
    # rounds' median) and over the copies (pooled); what the rounds lack is '-'.
    tab = br.markdown_table([s7, s6]).splitlines()
    check(len(tab) == 4 and tab[0].startswith("| mode | workload | variant |")
          and tab[2] == "| decode | uniform | `layer-split-pieces` | 3 | +3.0 [+1.0] | - | 3.00 |"
          and tab[3] == "| decode | uniform | `layer-side` | 3 | +0.0 [+0.0] | +2.0 [+5.5] | 3.00 |",
          "markdown table: %r" % tab)
    with tempfile.TemporaryDirectory() as d:
        rp, bad = os.path.join(d, "r.json"), os.path.join(d, "bad.json")
        with open(rp, "w", encoding="utf-8") as f:
            json.dump({"results": pooled}, f)
        with open(bad, "w", encoding="utf-8") as f:
            f.write("{not json")
        r = subprocess.run([sys.executable, "-m", "eht.bench_step_report", rp], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=os.path.join(src, "python")), check=False)
        check(r.returncode == 0 and "| `layer-side` | 3 | +0.0 [+0.0] | +2.0 [+5.5] |" in r.stdout,
              "the report's table from its JSON: %r %r" % (r.stdout, r.stderr))
        r = subprocess.run([sys.executable, "-m", "eht.bench_step_report", bad], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=os.path.join(src, "python")), check=False)
        check(r.returncode == 1 and bad in r.stderr and not r.stdout, "a file that is no report: %r" % (r.stderr,))
    one = dict(vp[0], added_pct=0.0)
    one["step"].update(median_ms=3.0, p90_ms=3.1)
    ln = br.line(one)
    check("alternated with the same pieces without lookups: added +3.0 us back to back (pair by pair +3.0), "
          "-20.0 synced (-20.0)" in ln, "a result's line, vs_pieces: %s" % ln)
    ln = br.line(dict(one, vs_pieces=None, vs_pieces_error="RuntimeError: boom"))
    check("the same pieces without lookups: not measured (RuntimeError: boom)" in ln, "vs_pieces error: %s" % ln)
    one = dict(res("layer-side", 0, None, 0.0, 3.0), vs_copy=alt[0]["vs_copy"], added_pct=0.0)
    one["step"].update(median_ms=3.0, p90_ms=3.1)
    ln = br.line(one)
    check("alternated with the copies: added +5.0 us back to back (pair by pair +4.0), +10.0 synced (+9.0)" in ln,
          "a round's line alternated with the copies: %s" % ln)
    one["vs_copy"] = dict(alt[0]["vs_copy"], paired_added_ci_us=[-3.0, 20.5],
                          back_to_back_paired_added_ci_us=[1.0, 6.0])
    ln = br.line(one)
    check("(pair by pair +4.0 [+1.0 .. +6.0]), +10.0 synced (+9.0 [-3.0 .. +20.5])" in ln,
          "a round's line with the pairs' intervals: %s" % ln)
    del one["vs_copy"]
    one["vs_copy_error"] = "OutOfMemoryError: boom"
    ln = br.line(one)
    check("alternated with the copies: not measured (OutOfMemoryError: boom)" in ln and "step " in ln,
          "a round whose alternation failed keeps its own line: %s" % ln)
    # --trace's graph half over the rounds: both joins' stalls summed per round (ms -> us), queued
    # and synced; a round without the graph half (an older torch) is left out of them.
    traced = []
    for rnd, (q0, q1, s0) in enumerate(((0.010, 0.004, 0.001), (0.030, 0.000, 0.002), (0.020, None, 0.003))):
        r = res("layer-side", rnd, 10.0, 20.0, 3.0)
        r["trace"] = {"graph": {"queued": {"stall0_ms": q0, "stall1_ms": q1},
                                "synced": {"stall0_ms": s0, "stall1_ms": 0.001}}}
        traced.append(r)
    traced.append(dict(res("layer-side", 3, 10.0, 20.0, 3.0), trace={"graph": None}))
    s3 = br.summarize_rounds(traced)
    def spread_is(d, m, lo, hi):
        return d is not None and all(abs(d[k] - v) < 1e-9 for k, v in (("median", m), ("min", lo), ("max", hi)))
    check(len(s3) == 1 and s3[0]["rounds"] == 4 and spread_is(s3[0]["graph_stall_queued_us"], 20.0, 14.0, 30.0)
          and spread_is(s3[0]["graph_stall_synced_us"], 3.0, 2.0, 4.0), "graph stalls over the rounds: %r" % s3)
    if s3:
        ln = br.summary_line(s3[0])
        check("stalls at the joins in the graph: queued +20.0 us (+14.0 .. +30.0), synced +3.0 us" in ln,
              "summary line with the graph stalls: %s" % ln)
    check(summ and summ[0]["graph_stall_queued_us"] is None and "stalls at the joins" not in br.summary_line(summ[0]),
          "no --trace, no stall figures: %r" % (summ[:1],))

    r = run(["--help"])
    check(r.returncode == 0 and "--variants" in r.stdout and "vllm" in r.stdout and "--timeline" in r.stdout,
          "--help: %s" % r.stderr)
    r = run(["--mode", "decode,prefill", "--variants", "none,vllm,host+bg-side,auto-inline", "--layers", "8",
             "--engram-layers", "1,6", "--table-gib", "0.5", "--dry-run", "--json"])
    check(r.returncode == 0, "dry run exits 0: %s" % r.stderr)
    rep = json.loads(r.stdout) if r.returncode == 0 else {}
    check(rep.get("bench") == "step" and "eht_version" in rep and "time_utc" in rep and "host" in rep,
          "envelope: bench, version, time, host")
    check(rep.get("variants") == ["none", "vllm", "host+bg-side", "auto-inline"], "variants: %r" % rep.get("variants"))
    plan = rep.get("plan") or []
    check([p["mode"] for p in plan] == ["decode", "prefill"], "two modes planned")
    if len(plan) == 2:
        check(plan[0]["tokens"] == 256 and plan[0]["ffn"] == 16384 and plan[0]["ids_per_table"] == 6144,
              "decode shape: %r" % plan[0])
        check(plan[1]["tokens"] == 8192 and plan[1]["ffn"] == 8192 and plan[1]["layers"] == 8,
              "prefill shape: %r" % plan[1])
    check(rep.get("engram_layers") == [1, 6] and rep.get("table_gib") == 0.5, "layers and table size")
    check(rep.get("rounds") == 1, "one round by default: %r" % rep.get("rounds"))
    check(rep.get("burst") == 8, "bursts of 8 back-to-back replays by default: %r" % rep.get("burst"))
    r = run(["--rounds", "4", "--burst", "2", "--dry-run", "--json"])
    check(r.returncode == 0 and json.loads(r.stdout).get("rounds") == 4, "--rounds 4 in the envelope: %s" % r.stderr)
    check(r.returncode == 0 and json.loads(r.stdout).get("burst") == 2, "--burst 2 in the envelope")
    dv = json.loads(r.stdout).get("variants", []) if r.returncode == 0 else []
    check({"none", "vllm", "vllm-inline", "copy", "layer-side", "layer-inline", "auto+bg-side"} <= set(dv),
          "the default variants hold the baseline, the floor and the mode the docs recommend: %r" % dv)
    r = run(["--tp", "4", "--rank", "1", "--dry-run", "--json"])
    rep = json.loads(r.stdout) if r.returncode == 0 else {}
    check((rep.get("tp"), rep.get("rank"), rep.get("head_start"), rep.get("part")) == (4, 1, 6, 6),
          "--tp 4 --rank 1 in the envelope: %s %s" % ({k: rep.get(k) for k in ("tp", "rank", "head_start", "part")},
                                                    r.stderr))
    plan = rep.get("plan") or [{}]
    check(plan[0].get("ids_per_table") == 6144 and plan[0].get("rows_per_table") == 1536,
          "a tp-4 rank's decode: 6,144 ids hashed, 1,536 rows looked up: %r" % plan[0])
    dv = rep.get("variants", [])
    check("layer-side" in dv and "vllm" in dv and not any("+bg" in x for x in dv),
          "--tp's default variants leave out the flat-id strategy variants: %r" % dv)
    for bad in (["--mode", "train"], ["--variants", "auto"], ["--engram-layers", "1"],
                ["--engram-layers", "1,20"], ["--workload", "text:/nonexistent"], ["--table-gib", "0"],
                ["--rounds", "0"], ["--burst", "0"], ["--tp", "7"], ["--tp", "13"], ["--tp", "4", "--rank", "4"],
                ["--tp", "2", "--rank", "-1"], ["--tp", "4", "--variants", "none,host+bg-side"]):
        r = run(bad + ["--dry-run"])
        check(r.returncode == 2 and r.stderr.strip(), "%s exits 2 with a message (%d)" % (bad, r.returncode))

    clocks_checks()
    try:
        import torch  # noqa: F401,PLC0415
        have_gpu = torch.cuda.is_available()
    except ImportError:
        have_gpu = False
    if not have_gpu:
        r = run(["--table-gib", "0.01", "--variants", "none"])
        check(r.returncode == 77, "without torch or a GPU the run exits 77 (%d: %s)" % (r.returncode, r.stdout))
    else:  # a small step on the GPU: every kind of variant runs and reports
        r = run(["--mode", "decode", "--layers", "4", "--engram-layers", "1,3", "--tokens", "16", "--hidden", "512",
                 "--ffn", "1024", "--table-gib", "0.05", "--reps", "3", "--warmup", "1", "--json",
                 "--variants", "none,copy,host+bg-side,host+bg+ldq-side,host+bg+raw-side,host+bg+push-side,"
                 "copy-pieces,layer-pieces,layer-split,layer-split-pieces,copy-split-pieces"])
        check(r.returncode == 0, "small GPU run exits 0: %s" % r.stderr[-2000:])
        rep = json.loads(r.stdout) if r.returncode == 0 else {}
        res = {x["variant"]: x for x in rep.get("results", [])}
        # the GPU's clocks beside the mode's runs: sampled by nvidia-smi where the machine has it
        gc = rep.get("gpu_clocks") or [{}]
        check(len(gc) == 1 and gc[0].get("mode") == "decode" and gc[0].get("workload") == "uniform"
              and (gc[0].get("samples", 0) > 0 if shutil.which("nvidia-smi") else "error" in gc[0]),
              "the GPU's clocks beside the runs: %r" % gc)
        for name in ("copy", "host+bg-side", "host+bg+ldq-side", "host+bg+raw-side", "host+bg+push-side",
                     "copy-pieces", "layer-pieces", "layer-split", "layer-split-pieces", "copy-split-pieces"):
            x = res.get(name, {})
            check("error" not in x and x.get("lookups_alone", {}).get("median_ms", 0) > 0 and "added_us" in x,
                  "%s measured: %r" % (name, x))
        for name in ("layer-pieces", "copy-pieces"):  # (the copies' run: a table's three copies)
            ec = res.get(name, {}).get("eager_call_us") or []
            check(len(ec) == 2 and all(c and c["calls"] >= 3 and c["median"] > 0 for c in ec),
                  "%s: each table's eager calls on the launching thread: %r" % (name, ec))
        for name in ("copy-pieces", "layer-pieces", "layer-split-pieces", "copy-split-pieces"):
            check("paired_added_us" in (res.get(name, {}).get("vs_pieces") or {}),
                  "%s alternated with the pieces without lookups: %r" % (name, res.get(name, {}).get("vs_pieces_error")))
        # the split pieces alternated with the copies captured into the same pieces (like for like)
        check("paired_added_us" in (res.get("layer-split-pieces", {}).get("vs_copy") or {}),
              "layer-split-pieces alternated with the copies' captured pieces: %r"
              % res.get("layer-split-pieces", {}).get("vs_copy_error"))
        check("paired_added_us" in (res.get("layer-pieces", {}).get("vs_copy") or {}),
              "layer-pieces alternated with the copies' pieces: %r" % res.get("layer-pieces", {}).get("vs_copy_error"))
        check(res.get("copy", {}).get("last_strategy") == "copy", "copy: no eht engine ran")
        byt = res.get("host+bg-side", {}).get("step", {}).get("cpu_ms_by_thread") or {}
        check(byt.get("pool", 0) > 0 and byt.get("poller", 0) > 0, "host+bg: its pool's and poller's CPU: %r" % byt)
        check(res.get("host+bg-side", {}).get("step", {}).get("launch_us", 0) > 0 and
              res.get("host+bg-side", {}).get("none_paired", {}).get("launch_us", 0) > 0, "launch times")
        # a tp-5 rank with a padded head: the engine's call both ways, vLLM's kernel and the copy run
        r = run(["--mode", "decode", "--layers", "4", "--engram-layers", "1,3", "--tokens", "16", "--hidden", "512",
                 "--ffn", "1024", "--table-gib", "0.05", "--reps", "3", "--warmup", "1", "--json", "--tp", "5",
                 "--rank", "4", "--variants", "none,copy,layer-side,layer-inline,vllm"])
        check(r.returncode == 0, "small tp-5 GPU run exits 0: %s" % r.stderr[-2000:])
        res = {x["variant"]: x for x in json.loads(r.stdout)["results"]} if r.returncode == 0 else {}
        for name in ("copy", "layer-side", "layer-inline", "vllm"):
            x = res.get(name, {})
            check("error" not in x and x.get("lookups_alone", {}).get("median_ms", 0) > 0,
                  "tp 5 rank 4, %s measured: %r" % (name, x))
        # --trace: the eager marks and the graph captured with its marks (event nodes), side lookups
        # included (a mark left after the side stream's last join made the capture fail as unjoined)
        r = run(["--mode", "decode", "--layers", "4", "--engram-layers", "1,3", "--tokens", "16", "--hidden", "512",
                 "--ffn", "1024", "--table-gib", "0.05", "--reps", "3", "--warmup", "1", "--json", "--trace",
                 "--variants", "none,copy,layer-side,layer-inline"])
        check(r.returncode == 0, "small --trace GPU run exits 0: %s" % r.stderr[-2000:])
        res = {x["variant"]: x for x in json.loads(r.stdout)["results"]} if r.returncode == 0 else {}
        for name in ("copy", "layer-side", "layer-inline"):
            tr = res.get(name, {}).get("trace") or {}
            check("graph_error" not in tr and (tr.get("graph") or {}).get("synced", {}).get("step_ms"),
                  "%s: its step traced as a graph: %r" % (name, tr))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
