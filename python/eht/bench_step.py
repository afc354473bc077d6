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
  layer-pieces, copy-pieces, vllm-pieces  vLLM's newer placement (eager_break_during_capture): the
                       layers as three graphs cut at the Engram layers, the lookups (or the copies)
                       called eagerly on the side stream at the step's start, the main stream waiting
                       for each before the piece that reads it; such a variant is alternated with
                       copy-pieces (vs_copy) where copy ran, and reports each table's eager call's
                       wall time on the launching thread over its synced steps (eager_call_us: a
                       synced step waits for it). Not traced (--trace). Every -pieces variant is also
                       alternated with the same pieces without lookups (vs_pieces: what its lookups
                       cost that placement)
  layer-split, layer-split-pieces  the background way in two halves, lookup_start(ids, out) and
                       lookup_wait(out), both on the main stream where the side stream would fork and
                       join: in the one graph, or captured into the pieces (start in the first, each
                       wait in the piece that reads the rows: no eager call); a -split-pieces variant
                       is alternated with copy-split-pieces (vs_copy) where copy ran. Not traced (--trace)
  copy-split-pieces    the copies captured into the pieces: forked on the side stream at the first
                       piece's head and joined at its end (the floor in that placement, captured)
  STRATEGY: one of the library's lookup strategies (eht.STRATEGIES); OPT: bg (the background mode), push / stream (with bg:
  captured lookups pushed by the CPU, two graph nodes a lookup, the default; or the stream's way), capN (SM cap N), dedup,
  nohot (a text workload's hot set left out),
  pspinN / bspinN (the CPU pool's / the doorbell poller's spin after a job, us), ldq (late dequant:
  the engines look rows up raw and the main stream dequantizes them right before their layer,
  eht_lookup_dequant, instead of a dequant kernel beside the model's), raw (a diagnostic: the rows
  are looked up raw and never dequantized, the layer reads the rows of one lookup made before the
  variants: what the dequant beside the model costs the step, against the same variant without it)

The layers of every variant consume rows of the tables' values: one inline lookup fills them before
the variants, so the variants that write none (none, copy, raw) do not multiply zeros, which cost
the GEMM less power, and so less time, than real rows (rows_filled in each result: false where that
lookup failed and they do).

--trace adds, per variant, an eager run with CUDA events on both streams: the lookups' times under
load, how long the main stream stalled waiting for each table's rows, and how much slower the layers
ran beside the lookups (interference): where the added time goes. The same events are then captured
into the step's graph (event nodes), which is replayed after each sync and in bursts queued back to
back: the lookups' times and the stalls at the joins in the replays themselves, without a profiler.

--rounds N measures every variant N times in turn, the tables made once: a VM's step time varies
from run to run by more than some of the effects measured (on the lent H200 about +-40 us in decode
and +-0.5 ms in prefill), so one run's figure can mislead. The report then gets a summary per
variant: the median and range over the rounds of both figures of time added and of the CPU, and,
where the copy variant ran too, of the variant less the copies round by round (what a host table's
lookup costs over moving its bytes alone, the yardstick of the engine-native targets). Where copy is
among the variants, every other variant is also alternated with the copies' step itself, synced and
back to back (vs_copy: that cost as one paired figure, not a difference of two runs seconds apart).

--tp N [--rank R] looks up as tensor-parallel rank R of N does (ENGRAM.md): the columns [R * part,
(R + 1) * part) of the [T, 24] hash output, part = cdiv(24, N), padded heads zero, and only the rows of
the rank's head ranges (each table's 24 head ranges are V4.1's, scaled to its rows; uniform ids are then
drawn per head range); the layers consume [T, part, 256], the copy moves the rank's rows. The model
stays one GPU's. The engine's call (layer-*), vLLM's kernel (vllm*), copy and none take it; the
STRATEGY variants look up flat ids and run at --tp 1 only (left out of the default variants there).

