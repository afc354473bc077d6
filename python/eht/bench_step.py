# SPDX-License-Identifier: Apache-2.0
"""eht bench step: what a model step pays for Engram lookups (python3 -m eht.bench_step, or `eht bench step`).

A simulated DeepSeek-V4.1-shaped step: `layers` layers of `relu(x @ W1) @ W2` in bf16 (x [T, hidden],
W1 [hidden, F], W2 [F, hidden]); the Engram rows of two tables are consumed at two layers (V4.1: 1 and
14) as `x += rows.view(T, 24 * 256) @ E` (E [6144, hidden]). Each table holds --table-gib GiB of 264 B
rows (anonymous memory, THP advised, pinned), looked up into bf16 with fresh ids before every replay;
the whole step is one CUDA graph. Variants:

  none                 no lookups (the step's own time)
  vllm, vllm-side      vLLM's own lookup algorithm (eht.vllm_baseline: a persistent Triton grid, 16 rows a
                       program, UVA reads of the split layout, bf16 out) on the side stream, grid SMs / 2
  vllm-inline          the same on the main stream right before the layer, grid SMs (vLLM's placement
                       from 4,096 tokens)
  copy                 no lookup: only the bytes a decode or prefill batch's raw rows take, copied from
                       pinned host memory on the side stream in three pieces (the copy engine, as
                       the background mode moves them): what any host-table design must at least pay
  STRATEGY[+OPT..]-side    eht on one side stream forked at the step's start, joined by one event per
                       table before its layer (vLLM's prefetch)
  STRATEGY[+OPT..]-inline  eht on the main stream right before the layer
  layer-side, layer-inline  the engine's own call, eht.torch.EngramLayer(table).lookup(ids,
                       out, background) with vLLM's arguments: background=True on the side stream,
                       False inline (what an engine's natural call gets, nothing hand-picked)
  layer+stream-side    the same made with push=False (captured lookups the stream's way)
  STRATEGY: one of the library's lookup strategies (eht.STRATEGIES); OPT: bg (the background mode), push / stream (with bg:
  captured lookups pushed by the CPU, two graph nodes a lookup, the default; or the stream's way), capN (SM cap N), dedup,
  nohot (a text workload's hot set left out),
  pspinN / bspinN (the CPU pool's / the doorbell poller's spin after a job, us), ldq (late dequant:
  the engines look rows up raw and the main stream dequantizes them right before their layer,
  eht_lookup_dequant, instead of a dequant kernel beside the model's)

--trace adds, per variant, an eager run with CUDA events on both streams: the lookups' times under
load, how long the main stream stalled waiting for each table's rows, and how much slower the layers
ran beside the lookups (interference): where the added time goes.

--rounds N measures every variant N times in turn, the tables made once: a VM's step time varies
from run to run by more than some of the effects measured (on the lent H200 about +-40 us in decode
and +-0.5 ms in prefill), so one run's figure can mislead. The report then gets a summary per
variant: the median and range over the rounds of both figures of time added and of the CPU, and,
where the copy variant ran too, of the variant less the copies round by round (what a host table's
lookup costs over moving its bytes alone, the yardstick of the engine-native targets).

--tp N [--rank R] looks up as tensor-parallel rank R of N does (ENGRAM.md): the columns [R * part,
(R + 1) * part) of the [T, 24] hash output, part = cdiv(24, N), padded heads zero, and only the rows of
the rank's head ranges (each table's 24 head ranges are V4.1's, scaled to its rows; uniform ids are then
drawn per head range); the layers consume [T, part, 256], the copy moves the rank's rows. The model
stays one GPU's. The engine's call (layer-*), vLLM's kernel (vllm*), copy and none take it; the
STRATEGY variants look up flat ids and run at --tp 1 only (left out of the default variants there).

--timeline DIR profiles a few graph replays of each variant (torch.profiler, that is CUPTI) and writes
DIR/MODE-WORKLOAD-VARIANT.json, a trace for chrome://tracing or ui.perfetto.dev with every kernel
and copy of the replayed step on its stream; the report gets a summary per variant: the model's
kernels' time (against the step without lookups: what eht's work beside them cost them), eht's
kernels (time, the widest grid: SMs held) and copies, and when eht's first and last pieces ran. Each
of those replays follows a sync; the same replays queued back to back (a burst, as the back-to-back
figure times them) go to DIR/MODE-WORKLOAD-VARIANT-queued.json, summarized the same way plus the GPU's
idle gap between one step's last piece and the next step's first: what a queued step waits for.

Reports per variant the step's median and p90, the time it adds (us and % of the step without lookups,
whose replays alternate with the variant's: the GPU's clocks drift over a run by more than what is
measured), the process's CPU time per step (user + sys, less the step's own without lookups; in the
JSON also by thread, cpu_ms_by_thread: eht's pool, its doorbell poller, the rest; and how often each
kind was put on a CPU per step, runs_per_step_by_thread: the poller's naps, the pool's wake-ups; the
text line shows the pool's and the poller's CPU and the poller's runs),
the graph's launch call (launch_us, against the step without lookups: part of each synced step),
and both tables' lookups alone as a graph. Each replay is timed alone (a host sync before the next): the
graph's launch is then part of the step, as in an engine that waits for each step's tokens before it
launches the next, and eht's CPU work during the launch slows the launch. "back to back" times
bursts of replays queued without a sync (an engine that schedules ahead; --burst replays each, 8;
2 is an engine one step ahead, as vLLM's async scheduling and SGLang's overlap scheduler, and
shows the first launch of each burst more): the launch hides behind the step before it and what is
added is the GPU's own cost of the lookups. --json writes one
report (scripts/plot-bench draws it). Needs PyTorch with CUDA and a GPU (exit 77 without)."""
import argparse
import json
import os
import platform
import resource
import socket
import statistics
import sys
import time

ROW_BYTES = 264
HEADS = 24
DIM = 256
# V4.1's head moduli per Engram layer (ENGRAM.md) and its hash multipliers.
PRIMES = [
    [16000057, 16000079, 16000081, 16000097, 16000121, 16000129, 16000133, 16000183, 16000189, 16000207,
     16000211, 16000253, 16000277, 16000289, 16000307, 16000321, 16000339, 16000381, 16000393, 16000399,
     16000403, 16000409, 16000447, 16000463],
    [16000477, 16000487, 16000499, 16000507, 16000511, 16000573, 16000609, 16000627, 16000667, 16000669,
     16000693, 16000697, 16000711, 16000729, 16000759, 16000769, 16000781, 16000799, 16000813, 16000819,
     16000841, 16000877, 16000879, 16000889],
]
MULT = [[76632096046245, 4839876093313, 35959672319349, 73987337458391],
        [67716810739261, 51510806800915, 30921347202721, 82619226485591]]
