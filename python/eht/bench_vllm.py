# SPDX-License-Identifier: Apache-2.0
"""eht.bench_vllm: vLLM's Engram lookup algorithm timed for `eht bench lookup`, its baseline row
(python3 -m eht.bench_vllm; the bench runs it and reads the one JSON object it prints on stdout).

It makes a table of the bench's size as `eht bench step` does (THP-advised anonymous memory, filled,
pinned with eht.wrap), reads it in vLLM's split layout over the same bytes (weights [rows, 256], then
scales [rows, 8]: two host reads a row, as vLLM's storage) with eht.vllm_baseline (our Triton code of
vLLM's kernel: a persistent grid, UVA reads, bf16 out [T, 24, 256]), all 24 heads of a tp-1 rank, at
each id count: ids [T, 24] int32 in GPU memory, T = ids / 24 rounded up, the last token's columns past
the count dead (-1, zero rows). Both of vLLM's placements: inline (grid SMs) and background (SMs / 2).
Modes as the bench's: gpu_ids (eager; each call on a fresh step) and graph (captured once, each
replay after the step's ids are copied into the captured tensor, not timed). Each step is timed from
the call to the end of a stream synchronize; two untimed steps first, then --reps; median and p90 as
the bench takes them; the process's CPU per call. Before each mode of each placement 512 MiB of GPU
memory are written, so no run finds the rows the run before read (every run times the same steps)
in the GPU's L2 cache, as the bench does before each of its runs. The steps' ids come from --ids-file
(int32, for each count in order, reps + 2 steps of that many ids: the bench's own steps) or are drawn
uniform.

Where torch, Triton, a CUDA GPU or eht's binding is missing it prints {"skipped": "why"} and exits 0;
a usage error prints {"error": "why", "exit": 2} and exits 2."""
import argparse
import importlib
import json
import os
import platform
import resource
import sys
import time

HEADS = 24
DIM = 256
ROW_BYTES = 264
MODES = ("gpu_ids", "graph")
FLUSH_BYTES = 512 << 20  # the bench's LK_FLUSH_BYTES
_report_fd = None  # where the one JSON object goes (main: the real stdout; fd 1 is stderr meanwhile)