--timeline DIR profiles a few graph replays of each variant (torch.profiler, that is CUPTI) and writes
DIR/MODE-WORKLOAD-VARIANT.json, a trace for chrome://tracing or ui.perfetto.dev with every kernel and
copy of the replayed step on its stream; the report gets a summary per variant: the model's kernels'
time (against the step without lookups: what eht's work beside them cost them), eht's kernels (time,
the widest grid: SMs held) and copies (those its CPU pushes included), when eht's first and last pieces
ran, how long the model's stream sat idle inside the step (against the step without lookups: what
it waited for, such as rows not there yet at a join, rather than ran slower), and eht's kernels on the
model's own stream by name (a split's ring kernels and joins: a join polls for its rows, so one that
ran long waited for them); a -pieces variant's step is its three graph launches together. Each of
those replays follows a sync; the same replays queued back to back (a burst, as the back-to-back figure times them)
go to DIR/MODE-WORKLOAD-VARIANT-queued.json, summarized the same way plus the GPU's idle gap between
one step's last piece and the next step's first: what a queued step waits for.

Reports per variant the step's median and p90, the time it adds (us and % of the step without lookups,
whose replays alternate with the variant's in ABBA order, each first in every other pair: the GPU's
clocks drift over a run by more than what is measured, and a fixed order put that drift into the
difference), the process's CPU time per step (user + sys, less the step's own without lookups; in the
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
import socket
import sys
import time

from .bench_step_model import (HEADS, ROW_BYTES, LinkCopy, Pieces, Rank, Step, Workload, fill_rows, make_engines,
                               make_tables)
from .bench_step_clocks import ClockSampler, clocks_line, gpu_id
from .bench_step_report import line, summarize_rounds, summary_line
from .bench_step_time import (TIMELINES, time_back_to_back, time_graph, time_paired, timeline, trace_graph,
                              trace_step)

# reps: synced pairs a figure; back_to_back_share: reps per pair of back-to-back bursts. A prefill step
# on a power-capped H100 moves by milliseconds with the clocks, synced (pairs spread 1.3-1.5 ms, bursts
# of 8 a fifth of that): 48 pairs put a round's median within about +-0.5 ms (95 %), where 15 left
# +-0.9, and three rounds' pairs pooled within +-0.3.
MODES = {"decode": {"tokens": 256, "ffn": 16384, "reps": 40, "back_to_back_share": 2},
         "prefill": {"tokens": 8192, "ffn": 8192, "reps": 48, "back_to_back_share": 6}}
DEFAULT_VARIANTS = ("none,copy,vllm,vllm-inline,layer-side,layer-inline,auto+bg-side,auto+bg+push-side,"
                    "host+bg-side")