PAD = 2
MODES = {"decode": {"tokens": 256, "ffn": 16384, "reps": 40},
         "prefill": {"tokens": 8192, "ffn": 8192, "reps": 15}}
DEFAULT_VARIANTS = ("none,copy,vllm,vllm-inline,layer-side,layer-inline,auto+bg-side,auto+bg+push-side,"
                    "host+bg-side")


def parse_variant(spec):
    """'none' | 'vllm' | STRATEGY[+bg][+capN][+dedup][+ldq]-side|inline -> dict (ValueError when malformed)."""
    spec = spec.strip()
    if spec == "none":
        return {"name": "none", "strategy": None, "place": None, "background": False, "sm_cap": 0,
                "dedup": False, "late_dequant": False}
    if spec in ("vllm", "vllm-side", "vllm-inline"):
        # vLLM's own lookup algorithm (eht.vllm_baseline, Triton): on the side stream with its background
        # grid (SMs / 2), or inline before the layer with the full grid (vLLM's placement from 4,096 tokens)
        place = "inline" if spec == "vllm-inline" else "side"
        return {"name": spec, "strategy": None, "place": place, "background": place == "side", "sm_cap": 0,
                "dedup": False, "late_dequant": False, "vllm": True}
    if spec.startswith("layer"):
        # the engine's own call: eht.torch.EngramLayer.lookup(ids, out, background) with vLLM's arguments,
        # background=True on the side stream, False inline (what an engine's natural call gets). On a text
        # workload its inline way loads the hot set as a served table's would; +nohot: without it
        head, _, place = spec.rpartition("-")
        opts = head.split("+")
        if opts[0] != "layer" or place not in ("side", "inline") or \
                any(o not in ("push", "stream", "nohot") for o in opts[1:]) or ("push" in opts and "stream" in opts):
            raise ValueError("variant %r: layer[+push|+stream][+nohot]-side|inline" % spec)
        if place == "inline" and ("push" in opts or "stream" in opts):
            raise ValueError("variant %r: push and stream are ways of the background call (-side)" % spec)
        return {"name": spec, "strategy": "auto", "place": place, "background": place == "side", "sm_cap": 0,
                "dedup": False, "late_dequant": False, "layer": True, "no_hot": "nohot" in opts,
                "push": True if "push" in opts else False if "stream" in opts else None}
    if spec == "copy":
        return {"name": "copy", "strategy": None, "place": "side", "background": False, "sm_cap": 0,
                "dedup": False, "late_dequant": False, "copy_only": True}
    head, sep, place = spec.rpartition("-")
    if not sep or place not in ("side", "inline"):
        raise ValueError("variant %r: STRATEGY[+OPT]-side|inline, none or vllm" % spec)
    parts = head.split("+")
    from . import STRATEGIES, EhtError  # noqa: PLC0415 (the library's own list, read when a variant names one)
    try:
        names = list(STRATEGIES)
    except (OSError, EhtError) as e:  # no libeht to ask: the variant cannot be checked
        raise ValueError("variant %r: the library's strategies are unreadable (%s)" % (spec, e)) from e
    if parts[0] not in names:
        raise ValueError("variant %r: strategy %r is not one of %s" % (spec, parts[0], ", ".join(names)))
    v = {"name": spec, "strategy": parts[0], "place": place, "background": False, "sm_cap": 0, "dedup": False,
         "late_dequant": False}
    for p in parts[1:]:
        if p == "bg":
            v["background"] = True
        elif p == "dedup":
            v["dedup"] = True
        elif p in ("push", "stream"):
            v["push"] = p == "push"
        elif p == "ldq":
            v["late_dequant"] = True
        elif p == "nohot":  # a text workload's hot set left out: the A/B of the hot set in the step
            v["no_hot"] = True
        elif p.startswith("cap") and p[3:].isdigit() and int(p[3:]) > 0:
            v["sm_cap"] = int(p[3:])
        elif p.startswith("pspin") and p[5:].isdigit():
            v["pool_spin_us"] = int(p[5:])
        elif p.startswith("bspin") and p[5:].isdigit():
            v["bell_spin_us"] = int(p[5:])
        else:
            raise ValueError("variant %r: unknown option %r (bg, push, stream, capN, dedup, pspinN, bspinN, ldq, nohot)" % (spec, p))
    if v.get("push") is not None and not v["background"]:
        raise ValueError("variant %r: push and stream are ways of the background mode (bg+push, bg+stream)" % spec)
    return v


def _int_list(s):
    try:
        out = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("%r: comma-separated integers" % s)
    if not out or min(out) < 0:
        raise argparse.ArgumentTypeError("%r: comma-separated integers >= 0" % s)
    return out


def _number(conv, noun, ok, bound):
    """An argparse type: conv(s), refused unless ok(value), with "%r is not <noun>" / "%r: <bound>"."""
    def parse(s):
        try:
            v = conv(s)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not %s" % (s, noun))
        if not ok(v):
            raise argparse.ArgumentTypeError("%r: %s" % (s, bound))
        return v
    return parse


_pos_int = _number(int, "an integer", lambda v: v >= 1, "at least 1")
_pos_float = _number(float, "a number", lambda v: v > 0, "above 0")


def _json_line(obj):
    """One compact JSON object a line: the CLI's --json contract (docs/CLI.md)."""
    return json.dumps(obj, separators=(",", ":"))