def _emit(obj):
    """The one JSON object the bench reads."""
    line = json.dumps(obj) + "\n"
    if _report_fd is None:
        sys.stdout.write(line)
        sys.stdout.flush()
    else:
        os.write(_report_fd, line.encode())


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one JSON object on stdout too (the bench reads only stdout)."""

    def error(self, message):
        print("eht bench lookup: vLLM baseline helper: %s" % message, file=sys.stderr, flush=True)
        _emit({"error": message, "exit": 2})
        sys.exit(2)


def _ints(s):
    try:
        out = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("%r: comma-separated counts" % s)
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError("%r: comma-separated counts >= 1" % s)
    return out


def _modes(s):
    out = [m for m in s.split(",") if m]
    bad = [m for m in out if m not in MODES]
    if not out or bad or len(set(out)) != len(out):
        raise argparse.ArgumentTypeError("%r: one or both of %s" % (s, ",".join(MODES)))
    return out


def _bounded(conv, lo, hi, noun):
    def parse(s):
        try:
            v = conv(s)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not %s" % (s, noun))
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError("%r: %s .. %s" % (s, lo, hi))
        return v
    return parse


def parse_args(argv):
    ap = _Parser(prog="python3 -m eht.bench_vllm", description=__doc__.split("\n\n")[0])
    ap.add_argument("--table-gib", type=_bounded(float, 1e-9, 1 << 20, "a number"), required=True,
                    help="the table's size in GiB (the bench's)")
    ap.add_argument("--rows", type=_bounded(int, 1, (1 << 31) - 1, "an integer"),
                    help="its rows (default: GiB / 264 B, as the bench counts them)")
    ap.add_argument("--ids", type=_ints, required=True, help="id counts, comma-separated (the bench's shapes)")
    ap.add_argument("--reps", type=_bounded(int, 1, 10000, "an integer"), default=20, help="timed steps (20)")
    ap.add_argument("--modes", type=_modes, default=list(MODES), help="gpu_ids and/or graph (both)")
    ap.add_argument("--ids-file", help="the steps' ids: int32, per count in order, reps + 2 steps of it")
    ap.add_argument("--device", type=_bounded(int, 0, 1 << 16, "an integer"), default=0, help="the GPU (0)")
    ap.add_argument("--seed", type=int, default=1, help="seed of uniform ids (1)")
    ap.add_argument("--gap-ms", type=_bounded(float, 0, 10000, "a number"), default=0.0,
                    help="milliseconds of idle before each timed call (0: back to back; eht bench lookup --gap)")
    a = ap.parse_args(argv)
    if a.rows is None:
        a.rows = int(a.table_gib * (1 << 30)) // ROW_BYTES
        if a.rows < 1:
            ap.error("--table-gib %g holds no 264-byte row" % a.table_gib)
    a.batches = a.reps + 2
    if a.ids_file is not None and not os.path.exists(a.ids_file):
        ap.error("--ids-file %s: no such file" % a.ids_file)
    return a


def envelope(a):
    """What every answer says: the helper, the algorithm and what it was asked."""
    return {"helper": "eht.bench_vllm", "algorithm": "vllm", "label": "vllm (Triton)",
            "source": "eht.vllm_baseline", "python": platform.python_version(), "table_gib": a.table_gib,
            "rows": a.rows, "row_bytes": ROW_BYTES, "layout": "split", "format": "bf16", "reps": a.reps, "gap_ms": a.gap_ms,
            "modes": a.modes, "ids": a.ids, "ids_from": "file" if a.ids_file else "uniform"}


def probe(device):
    """(torch, None) where vLLM's kernel can run here, else (None, why not)."""
    try:
        import torch  # noqa: PLC0415
    except Exception as e:  # noqa: BLE001 (any reason torch does not import is a reason to skip)
        return None, "no torch (%s: %s)" % (type(e).__name__, e)
    try:
        importlib.import_module("triton")  # (imported to see that it loads)
    except Exception as e:  # noqa: BLE001
        return None, "no Triton (%s: %s)" % (type(e).__name__, e)
    if not torch.cuda.is_available():
        return None, "torch %s sees no CUDA GPU" % torch.__version__
    if device >= torch.cuda.device_count():
        return None, "no GPU %d (torch sees %d)" % (device, torch.cuda.device_count())
    return torch, None


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def stats(times_s, reps, cpu_s_total):
    """median v[n/2] and p90 v[min(9n/10, n-1)] (ms), as the bench's bench_stats; CPU ms per call."""
    v = sorted(times_s)
    n = len(v)
    return {"median_ms": v[n // 2] * 1e3, "p90_ms": v[min(9 * n // 10, n - 1)] * 1e3,
            "cpu_ms_per_call": cpu_s_total * 1e3 / reps, "pool_cpu_ms_per_call": 0.0, "poller_cpu_ms_per_call": 0.0}


def load_steps(torch, a):
    """Per id count, its steps as an int32 CPU tensor [reps + 2, n]."""
    total = a.batches * sum(a.ids)
    if a.ids_file is None:
        g = torch.Generator()
        g.manual_seed(a.seed)
        return [torch.randint(0, a.rows, (a.batches, n), dtype=torch.int32, generator=g) for n in a.ids]
    with open(a.ids_file, "rb") as f:
        data = f.read()
    if len(data) != 4 * total:
        raise ValueError("--ids-file holds %d bytes, not the %d of %d steps of %s ids"
                         % (len(data), 4 * total, a.batches, ",".join(map(str, a.ids))))
    flat = torch.frombuffer(bytearray(data), dtype=torch.int32)
    lo, hi = int(flat.min()), int(flat.max())
    if lo < 0 or hi >= a.rows:  # vLLM's kernel would give zero rows for them: faster, and wrong
        raise ValueError("--ids-file: ids %d .. %d, outside the table's %d rows" % (lo, hi, a.rows))
    out, at = [], 0
    for n in a.ids:
        out.append(flat[at:at + a.batches * n].view(a.batches, n))
        at += a.batches * n
    return out


def padded(torch, steps, dev):
    """[batches, n] ids -> [batches, T, 24] on the GPU, T = ceil(n / 24), the cells past n dead (-1)."""
    b, n = steps.shape
    T = (n + HEADS - 1) // HEADS
    full = torch.full((b, T * HEADS), -1, dtype=torch.int32)
    full[:, :n] = steps
    return full.view(b, T, HEADS).to(dev)


def check_rows(out, n):
    """Every live id's row holds something (the table has no zero row) and every dead cell's is zero:
    else the kernel did not read what it was given, however fast. None, or why not."""
    rows = out.view(-1, DIM)
    if not bool((rows[:n] != 0).any(dim=1).all()):
        return "a live id's row came out zero: the kernel did not read the table"
    if not bool((rows[n:] == 0).all()):
        return "a dead (-1) id's row is not zero"
    return None


def time_mode(torch, eng, ids, out, n, mode, reps, flush=None, gap_s=0.0):
    """One mode of one placement; a mode's figures or {"error": why}. flush: GPU memory written first
    (the last run's rows out of the L2 cache); gap_s: idle before each timed call."""
    stream = torch.cuda.current_stream()
    if flush is not None:
        flush.zero_()
    T = ids.shape[1]
    call, before = None, None
    if mode == "gpu_ids":
        def call(i):
            eng.run(ids[i], out)
    else:
        cap = ids[0].clone()
        eng.run(cap, out)  # Triton compiles outside the capture
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            eng.run(cap, out)
        torch.cuda.synchronize()

        def before(i):  # the step's ids into the captured tensor, not timed
            cap.copy_(ids[i])
            stream.synchronize()

        def call(i):
            g.replay()
    times, c0 = [], 0.0
    for rep in range(-2, reps):
        i = rep + 2
        if rep == 0:
            c0 = cpu_s()
        if before:
            before(i)
        if gap_s > 0:
            time.sleep(gap_s)
        t0 = time.perf_counter()
        call(i)
        stream.synchronize()
        if rep >= 0:
            times.append(time.perf_counter() - t0)
    res = stats(times, reps, cpu_s() - c0)
    bad = check_rows(out[:T], n)
    return {"error": bad} if bad else res


def measure(torch, a, rep, log):
    import triton  # noqa: PLC0415
    import eht  # noqa: PLC0415
    from . import bench_step_model, vllm_baseline  # noqa: PLC0415
    dev = torch.device("cuda", a.device)
    torch.cuda.set_device(dev)
    props = torch.cuda.get_device_properties(dev)
    rep.update({"torch": torch.__version__, "triton": triton.__version__,
                "gpu": {"name": props.name, "sms": props.multi_processor_count}})
    steps = load_steps(torch, a)
    t0 = time.time()
    table, keep = bench_step_model.make_table(torch, eht, a.rows, a.device, 0, "vllm-baseline")
    rep["setup_s"] = time.time() - t0
    if not table.device_ptr:
        raise RuntimeError("the table could not be pinned for GPU %d (vLLM's kernel reads it in place)" % a.device)
    log("vllm baseline: table %.2f GiB (%d rows), pinned in %.1f s" % (a.table_gib, a.rows, rep["setup_s"]))
    tmax = max((n + HEADS - 1) // HEADS for n in a.ids)
    out = torch.empty((tmax, HEADS, DIM), dtype=torch.bfloat16, device=dev)
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=dev)
    side = torch.cuda.Stream(dev)
    results = []
    try:
        with torch.cuda.stream(side):
            for n, st in zip(a.ids, steps):
                ids = padded(torch, st, dev)
                T = ids.shape[1]
                for bg in (False, True):
                    eng = bench_step_model.VllmEngine(torch, table, bg)
                    row = {"ids": n, "tokens": T, "background": bg,
                           "grid": vllm_baseline.grid_size(T * HEADS, bg, dev)}
                    for m in a.modes:
                        try:
                            row[m] = time_mode(torch, eng, ids, out[:T], n, m, a.reps, flush, a.gap_ms * 1e-3)
                        except Exception as e:  # noqa: BLE001 (one mode failing must not lose the others)
                            row[m] = {"error": "%s: %s" % (type(e).__name__, e)}
                    eng.close()
                    results.append(row)
                del ids
        torch.cuda.synchronize()
    finally:
        del out, flush
        table.close()
        del keep
    rep["results"] = results


def main(argv=None):
    global _report_fd
    # Whatever else writes to stdout (a library's banner, a warning printed there) goes to stderr:
    # the bench's stdout holds the report alone.
    sys.stdout.flush()
    _report_fd = os.dup(1)
    os.dup2(2, 1)
    a = parse_args(sys.argv[1:] if argv is None else argv)
    rep = envelope(a)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    torch, why = probe(a.device)
    if why is None:
        try:
            importlib.import_module("eht")
        except Exception as e:  # noqa: BLE001 (libeht not loading is a reason to skip, not to fail)
            why = "eht's Python binding does not load (%s: %s)" % (type(e).__name__, e)
    if why is not None:
        rep["skipped"] = why
        _emit(rep)
        return 0
    try:
        measure(torch, a, rep, log)
    except Exception as e:  # noqa: BLE001 (stdout still gets its one object; the traceback goes to stderr)
        import traceback  # noqa: PLC0415
        traceback.print_exc()
        _emit({"error": "%s: %s" % (type(e).__name__, e), "exit": 1})
        return 1
    _emit(rep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