def parse_variant(spec):
    """'none' | 'vllm' | STRATEGY[+bg][+capN][+dedup][+ldq]-side|inline -> dict (ValueError when malformed)."""
    spec = spec.strip()
    if spec == "none":
        return {"name": "none", "strategy": None, "place": None, "background": False, "sm_cap": 0,
                "dedup": False, "late_dequant": False}
    if spec in ("vllm", "vllm-side", "vllm-inline", "vllm-pieces"):
        # vLLM's own lookup algorithm (eht.vllm_baseline, Triton): on the side stream with its background
        # grid (SMs / 2), or inline before the layer with the full grid (vLLM's placement from 4,096 tokens);
        # -pieces: called eagerly on the side stream between graph pieces (vLLM's newer placement)
        place = {"vllm-inline": "inline", "vllm-pieces": "pieces"}.get(spec, "side")
        return {"name": spec, "strategy": None, "place": place, "background": place != "inline", "sm_cap": 0,
                "dedup": False, "late_dequant": False, "vllm": True}
    if spec.startswith("layer"):
        # the engine's own call: eht.torch.EngramLayer.lookup(ids, out, background) with vLLM's arguments,
        # background=True on the side stream, False inline (what an engine's natural call gets). On a text
        # workload its inline way loads the hot set as a served table's would; +nohot: without it
        # -split / -split-pieces: the background way in two halves on the main stream (lookup_start
        # where the side stream would fork, lookup_wait where it would join), in one graph or in pieces
        if spec.endswith("-split-pieces"):
            head, place = spec[:-len("-split-pieces")], "split-pieces"
        else:
            head, _, place = spec.rpartition("-")
        opts = head.split("+")
        if opts[0] != "layer" or place not in ("side", "inline", "pieces", "split", "split-pieces") or \
                any(o not in ("push", "stream", "nohot") for o in opts[1:]) or ("push" in opts and "stream" in opts):
            raise ValueError("variant %r: layer[+push|+stream][+nohot]-side|inline|pieces|split|split-pieces" % spec)
        if place == "inline" and ("push" in opts or "stream" in opts):
            raise ValueError("variant %r: push and stream are ways of the background call (-side, -pieces, -split)"
                             % spec)
        return {"name": spec, "strategy": "auto", "place": place, "background": place != "inline", "sm_cap": 0,
                "dedup": False, "late_dequant": False, "layer": True, "no_hot": "nohot" in opts,
                "push": True if "push" in opts else False if "stream" in opts else None}
    if spec in ("copy", "copy-pieces", "copy-split-pieces"):
        # the bytes' copies alone, in the graph's side stream, (-pieces) eager between graph pieces or
        # (-split-pieces) captured into the first piece on a side stream
        return {"name": spec, "strategy": None,
                "place": {"copy-pieces": "pieces", "copy-split-pieces": "split-pieces"}.get(spec, "side"),
                "background": False, "sm_cap": 0, "dedup": False, "late_dequant": False, "copy_only": True}
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
        elif p == "raw":  # a diagnostic: rows left raw, no dequant kernel anywhere (the layer reads zeros)
            v["raw_only"] = True
        elif p == "nohot":  # a text workload's hot set left out: the A/B of the hot set in the step
            v["no_hot"] = True
        elif p.startswith("cap") and p[3:].isdigit() and int(p[3:]) > 0:
            v["sm_cap"] = int(p[3:])
        elif p.startswith("pspin") and p[5:].isdigit():
            v["pool_spin_us"] = int(p[5:])
        elif p.startswith("bspin") and p[5:].isdigit():
            v["bell_spin_us"] = int(p[5:])
        else:
            raise ValueError("variant %r: unknown option %r (bg, push, stream, capN, dedup, pspinN, bspinN, ldq, raw, "
                             "nohot)" % (spec, p))
    if v.get("raw_only") and v["late_dequant"]:
        raise ValueError("variant %r: raw and ldq exclude each other (raw has no dequant at all)" % spec)
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
    ap.add_argument("--reps", type=_pos_int, help="timed replays (decode 40, prefill 48)")
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
    ap.add_argument("--trace", action="store_true",
                    help="also time the pieces of a step, eager and as its graph (see above)")
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
                    "layers": a.layers, "reps": a.reps or d["reps"], "back_to_back_share": d["back_to_back_share"],
                    "ids_per_table": (a.tokens or d["tokens"]) * HEADS,
                    "rows_per_table": (a.tokens or d["tokens"]) * a.part})
    return out