def _fail(json_out, code, msg):
    """An error as the CLI says it: "eht bench step: msg" on stderr and, with --json, one object
    {"error", "command", "exit"} on stdout. Returns code."""
    print("eht bench step: %s" % msg, file=sys.stderr, flush=True)
    if json_out:
        print(_json_line({"error": msg, "command": "eht bench step", "exit": code}), flush=True)
    return code


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors keep the --json contract (one error object on stdout)."""

    def __init__(self, *args, json_errors=False, **kw):
        super().__init__(*args, **kw)
        self._json_errors = json_errors

    def error(self, message):
        if not self._json_errors:
            super().error(message)
        sys.exit(_fail(True, 2, message))


def parse_args(argv):
    ap = _Parser(prog="eht bench step", description=__doc__.split("\n\n")[0],
                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1],
                 json_errors="--json" in argv)
    ap.add_argument("--mode", default="decode", help="decode, prefill, or both (decode,prefill)")
    ap.add_argument("--layers", type=_pos_int, default=16, help="model layers (16)")
    ap.add_argument("--tokens", type=_pos_int, help="T (decode 256, prefill 8192)")
    ap.add_argument("--hidden", type=_pos_int, default=7168, help="hidden size (7168)")
    ap.add_argument("--ffn", type=_pos_int, help="F (decode 16384, prefill 8192)")
    ap.add_argument("--table-gib", type=_pos_float, default=24.0, help="GiB of each of the two tables")
    ap.add_argument("--engram-layers", type=_int_list, default=[1, 14], help="the two consuming layers")
    ap.add_argument("--workload", default="uniform", help="uniform, text:FILE, or both comma-separated")
    ap.add_argument("--hotset-rows", type=int, default=1 << 20,
                    help="hot set of a text workload (most frequent rows of its first half; 0: none)")
    ap.add_argument("--variants", default=DEFAULT_VARIANTS, help="comma-separated (default %(default)s)")
    ap.add_argument("--reps", type=_pos_int, help="timed replays (decode 40, prefill 15)")
    ap.add_argument("--warmup", type=_pos_int, default=5, help="untimed replays first (5)")
    ap.add_argument("--burst", type=_pos_int, default=8, help="replays per back-to-back burst (see above)")
    ap.add_argument("--rounds", type=_pos_int, default=1,
                    help="measure every variant this many times in turn and summarize (see above)")
    ap.add_argument("--threads", type=int, default=0, help="eht's CPU pool (0: its default)")
    ap.add_argument("--tp", type=_pos_int, default=1, help="tensor-parallel ranks sharing the heads (1; see above)")
    ap.add_argument("--rank", type=int, default=0, help="the rank looked up as, with --tp (0)")
    ap.add_argument("--sync", choices=("block", "spin"), default="block",
                    help="how the host waits for each step: a blocking event (the thread sleeps) or a spin")
    ap.add_argument("--device", type=int, default=0, help="the GPU (0)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (1)")
    ap.add_argument("--trace", action="store_true", help="also time the pieces of an eager step (see above)")
    ap.add_argument("--timeline", metavar="DIR", help="also profile graph replays: a trace per variant (see above)")
    ap.add_argument("--json", action="store_true", help="one JSON report on stdout")
    ap.add_argument("--dry-run", action="store_true", help="check the options and print the plan (no GPU)")
    a = ap.parse_args(argv)
    modes = [m for m in a.mode.split(",") if m]
    bad = [m for m in modes if m not in MODES]
    if not modes or bad:
        ap.error("--mode: decode, prefill or decode,prefill (not %s)" % ",".join(bad or ["nothing"]))
    a.modes = modes
    try:
        a.variant_list = [parse_variant(v) for v in a.variants.split(",") if v.strip()]
    except ValueError as e:
        ap.error(str(e))
    if not a.variant_list:
        ap.error("--variants: none given")
    names = [v["name"] for v in a.variant_list]
    if len(set(names)) != len(names):
        ap.error("--variants: %s repeats" % a.variants)
    if len(a.engram_layers) != 2 or len(set(a.engram_layers)) != 2:
        ap.error("--engram-layers: two distinct layers, e.g. 1,14")
    if max(a.engram_layers) >= a.layers:
        ap.error("--engram-layers %s: a layer beyond --layers %d" % (a.engram_layers, a.layers))
    a.engram_layers = sorted(a.engram_layers)
    a.workloads = [w for w in a.workload.split(",") if w]
    for w in a.workloads:
        if w != "uniform" and not (w.startswith("text:") and len(w) > 5):
            ap.error("--workload %r: uniform or text:FILE" % w)
        if w.startswith("text:") and not os.path.isfile(w[5:]):
            ap.error("--workload %r: no such file" % w)
    if a.hotset_rows < 0 or a.threads < 0 or a.device < 0:
        ap.error("--hotset-rows, --threads and --device are >= 0")
    a.part = -(-HEADS // a.tp)
    if a.tp > 12 or (a.tp - 1) * a.part >= HEADS:
        ap.error("--tp %d: a rank would own no head (vLLM refuses 7, 9-11 and above 12)" % a.tp)
    if not 0 <= a.rank < a.tp:
        ap.error("--rank %d: 0 .. %d with --tp %d" % (a.rank, a.tp - 1, a.tp))
    flat = [v["name"] for v in a.variant_list if v["strategy"] and not v.get("layer")]
    if a.tp > 1 and flat and a.variants == DEFAULT_VARIANTS:  # the defaults a rank can run
        a.variant_list = [v for v in a.variant_list if v["name"] not in flat]
        a.variants = ",".join(v["name"] for v in a.variant_list)
    elif a.tp > 1 and flat:
        ap.error("--tp %d: %s look up flat ids of every head (--tp 1 only); the engine's call is layer-side / "
                 "layer-inline" % (a.tp, ", ".join(flat)))
    a.head_start = a.rank * a.part
    return a


def plan(a):
    """Shapes of each mode, as reported."""
    out = []
    for m in a.modes:
        d = MODES[m]
        out.append({"mode": m, "tokens": a.tokens or d["tokens"], "hidden": a.hidden, "ffn": a.ffn or d["ffn"],
                    "layers": a.layers, "reps": a.reps or d["reps"],
                    "ids_per_table": (a.tokens or d["tokens"]) * HEADS,
                    "rows_per_table": (a.tokens or d["tokens"]) * a.part})
    return out


def envelope(a):
    try:
        import eht  # noqa: PLC0415
        version = eht.__version__
    except Exception:  # noqa: BLE001 (the report still says what it can)
        version = None
    return {"bench": "step", "eht_version": version, "host": socket.gethostname(),
            "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
            "table_gib": a.table_gib, "tables": 2, "row_bytes": ROW_BYTES, "format": "bf16",
            "engram_layers": a.engram_layers, "sync": a.sync, "burst": a.burst, "threads": a.threads, "rounds": a.rounds,
            "tp": a.tp, "rank": a.rank, "head_start": a.head_start, "part": a.part,
            "variants": [v["name"] for v in a.variant_list], "workloads": a.workloads, "plan": plan(a),
            "gpu": None, "results": []}


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


# --------------------------------------------------------------------------- workloads
def text_rows(torch, path, table_rows, dev):
    """Row ids [tokens, 2 tables, 24] of a text file hashed with the V4.1 layout (identity token map,
    documents from FILE.starts.json), each layer's ids scaled to table_rows (order kept)."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data = data[:len(data) // 4 * 4]  # compressed ids are < 2^17: int32 reads them as uint32 LE
    comp = torch.frombuffer(data, dtype=torch.int32).to(dev, dtype=torch.int64)
    n = comp.numel()
    starts = [0]
    sp = path + ".starts.json"
    if os.path.exists(sp):
        with open(sp) as f:
            starts = sorted({0} | {int(s) for s in json.load(f) if 0 <= int(s) < n})
    st = torch.tensor(starts, dtype=torch.int64, device=dev)
    ar = torch.arange(n, device=dev)
    pos = ar - st[torch.searchsorted(st, ar, right=True) - 1]
    out = torch.empty((n, 2, HEADS), dtype=torch.int64, device=dev)
    for layer in range(2):
        P = torch.tensor(PRIMES[layer], dtype=torch.int64, device=dev)
        off = torch.cumsum(P, 0) - P
        layer_rows = int(P.sum())
        R = torch.zeros(n, dtype=torch.int64, device=dev)
        blocked = torch.zeros(n, dtype=torch.bool, device=dev)
        for s in range(4):
            blocked = blocked | (pos - s < 0)
            v = torch.where(blocked, torch.full_like(comp, PAD), comp[(ar - s).clamp(min=0)])
            R = R ^ (v * MULT[layer][s])
            if s >= 1:
                cols = slice((s - 1) * 8, s * 8)
                out[:, layer, cols] = R[:, None] % P[cols] + off[cols]
        out[:, layer] = out[:, layer] * table_rows // layer_rows
    return out