def against_copy(torch, g_copy, g, feed, cfg, a, blocking):
    """The variant's graph alternated with the copies' (ABBA, synced and back to back, as against the
    step without lookups): what its lookups cost over moving their bytes alone, pair by pair (us; the
    CPU is the variant's own run's, against the step without lookups)."""
    var, cp = time_paired(torch, g_copy, g, feed, cfg["reps"], a.warmup, blocking, 0.0)
    bb, bb_cp = time_back_to_back(torch, g_copy, g, feed, cfg["reps"], a.warmup, blocking, a.burst,
                                  cfg["back_to_back_share"])
    return {"added_us": (var["median_ms"] - cp["median_ms"]) * 1e3, "paired_added_us": var["paired_added_ms"] * 1e3,
            "back_to_back_added_us": (bb["median_ms"] - bb_cp["median_ms"]) * 1e3,
            "back_to_back_paired_added_us": bb["paired_added_ms"] * 1e3,
            "pairs_ms": var["pairs_ms"], "back_to_back_pairs_ms": bb["pairs_ms"],
            "paired_added_ci_us": [x * 1e3 for x in var["paired_added_ci_ms"]],
            "back_to_back_paired_added_ci_us": [x * 1e3 for x in bb["paired_added_ci_ms"]]}


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
            "gpu": None, "gpu_clocks": [], "results": []}


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
    gid = gpu_id(props)
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
        wl_name = "uniform" if wspec == "uniform" else "text"
        for cfg in plan(a):
            steps = max(8, min(64, cfg["reps"] + a.warmup))
            batches, distinct = wl.batches(cfg["tokens"], steps, cfg["mode"] == "decode")
            step = Step(torch, cfg, a.engram_layers, dev, a.seed, rank.part)

            def feed(i, step=step, batches=batches):
                for t in range(2):
                    step.ids[t].copy_(batches[i % batches.shape[0], t])

            feed(0)
            try:
                fill_rows(torch, eht, tables, step, a.threads, rank)
                rows_filled = True
            except Exception as e:  # noqa: BLE001 (the variants still run, over rows of zeros: said in each result)
                log("%s: the rows could not be filled by a lookup (%s: %s); the layers multiply zeros where a "
                    "variant writes none" % (cfg["mode"], type(e).__name__, e))
                rows_filled = False
            base_trace = g_none = none_alone = base_tl = None
            # The copies' step, kept for the cfg: every variant with lookups is also alternated with it
            # (vs_copy), so that its cost over the copies is one paired figure, not the difference of
            # two figures measured seconds apart, each against its own run of the step without lookups.
            copy_engines = g_copy = g_none_pieces = None
            g_copy_pieces = {}  # split or not: the copies eager between the pieces, or captured into them
            if any(v.get("copy_only") for v in a.variant_list):
                try:
                    copy_engines = [LinkCopy(torch, cfg["rows_per_table"], dev) for _ in range(2)]
                    g_copy = step.capture(copy_engines, "side", side)  # (over the ids fed above)
                except Exception as e:  # noqa: BLE001 (the variants' own figures stand without it)
                    log("%s: the copies' step to alternate the variants with failed (%s: %s)"
                        % (cfg["mode"], type(e).__name__, e))
                    g_copy = None
            # nvidia-smi beside the runs: whether the GPU ran them at its power cap (a synced prefill
            # moves by milliseconds with the clock the cap picks)
            sampler = ClockSampler(gid)
            try:
                for rnd, v in ((r, v) for r in range(a.rounds) for v in a.variant_list):
                    res = {"mode": cfg["mode"], "workload": wl_name,
                           "workload_spec": wspec, "variant": v["name"], "strategy": v["strategy"],
                           "place": v["place"], "background": v["background"], "sm_cap": None,
                           "distinct_fraction": distinct, "hot_rows": None, "hot_coverage": None,
                           "tokens": cfg["tokens"], "ids_per_table": cfg["ids_per_table"], "round": rnd,
                           "rows_filled": rows_filled}
                    engines = []
                    step.late = bool(v.get("late_dequant"))
                    step.raw_only = bool(v.get("raw_only"))
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
                            pieces = v["place"] in ("pieces", "split-pieces")
                            g = Pieces(step, engines, side, split=v["place"] == "split-pieces") if pieces \
                                else step.capture(engines, v["place"], side)
                            if pieces:
                                g.take_call_us()  # (its warm-up calls)
                            res["step"], res["none_paired"] = time_paired(
                                torch, g_none, g, feed, cfg["reps"], a.warmup, blocking, none_alone["cpu_ms_per_step"])
                            if pieces:
                                # the eager calls' wall time on the launching thread, which a synced step waits for
                                res["eager_call_us"] = g.take_call_us()
                            bb, bb_none = time_back_to_back(torch, g_none, g, feed, cfg["reps"], a.warmup, blocking,
                                                            a.burst, cfg["back_to_back_share"])
                            res["back_to_back"] = bb
                            res["back_to_back_none"] = bb_none
                            res["back_to_back_added_us"] = (bb["median_ms"] - bb_none["median_ms"]) * 1e3
                            res["back_to_back_added_pct"] = (100.0 * (bb["median_ms"] - bb_none["median_ms"])
                                                             / bb_none["median_ms"])
                            res["paired_added_us"] = res["step"]["paired_added_ms"] * 1e3
                            res["back_to_back_paired_added_us"] = bb["paired_added_ms"] * 1e3
                            if g_copy is not None and not v.get("copy_only"):
                                try:
                                    gc = g_copy
                                    if pieces:  # like for like: the copies eager too, or captured too
                                        split = v["place"] == "split-pieces"
                                        if split not in g_copy_pieces:
                                            g_copy_pieces[split] = Pieces(step, copy_engines, side, split=split)
                                        gc = g_copy_pieces[split]
                                    res["vs_copy"] = against_copy(torch, gc, g, feed, cfg, a, blocking)
                                except Exception as e:  # noqa: BLE001 (the variant's own figures stand without it)
                                    res["vs_copy_error"] = "%s: %s" % (type(e).__name__, e)
                            if pieces:  # the same pieces without lookups: what the lookups cost that placement
                                try:
                                    if g_none_pieces is None:
                                        g_none_pieces = Pieces(step, [], side)
                                    res["vs_pieces"] = against_copy(torch, g_none_pieces, g, feed, cfg, a, blocking)
                                except Exception as e:  # noqa: BLE001 (the variant's own figures stand without it)
                                    res["vs_pieces_error"] = "%s: %s" % (type(e).__name__, e)
                        if engines:
                            gl = step.capture_lookups(engines)
                            res["lookups_alone"] = time_graph(torch, gl, feed, cfg["reps"], a.warmup, blocking)
                            res["last_strategy"] = engines[0].last_strategy
                            del gl
                        if a.timeline and rnd == 0:  # (one profile per variant is enough)
                            os.makedirs(a.timeline, exist_ok=True)
                            stem = os.path.join(a.timeline, "%s-%s-" % (cfg["mode"], res["workload"]))
                            if base_tl is None:  # the step without lookups: what the model's kernels take alone
                                base_tl = {q: timeline(torch, g_none, feed, reps, stem + "none" + suffix + ".json",
                                                       queued)
                                           for q, reps, queued, suffix in TIMELINES}
                            for q, reps, queued, suffix in TIMELINES:
                                if g is g_none:
                                    res[q] = base_tl[q]
                                    continue
                                path = stem + v["name"].replace("+", "_") + suffix + ".json"
                                res[q] = timeline(torch, g, feed, reps, path, queued)
                                if res[q] and base_tl[q]:
                                    res[q]["model_slowdown_us"] = (res[q]["model_kernel_us"]
                                                                   - base_tl[q]["model_kernel_us"])
                                    for k in ("gap", "main_idle"):
                                        if res[q].get(k + "_us") is not None and base_tl[q].get(k + "_us") is not None:
                                            res[q][k + "_added_us"] = res[q][k + "_us"] - base_tl[q][k + "_us"]
                        del g
                        if a.trace and v["place"] in ("side", "inline"):  # (the traced step: one graph, one fork)
                            res["trace"] = trace_step(torch, step, engines, v["place"], side, feed,
                                                      max(5, min(cfg["reps"], 20)))
                            if base_trace is not None and res["trace"]["layers_ms"] is not None:
                                res["trace"]["interference_ms"] = res["trace"]["layers_ms"] - base_trace["layers_ms"]
                            try:
                                res["trace"]["graph"] = trace_graph(torch, step, engines, v["place"], side, feed,
                                                                    max(5, min(cfg["reps"], 20)), a.burst)
                            except RuntimeError as e:  # (timing inside a graph refused: the variant's rest stands)
                                res["trace"]["graph_error"] = "%s: %s" % (type(e).__name__, e)
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
            finally:
                clocks = dict(mode=cfg["mode"], workload=wl_name, **sampler.stop())
            rep["gpu_clocks"].append(clocks)
            log(clocks_line(cfg["mode"], wl_name, clocks))
            if copy_engines:
                for lk in copy_engines:
                    lk.close()
            del step, batches, g_none, g_copy, g_copy_pieces, g_none_pieces, copy_engines
            torch.cuda.empty_cache()
    del tables, keep
    rep["summary"] = summarize_rounds(rep["results"])
    if a.rounds > 1:
        for srow in rep["summary"]:
            log(summary_line(srow))
    return 0


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