def head_offsets(table_rows):
    """Per table, the 25 bounds of its 24 head ranges in the bench's rows: V4.1's (PRIMES) scaled to
    table_rows as text_rows scales its ids."""
    out = []
    for layer in range(2):
        total, acc, off = sum(PRIMES[layer]), 0, []
        for p in PRIMES[layer]:
            off.append(acc * table_rows // total)
            acc += p
        out.append(off + [table_rows])
    return out


class Rank:
    """What one tensor-parallel rank looks up (--tp, --rank): columns [head_start, head_start + part) of
    the [T, 24] ids (>= 24: padded heads) and, per table, the rows of those heads [vocab_start, vocab_end)."""

    def __init__(self, tp, rank, table_rows):
        self.tp, self.part = tp, -(-HEADS // tp)
        self.head_start = rank * self.part
        self.offsets = head_offsets(table_rows)
        end = min(HEADS, self.head_start + self.part)
        self.vocab = [(0, table_rows) if tp == 1 else (off[self.head_start], off[end]) for off in self.offsets]


class Workload:
    """Id batches of one mode: `steps` distinct batches per table, cycled through the replays."""

    def __init__(self, torch, spec, table_rows, dev, hot_rows, seed, rank=None):
        self.spec, self.torch, self.dev, self.table_rows = spec, torch, dev, table_rows
        # uniform ids per head range where a rank reads only some (tp > 1), else over every row
        self.offsets = rank.offsets if rank is not None and rank.tp > 1 else None
        self.g = torch.Generator(device=dev)
        self.g.manual_seed(seed)
        self.rows = None
        self.hot = [None, None]
        self.hot_coverage = [None, None]
        if spec.startswith("text:"):
            self.rows = text_rows(torch, spec[5:], table_rows, dev)
            half = self.rows.shape[0] // 2
            for t in range(2):
                if hot_rows:
                    u, c = torch.unique(self.rows[:half, t].reshape(-1), return_counts=True)
                    k = min(hot_rows, u.numel())
                    top = torch.topk(c, k).indices
                    self.hot[t] = u[top].tolist()
                    self.hot_coverage[t] = float(c[top].sum()) / float(c.sum())
            self.lo, self.hi = half, self.rows.shape[0]  # steps come from the second half

    def batches(self, tokens, steps, decode):
        """[steps, 2 tables, tokens * 24] int32 on the GPU, and the mean distinct fraction."""
        torch = self.torch
        n = tokens * HEADS
        if self.rows is None and self.offsets is not None:
            off = torch.tensor(self.offsets, dtype=torch.int64, device=self.dev)  # [2, 25]
            lo, width = off[:, :HEADS], off[:, 1:] - off[:, :HEADS]
            u = torch.rand((steps, tokens, 2, HEADS), generator=self.g, device=self.dev, dtype=torch.float64)
            b = (lo + (u * width).long().clamp(max=width - 1)).permute(0, 2, 1, 3).reshape(steps, 2, n)
        elif self.rows is None:
            b = torch.randint(0, self.table_rows, (steps, 2, n), generator=self.g, device=self.dev,
                              dtype=torch.int64)
        else:
            span = self.hi - self.lo
            if decode:  # tokens sequences, one token each at random positions
                p = torch.randint(self.lo, self.hi, (steps, tokens), generator=self.g, device=self.dev)
            else:  # a window of consecutive tokens
                first = torch.randint(self.lo, self.hi - min(tokens, span) + 1, (steps, 1), generator=self.g,
                                      device=self.dev)
                p = first + torch.arange(tokens, device=self.dev)[None, :] % span
            b = self.rows[p].permute(0, 2, 1, 3).reshape(steps, 2, n)
        distinct = statistics.mean(float(torch.unique(b[s, t]).numel()) / n for s in range(min(steps, 4))
                                   for t in range(2))
        return b.to(torch.int32).contiguous(), distinct


# --------------------------------------------------------------------------- the tables
def make_table(torch, eht, rows, dev, i, name):
    """One table of rows 264-byte rows in THP-advised anonymous memory, filled, wrapped and pinned for
    GPU dev: (the eht table, what keeps its memory alive)."""
    import mmap  # noqa: PLC0415
    nbytes = (rows * ROW_BYTES + (2 << 20) - 1) // (2 << 20) * (2 << 20)
    mm = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mm, "madvise") and hasattr(mmap, "MADV_HUGEPAGE"):
        mm.madvise(mmap.MADV_HUGEPAGE)  # fewer CPU translation misses (a hint)
    t = torch.frombuffer(mm, dtype=torch.uint8)
    w = t.view(torch.int64)
    # Bytes that vary by row (weights and scales of modest size), written by every core at once.
    w.fill_(0x3a3b3c3d3e3f4041 + i)
    w[::977].fill_(0x7b7c7d7e7f7a7978)
    return eht.wrap(t, rows, ROW_BYTES, device=dev, name=name), (mm, t)


def make_tables(torch, eht, gib, dev):
    rows = int(gib * (1 << 30)) // ROW_BYTES
    tables, keep = [], []
    t0 = time.time()
    for i in range(2):
        table, mem = make_table(torch, eht, rows, dev, i, "step%d" % i)
        tables.append(table)
        keep.append(mem)
    return tables, keep, rows, time.time() - t0


# --------------------------------------------------------------------------- the step
class Step:
    def __init__(self, torch, cfg, engram_layers, dev, seed, part=HEADS):
        self.torch = torch
        T, H, F, L = cfg["tokens"], cfg["hidden"], cfg["ffn"], cfg["layers"]
        g = torch.Generator(device=dev)
        g.manual_seed(seed)
        s = 1.0 / (H ** 0.5)
        self.W1 = [torch.randn(H, F, device=dev, dtype=torch.bfloat16, generator=g) * s for _ in range(L)]
        self.W2 = [torch.randn(F, H, device=dev, dtype=torch.bfloat16, generator=g) * (1.0 / F ** 0.5)
                   for _ in range(L)]
        self.E = [torch.randn(part * DIM, H, device=dev, dtype=torch.bfloat16, generator=g) * 0.01
                  for _ in range(2)]
        self.x0 = torch.randn(T, H, device=dev, dtype=torch.bfloat16, generator=g)
        self.x = torch.empty_like(self.x0)
        self.T, self.L, self.elayers, self.part = T, L, engram_layers, part
        self.ids = [torch.zeros(T * HEADS, dtype=torch.int32, device=dev) for _ in range(2)]
        self.rows = [torch.zeros(T * part, DIM, dtype=torch.bfloat16, device=dev) for _ in range(2)]
        # late dequant (the ldq option): the lookups' raw rows, dequantized into rows on the main stream
        self.raw = [torch.zeros(T * part, ROW_BYTES, dtype=torch.uint8, device=dev) for _ in range(2)]
        self.late = False

    def body(self, engines, place, side, marks=None):
        """The step as enqueued (eagerly or under capture) on the current stream. marks (eager only):
        a dict that gets timing events at the step's points (see trace_step)."""
        torch = self.torch
        main = torch.cuda.current_stream()
        events = [None, None]

        def mark(name, stream):
            if marks is not None:
                e = torch.cuda.Event(enable_timing=True)
                e.record(stream)
                marks[name] = e

        mark("start", main)
        if engines and place == "side":
            side.wait_stream(main)
            with torch.cuda.stream(side):
                mark("side_start", side)
                for t in range(2):
                    engines[t].run(self.ids[t], self.raw[t] if self.late else self.rows[t], stream=side)
                    events[t] = torch.cuda.Event()
                    events[t].record(side)
                    mark("lookup%d_end" % t, side)
        x = self.x
        x.copy_(self.x0)
        for layer in range(self.L):
            if layer in self.elayers:
                t = self.elayers.index(layer)
                mark("before_wait%d" % t, main)
                if engines:
                    if place == "side":
                        main.wait_event(events[t])
                    else:
                        mark("lookup%d_start" % t, main)
                        engines[t].run(self.ids[t], self.raw[t] if self.late else self.rows[t], stream=main)
                        mark("lookup%d_end" % t, main)
                    if self.late:  # between the model's kernels, on its stream
                        engines[t].dequant(self.raw[t], self.rows[t], stream=main)
                mark("after_wait%d" % t, main)
                x.add_(self.rows[t].view(self.T, self.part * DIM) @ self.E[t])
            x.copy_(torch.relu(x @ self.W1[layer]) @ self.W2[layer])
        mark("end", main)
        return x

    def capture(self, engines, place, side):
        torch = self.torch
        g = torch.cuda.CUDAGraph()
        # Warm up eagerly on a side stream first (torch's rule for capture), engines included.
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            self.body(engines, place, side)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            self.body(engines, place, side)
        torch.cuda.synchronize()
        return g

    def capture_lookups(self, engines):
        torch = self.torch
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for t in range(2):
                cur = torch.cuda.current_stream()
                engines[t].run(self.ids[t], self.raw[t] if self.late else self.rows[t], stream=cur)
                if self.late:
                    engines[t].dequant(self.raw[t], self.rows[t], stream=cur)
        torch.cuda.synchronize()
        return g


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


def time_paired(torch, g_none, g, feed, reps, warmup, blocking, none_cpu_ms):
    """Replays of the variant's graph and the step without lookups, alternated (the GPU's clocks drift
    over a run by more than the effects measured): both medians and p90s, and the variant's process CPU
    per step (the loop's, less the none step's own, measured alone)."""
    start, end = _warm(torch, g, feed, warmup, blocking)
    tv, tn, lv, ln = [], [], [], []
    (t0, r0), c0, w0 = thread_stats(), cpu_s(), time.perf_counter()
    for i in range(reps):
        for graph, times, launches in ((g, tv, lv), (g_none, tn, ln)):
            feed(warmup + i)
            times.append(_replay_ms(start, end, graph, launches))
    c1, w1, (t1, r1) = cpu_s(), time.perf_counter(), thread_stats()
    var = {"median_ms": statistics.median(tv), "p90_ms": pct(tv, 0.9),
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


def time_back_to_back(torch, g_none, g, feed, reps, warmup, blocking, burst=8):
    """Steps as a pipelining engine runs them: bursts of `burst` replays queued back to back (each fed
    new ids by a copy on the stream, no host sync between), so each launch hides behind the step
    before it and what is left is the GPU's time per step. Bursts of the variant and of the step
    without lookups alternate; medians and p90s of the per-step time of each burst (ms), and the
    variant's process CPU per step."""
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
    for k in range(max(5, (reps + burst - 1) // burst)):
        c0 = cpu_s()
        tv.append(burst_ms(g, warmup + k * burst))
        cpu += cpu_s() - c0
        tn.append(burst_ms(g_none, warmup + k * burst))
    var = {"median_ms": statistics.median(tv), "p90_ms": pct(tv, 0.9), "cpu_ms_per_step": cpu * 1e3 / (len(tv) * burst)}
    return var, {"median_ms": statistics.median(tn), "p90_ms": pct(tn, 0.9)}


def trace_step(torch, step, engines, place, side, feed, reps):
    """Medians (ms) over eager steps of: the step; each table's lookup under load (side: from the fork,
    table 1 after table 0; inline: its own span); the main stream's stall at each consuming layer
    (waiting for the rows, or running the inline lookup); the layers alone (step less the stalls)."""
    keys = ("step", "lookup0", "lookup1", "stall0", "stall1", "layers")
    got = {k: [] for k in keys}
    for i in range(reps):
        feed(i)
        torch.cuda.synchronize()
        m = {}
        step.body(engines, place, side, marks=m)
        torch.cuda.synchronize()

        def el(a, b):
            return m[a].elapsed_time(m[b]) if a in m and b in m else None
        got["step"].append(el("start", "end"))
        for t in range(2):
            got["stall%d" % t].append(el("before_wait%d" % t, "after_wait%d" % t))
            first = ("side_start" if t == 0 else "lookup0_end") if place == "side" else "lookup%d_start" % t
            got["lookup%d" % t].append(el(first, "lookup%d_end" % t))
        st = [got["stall0"][-1], got["stall1"][-1]]
        got["layers"].append(got["step"][-1] - sum(x for x in st if x is not None))
    out = {}
    for k in keys:
        xs = [x for x in got[k] if x is not None]
        out[k + "_ms"] = statistics.median(xs) if xs else None
    return out


def _gpu_events(trace_events):
    """The kernels, copies and memsets that graph launches ran, grouped per launch (in order)."""
    launches = {e["args"]["correlation"] for e in trace_events
                if e.get("ph") == "X" and "GraphLaunch" in e.get("name", "") and "correlation" in e.get("args", {})}
    per = {}
    for e in trace_events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            c = e.get("args", {}).get("correlation")
            if c in launches:
                per.setdefault(c, []).append(e)
    return [sorted(per[c], key=lambda e: e["ts"]) for c in sorted(per)]


def summarize_replay(evs):
    """One replay's GPU events -> where the time went (us): span, model kernels, eht kernels and copies."""
    t0 = min(e["ts"] for e in evs)
    t1 = max(e["ts"] + e["dur"] for e in evs)
    out = {"span_us": t1 - t0, "model_kernel_us": 0.0, "eht_kernel_us": 0.0, "eht_copy_us": 0.0,
           "eht_kernels": 0, "eht_copies": 0, "eht_max_grid": 0, "eht_first_us": None, "eht_last_us": None}
    for e in evs:
        name = e.get("name", "")
        eht_piece = name.startswith("eht_") or e.get("cat") == "gpu_memcpy" and "DtoD" not in name
        if e.get("cat") == "kernel" and not name.startswith("eht_"):
            out["model_kernel_us"] += e["dur"]
            continue
        if not eht_piece:
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


def replay_gaps(reps):
    """Per-replay GPU events (in launch order, as _gpu_events gives them) -> the idle gaps (us) between
    one replay's last event's end and the next replay's first event's start (never below 0)."""
    return [max(0.0, min(e["ts"] for e in b) - max(e["ts"] + e["dur"] for e in a))
            for a, b in zip(reps, reps[1:]) if a and b]


# --timeline's profiles of a variant's graph: (report key, replays, queued, file suffix): after each
# sync, then queued as a burst of the back-to-back figure's default 8.
TIMELINES = (("timeline", 5, False, ""), ("timeline_queued", 8, True, "-queued"))


def timeline(torch, g, feed, reps, path, queued=False):
    """Profiles reps replays of g (fed new ids), each after a sync or (queued) all back to back with a
    sync at the end only, writes the trace to path and returns the medians of summarize_replay over
    the replays, and for queued ones of replay_gaps as gap_us (None where the profiler saw none)."""
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
        reps_seen = _gpu_events(json.load(f).get("traceEvents", []))
    sums = [summarize_replay(r) for r in reps_seen if r]
    if not sums:
        return None
    out = {"file": os.path.basename(path), "replays": len(sums), "queued": queued}
    for k in sums[0]:
        xs = [x[k] for x in sums if x[k] is not None]
        out[k] = statistics.median(xs) if xs else None
    if queued:
        gaps = replay_gaps(reps_seen)
        out["gap_us"] = statistics.median(gaps) if gaps else None
    return out


class LinkCopy:
    """The copy variant's stand-in for an engine: run() copies n raw rows' bytes from pinned host
    memory into GPU memory on the stream in `pieces` copies (the copy engine; no gather, no dequant,
    out untouched), the part of a host-table lookup no design avoids."""

    last_strategy = "copy"
    background = False

    def __init__(self, torch, n, dev, pieces=3):
        self.torch = torch
        self.src = torch.empty(n * ROW_BYTES, dtype=torch.uint8, pin_memory=True)
        self.dst = torch.empty(n * ROW_BYTES, dtype=torch.uint8, device=dev)
        step = (n + pieces - 1) // pieces * ROW_BYTES
        self.bounds = [(b, min(b + step, n * ROW_BYTES)) for b in range(0, n * ROW_BYTES, step)]

    def run(self, ids, out, stream=None):
        with self.torch.cuda.stream(stream or self.torch.cuda.current_stream()):
            for b, e in self.bounds:
                self.dst[b:e].copy_(self.src[b:e], non_blocking=True)

    def close(self):
        self.src = self.dst = None


class VllmEngine:
    """vLLM's lookup algorithm (eht.vllm_baseline) over a table's memory read in vLLM's split layout
    (its first rows x 256 bytes as the weights, the next rows x 8 as the scales: the same two random
    host reads a row as vLLM's storage), in place over UVA, bf16 out."""

    last_strategy = "vllm"

    def __init__(self, torch, table, background, head_start=0, part=HEADS, vocab=None):
        from . import vllm_baseline  # noqa: PLC0415
        self.torch, self.vb, self.background = torch, vllm_baseline, background
        rows = table.rows * table.row_bytes // (vllm_baseline.DIM + vllm_baseline.SCALES)
        self.w = vllm_baseline._HostPtr(table.device_ptr, torch.uint8)
        self.s = vllm_baseline._HostPtr(table.device_ptr + rows * vllm_baseline.DIM, torch.uint8)
        self.rows = rows
        self.head_start, self.part = head_start, part
        self.vocab = vocab or (0, rows)

    def run(self, ids, out, stream=None):
        with self.torch.cuda.stream(stream or self.torch.cuda.current_stream()):
            # the step's ids are rows of the packed table: every one below rows, as the split view holds
            self.vb.lookup(self.w, self.s, ids.view(-1, HEADS), out.view(-1, self.part, DIM), self.head_start,
                           self.part, self.vocab[0], self.vocab[1], background=self.background)

    def close(self):
        self.w = self.s = None


class LayerEngine:
    """A table's eht.torch.EngramLayer (one rank's heads: all 24 at tp 1) called as an engine calls it:
    lookup(ids [T, 24], out [T, part, 256], background) on the current stream."""

    last_strategy = "auto"

    def __init__(self, torch, layer, background):
        self.torch, self.layer, self.background = torch, layer, background

    def run(self, ids, out, stream=None):
        with self.torch.cuda.stream(stream or self.torch.cuda.current_stream()):
            self.layer.lookup(ids.view(-1, HEADS), out.view(-1, self.layer.part, DIM), background=self.background)

    def close(self):
        self.layer.close()


def make_engines(eht, tables, v, sms, hot, threads, rank):
    if v.get("vllm"):
        import torch  # noqa: PLC0415
        if not tables[0].device_ptr:
            raise RuntimeError("vLLM's kernel reads the table in place: the table is not pinned for the GPU")
        return ([VllmEngine(torch, tables[t], v["background"], rank.head_start, rank.part, rank.vocab[t])
                 for t in range(2)], (sms // 2 if v["background"] else sms))
    if v.get("layer"):
        import torch  # noqa: PLC0415
        import eht.torch as et  # noqa: PLC0415
        engines = []
        for t in range(2):
            vs, ve = rank.vocab[t]
            layer = et.EngramLayer(tables[t], head_start=rank.head_start, part=rank.part, format="bf16",
                                   device=tables[0].device, threads=threads, push=v.get("push"),
                                   vocab_start=None if rank.tp == 1 else vs, vocab_end=None if rank.tp == 1 else ve)
            if hot[t] and not v.get("no_hot"):
                # the inline way's hot set, as a served table with one gives it (the background way loads none)
                arr, buf, n = eht._hot_rows(hot[t])
                eht._check(eht._L().eht_lookup_set_hotset(layer.engine(False), buf, n), "eht_lookup_set_hotset")
            engines.append(LayerEngine(torch, layer, v["background"]))
        return engines, 0
    kw = {"strategy": v["strategy"], "format": "raw" if v.get("late_dequant") else "bf16", "device": tables[0].device,
          "threads": threads}
    cap = sms // 2 if v["sm_cap"] == -1 else v["sm_cap"]
    if cap:
        kw["sm_cap"] = cap
    if v["background"]:
        kw["background"] = True
    if v.get("push") is not None:
        kw["push"] = v["push"]
    if v["dedup"]:
        kw["gpu_dedup"] = True
    if "pool_spin_us" in v:
        kw["spin_us"] = v["pool_spin_us"] or 1
    if "bell_spin_us" in v:
        os.environ["EHT_BELL_SPIN_US"] = str(v["bell_spin_us"])  # read when the poller starts
        eht._reload_settings()  # libeht reads its settings once; the variant's are new
    engines = []
    for t in range(2):
        lk = eht.Lookup(tables[t], **kw)
        if hot[t] and not v.get("no_hot"):
            lk.set_hotset(hot[t])
        engines.append(lk)
    return engines, cap


def run(a, rep, log):
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return _fail(a.json, 77, "needs PyTorch (pip install torch)")
    if not torch.cuda.is_available():
        return _fail(a.json, 77, "needs a CUDA GPU")
    import eht  # noqa: PLC0415
    dev = torch.device("cuda", a.device)
    torch.cuda.set_device(dev)
    props = torch.cuda.get_device_properties(dev)
    sms = props.multi_processor_count
    rep["gpu"] = {"name": props.name, "sms": sms}
    tables, keep, rows, t_setup = make_tables(torch, eht, a.table_gib, a.device)
    rep["rows"] = rows
    rep["setup_s"] = t_setup
    log("tables: 2 x %.1f GiB (%d rows of %d B), ready in %.1f s" % (a.table_gib, rows, ROW_BYTES, t_setup))
    side = torch.cuda.Stream()
    blocking = a.sync == "block"
    bell_env = os.environ.get("EHT_BELL_SPIN_US")
    rank = Rank(a.tp, a.rank, rows)
    if a.tp > 1:
        log("rank %d of tp %d: heads [%d, %d), rows %s" % (a.rank, a.tp, rank.head_start, rank.head_start + rank.part,
                                                           " and ".join("[%d, %d)" % r for r in rank.vocab)))
    for wspec in a.workloads:
        wl = Workload(torch, wspec, rows, dev, a.hotset_rows, a.seed, rank)
        for cfg in plan(a):
            steps = max(8, min(64, cfg["reps"] + a.warmup))
            batches, distinct = wl.batches(cfg["tokens"], steps, cfg["mode"] == "decode")
            step = Step(torch, cfg, a.engram_layers, dev, a.seed, rank.part)

            def feed(i, step=step, batches=batches):
                for t in range(2):
                    step.ids[t].copy_(batches[i % batches.shape[0], t])

            base_trace = g_none = none_alone = base_tl = None
            for rnd, v in ((r, v) for r in range(a.rounds) for v in a.variant_list):
                res = {"mode": cfg["mode"], "workload": "uniform" if wspec == "uniform" else "text",
                       "workload_spec": wspec, "variant": v["name"], "strategy": v["strategy"],
                       "place": v["place"], "background": v["background"], "sm_cap": None,
                       "distinct_fraction": distinct, "hot_rows": None, "hot_coverage": None,
                       "tokens": cfg["tokens"], "ids_per_table": cfg["ids_per_table"], "round": rnd}
                engines = []
                step.late = bool(v.get("late_dequant"))
                try:
                    if v.get("copy_only"):
                        engines = [LinkCopy(torch, cfg["rows_per_table"], dev) for _ in range(2)]
                    if v["strategy"] or v.get("vllm"):
                        engines, res["sm_cap"] = make_engines(eht, tables, v, sms, wl.hot, a.threads, rank)
                        # What the engine runs, not what was asked: a flag that did not take once
                        # made every background variant measure the default mode.
                        res["background_active"] = engines[0].background
                        if v["background"] and not res["background_active"]:
                            log("%s: the background mode is off (the driver has no stream memory operations?); "
                                "this variant measures the default mode" % v["name"])
                        if wl.hot[0]:
                            res["hot_rows"] = len(wl.hot[0])
                            res["hot_coverage"] = wl.hot_coverage[0]
                    feed(0)
                    if v["name"] == "none" or g_none is None:
                        if g_none is None:
                            g_none = step.capture([], None, side)
                        res["step"] = time_graph(torch, g_none, feed, cfg["reps"], a.warmup, blocking)
                        none_alone = res["step"]
                    g = g_none
                    if v["name"] != "none":
                        g = step.capture(engines, v["place"], side)
                        res["step"], res["none_paired"] = time_paired(
                            torch, g_none, g, feed, cfg["reps"], a.warmup, blocking, none_alone["cpu_ms_per_step"])
                        bb, bb_none = time_back_to_back(torch, g_none, g, feed, cfg["reps"], a.warmup, blocking,
                                                        a.burst)
                        res["back_to_back"] = bb
                        res["back_to_back_none"] = bb_none
                        res["back_to_back_added_us"] = (bb["median_ms"] - bb_none["median_ms"]) * 1e3
                        res["back_to_back_added_pct"] = (100.0 * (bb["median_ms"] - bb_none["median_ms"])
                                                         / bb_none["median_ms"])
                    if engines:
                        gl = step.capture_lookups(engines)
                        res["lookups_alone"] = time_graph(torch, gl, feed, cfg["reps"], a.warmup, blocking)
                        res["last_strategy"] = engines[0].last_strategy
                        del gl
                    if a.timeline and rnd == 0:  # (one profile per variant is enough)
                        os.makedirs(a.timeline, exist_ok=True)
                        stem = os.path.join(a.timeline, "%s-%s-" % (cfg["mode"], res["workload"]))
                        if base_tl is None:  # the step without lookups: what the model's kernels take alone
                            base_tl = {q: timeline(torch, g_none, feed, reps, stem + "none" + suffix + ".json", queued)
                                       for q, reps, queued, suffix in TIMELINES}
                        for q, reps, queued, suffix in TIMELINES:
                            if g is g_none:
                                res[q] = base_tl[q]
                                continue
                            path = stem + v["name"].replace("+", "_") + suffix + ".json"
                            res[q] = timeline(torch, g, feed, reps, path, queued)
                            if res[q] and base_tl[q]:
                                res[q]["model_slowdown_us"] = res[q]["model_kernel_us"] - base_tl[q]["model_kernel_us"]
                                if res[q].get("gap_us") is not None and base_tl[q].get("gap_us") is not None:
                                    res[q]["gap_added_us"] = res[q]["gap_us"] - base_tl[q]["gap_us"]
                    del g
                    if a.trace:
                        res["trace"] = trace_step(torch, step, engines, v["place"], side, feed,
                                                  max(5, min(cfg["reps"], 20)))
                        if base_trace is not None and res["trace"]["layers_ms"] is not None:
                            res["trace"]["interference_ms"] = res["trace"]["layers_ms"] - base_trace["layers_ms"]
                    if v["name"] == "none":
                        base_trace = res.get("trace")
                    base = res.get("none_paired", res["step"])
                    add = res["step"]["median_ms"] - base["median_ms"]
                    res["added_us"] = add * 1e3
                    res["added_pct"] = 100.0 * add / base["median_ms"]
                    # Against the none step's own run too: on the H200 the two baselines differed by up
                    # to 0.15 ms (decode) and 0.9 ms (prefill), so both are reported.
                    res["added_vs_none_alone_us"] = (res["step"]["median_ms"] - none_alone["median_ms"]) * 1e3
                    res["cpu_added_ms_per_step"] = res["step"]["cpu_ms_per_step"] - none_alone["cpu_ms_per_step"]
                except Exception as e:  # noqa: BLE001 (one variant failing must not lose the others)
                    res["error"] = "%s: %s" % (type(e).__name__, e)
                finally:
                    for lk in engines:
                        lk.close()
                    engines = []
                    torch.cuda.synchronize()
                    if "bell_spin_us" in v:  # back to what the process was started with
                        if bell_env is None:
                            os.environ.pop("EHT_BELL_SPIN_US", None)
                        else:
                            os.environ["EHT_BELL_SPIN_US"] = bell_env
                        eht._reload_settings()
                rep["results"].append(res)
                log(line(res))
            del step, batches, g_none
            torch.cuda.empty_cache()
    del tables, keep
    rep["summary"] = summarize_rounds(rep["results"])
    if a.rounds > 1:
        for srow in rep["summary"]:
            log(summary_line(srow))
    return 0


def _spread(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)} if xs else None


def summarize_rounds(results):
    """Per (mode, workload, variant) with lookups, in the order first seen: how many rounds measured it
    and the median / min / max over them of the time added back to back and synced (us), of the
    process CPU per step (synced, ms), of eht's pool's part of it (ms) and of what the variant's graph
    adds to the launch call (us); those two None where the rounds did not measure them. And, where
    the copy variant ran in the same rounds, the variant less the copies round by round (back to back
    and synced, us): the floor of any host table measured beside it, which the engine-native targets
    are stated against (None for copy itself and where no round has both). Rounds that failed are
    left out."""
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
            rows[k] = {"b2b": [], "synced": [], "cpu": [], "pool": [], "launch": [], "ob2b": [], "osynced": []}
            order.append(k)
        if "back_to_back_added_us" in r:
            rows[k]["b2b"].append(r["back_to_back_added_us"])
        rows[k]["synced"].append(r["added_us"])
        c = copies.get((r["mode"], r["workload"], r.get("round"))) if r["variant"] != "copy" else None
        if c is not None:
            rows[k]["osynced"].append(r["added_us"] - c["added_us"])
            if "back_to_back_added_us" in r and "back_to_back_added_us" in c:
                rows[k]["ob2b"].append(r["back_to_back_added_us"] - c["back_to_back_added_us"])
        st = r["step"]
        rows[k]["cpu"].append(st["cpu_ms_per_step"])
        if st.get("cpu_ms_by_thread"):
            rows[k]["pool"].append(st["cpu_ms_by_thread"]["pool"])
        launch_none = (r.get("none_paired") or {}).get("launch_us")
        if st.get("launch_us") is not None and launch_none is not None:
            rows[k]["launch"].append(st["launch_us"] - launch_none)
    return [{"mode": k[0], "workload": k[1], "variant": k[2], "rounds": len(rows[k]["synced"]),
             "back_to_back_added_us": _spread(rows[k]["b2b"]), "added_us": _spread(rows[k]["synced"]),
             "cpu_ms_per_step": _spread(rows[k]["cpu"]), "pool_cpu_ms_per_step": _spread(rows[k]["pool"]),
             "launch_added_us": _spread(rows[k]["launch"]),
             "over_copy_back_to_back_us": _spread(rows[k]["ob2b"]),
             "over_copy_added_us": _spread(rows[k]["osynced"])} for k in order]


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
    if s.get("over_copy_added_us"):
        out += "; over the copies, round by round: back to back %s, synced %s" % (
            us(s.get("over_copy_back_to_back_us")), us(s["over_copy_added_us"]))
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
    if "back_to_back_added_us" in r:
        out += "\n    back to back: step %.3f ms, added %+.1f us (%+.2f %%), cpu %.2f ms/step" % (
            r["back_to_back"]["median_ms"], r["back_to_back_added_us"], r["back_to_back_added_pct"],
            r["back_to_back"]["cpu_ms_per_step"])
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
        if tl.get("gap_us") is not None:
            out += "; idle between steps %.1f us%s" % (
                tl["gap_us"], " (%+.1f against none)" % tl["gap_added_us"] if "gap_added_us" in tl else "")
    t = r.get("trace")
    if t:
        f = lambda k: ("%.3f" % t[k]) if t.get(k) is not None else "-"  # noqa: E731
        out += "\n    eager: step %s ms, layers %s (interference %s), lookup0 %s / lookup1 %s, stall0 %s / stall1 %s" % (
            f("step_ms"), f("layers_ms"), f("interference_ms"), f("lookup0_ms"), f("lookup1_ms"), f("stall0_ms"),
            f("stall1_ms"))
    return out


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    rep = envelope(a)

    def log(msg):
        print(msg, file=sys.stderr if a.json else sys.stdout, flush=True)

    if a.dry_run:
        rep["dry_run"] = True
        if a.json:
            print(_json_line(rep))
        else:
            for p in rep["plan"]:
                log("%(mode)s: %(layers)d layers, T %(tokens)d, hidden %(hidden)d, F %(ffn)d, %(reps)d replays, "
                    "%(ids_per_table)d ids per table, %(rows_per_table)d rows looked up" % p)
            if a.tp > 1:
                log("rank %d of tp %d: heads [%d, %d)" % (a.rank, a.tp, a.head_start, a.head_start + a.part))
            log("variants: %s; workloads: %s" % (", ".join(rep["variants"]), ", ".join(rep["workloads"])))
        return 0
    if not a.json:
        return run(a, rep, log)
    try:
        rc = run(a, rep, log)
    except Exception as e:  # noqa: BLE001 (stdout still gets its one object; the traceback goes to stderr)
        import traceback  # noqa: PLC0415
        traceback.print_exc()
        return _fail(True, 1, "%s: %s" % (type(e).__name__, e))
    if rc == 0:
        print(_json_line(rep))
    return rc


if __name__ == "__main__":
    sys.exit(main())
