# SPDX-License-Identifier: Apache-2.0
"""eht bench step's simulated model (bench_step.py says what it measures): V4.1's Engram hashing of
the ids (uniform or a text's), the tables, the step (a CUDA graph of layers consuming two tables' rows)
and the engines each variant looks its rows up with (eht's, vLLM's algorithm, the copies alone)."""
import functools
import json
import os
import statistics
import time

from .bench_step_time import pct

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
def capture_graphs(torch, pieces):
    """CUDA graphs of pieces, [(warm, enqueue)]: every warm() run eagerly on a side stream first
    (torch's rule for capture; engines included), then each enqueue() captured as one graph."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for warm, _ in pieces:
            warm()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graphs = []
    for _, enqueue in pieces:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            enqueue()
        graphs.append(g)
    torch.cuda.synchronize()
    return graphs


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
        self.raw_only = False  # the raw option: rows looked up raw and never dequantized (a diagnostic)

    def dst(self, t):
        """Where table t's lookup writes: its raw rows (ldq, raw) or the bf16 rows the layer reads."""
        return self.raw[t] if self.late or self.raw_only else self.rows[t]

    def body(self, engines, place, side, marks=None, external=False):
        """The step as enqueued (eagerly or under capture) on the current stream. marks: a dict that
        gets timing events at the step's points (see mark_times); under capture they must be external
        (event nodes of the graph, recorded at each replay)."""
        torch = self.torch
        main = torch.cuda.current_stream()
        events = [None, None]

        def mark(name, stream):
            if marks is not None:
                # (eager without the external keyword: a torch older than it still traces eagerly)
                e = torch.cuda.Event(enable_timing=True, external=True) if external else \
                    torch.cuda.Event(enable_timing=True)
                e.record(stream)
                marks[name] = e

        mark("start", main)
        if engines and place == "split":  # (the rows' wait comes before each Engram layer, below)
            for t in range(2):
                engines[t].start(self.ids[t], self.dst(t))
        if engines and place == "side":
            side.wait_stream(main)
            with torch.cuda.stream(side):
                mark("side_start", side)
                for t in range(2):
                    engines[t].run(self.ids[t], self.dst(t), stream=side)
                    # the mark before the join's event, so the main stream's wait covers it: a mark
                    # after the last join is side-stream work a capture refuses as unjoined
                    mark("lookup%d_end" % t, side)
                    events[t] = torch.cuda.Event()
                    events[t].record(side)
        x = self.x
        x.copy_(self.x0)
        for layer in range(self.L):
            if layer in self.elayers:
                t = self.elayers.index(layer)
                mark("before_wait%d" % t, main)
                if engines:
                    if place == "side":
                        main.wait_event(events[t])
                    elif place == "split":
                        engines[t].wait(self.dst(t))
                    else:
                        mark("lookup%d_start" % t, main)
                        engines[t].run(self.ids[t], self.dst(t), stream=main)
                        mark("lookup%d_end" % t, main)
                    if self.late:  # between the model's kernels, on its stream
                        engines[t].dequant(self.raw[t], self.rows[t], stream=main)
                mark("after_wait%d" % t, main)
                x.add_(self.rows[t].view(self.T, self.part * DIM) @ self.E[t])
            x.copy_(torch.relu(x @ self.W1[layer]) @ self.W2[layer])
        mark("end", main)
        return x

    def capture(self, engines, place, side, marks=None):
        """The step as a CUDA graph; marks: a dict that gets its timing events (event nodes)."""
        return capture_graphs(self.torch, [(lambda: self.body(engines, place, side),
                                            lambda: self.body(engines, place, side, marks=marks,
                                                              external=marks is not None))])[0]

    def piece(self, lo, hi, first):
        """Layers [lo, hi) as enqueued on the current stream (first: the step's input copied in before
        them); an Engram layer among them reads its rows as they are (Pieces makes the main stream wait
        for its lookup before the piece that holds it)."""
        x = self.x
        if first:
            x.copy_(self.x0)
        for layer in range(lo, hi):
            if layer in self.elayers:
                t = self.elayers.index(layer)
                x.add_(self.rows[t].view(self.T, self.part * DIM) @ self.E[t])
            x.copy_(self.torch.relu(x @ self.W1[layer]) @ self.W2[layer])
        return x

    def capture_lookups(self, engines):
        torch = self.torch
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for t in range(2):
                cur = torch.cuda.current_stream()
                engines[t].run(self.ids[t], self.dst(t), stream=cur)
                if self.late:
                    engines[t].dequant(self.raw[t], self.rows[t], stream=cur)
        torch.cuda.synchronize()
        return g


class Pieces:
    """The step as vLLM's newer code runs it (`eager_break_during_capture`): the layers as CUDA graphs
    cut at the two Engram layers, the lookups called eagerly on the side stream at the step's start
    (engines' run, as vLLM's prefetch calls lookup(..., background=True)), and the main stream waiting
    for each table's lookup before the piece that reads it. replay() enqueues one step on the current
    stream, as CUDAGraph.replay does, so the timers take it as a graph; its eager calls' CPU is part
    of the step's: call_us keeps each table's calls' wall time on the launching thread (us), which a
    synced step waits for (take_call_us reads and clears them). split: the engines' two halves
    captured into the pieces instead (start at the first piece's head, each table's wait at the head
    of the piece that reads its rows), the way a split lookup keeps that placement's step all graphs;
    with engines that have no halves (the copies, LinkCopy), forked and joined inside the first piece."""

    def __init__(self, step, engines, side, split=False):
        torch = step.torch
        self.step, self.engines, self.side, self.split = step, engines, side, split
        self.call_us = [[] for _ in engines]
        e0, e1 = step.elayers
        self.bounds = [(0, e0), (e0, e1), (e1, step.L)]
        fns = [functools.partial(step.piece, lo, hi, i == 0) for i, (lo, hi) in enumerate(self.bounds)]
        if split and engines and not hasattr(engines[0], "start"):  # the copies: no halves
            fns[0] = functools.partial(self._copies_in_piece, fns[0])
        elif split:
            fns = [functools.partial(self._split_piece, i, f) for i, f in enumerate(fns)]
        self.graphs = capture_graphs(torch, [(f, f) for f in fns])
        self.launches = len(self.graphs)  # graph launches a replay (--timeline groups a step's pieces by it)
        self.events = [torch.cuda.Event(), torch.cuda.Event()]

    def _copies_in_piece(self, piece):
        """The first piece with the copies (engines without halves: copy-split-pieces) forked on the
        side stream at its head and joined at its end (a capture ends with its forks joined), so the
        bytes move beside the first layer in the graph that replays them: the floor of any host
        table's lookup captured into this placement, like for like with the split's halves."""
        step = self.step
        cur = step.torch.cuda.current_stream()
        self.side.wait_stream(cur)  # the ids fed on the main stream
        for t in range(2):
            self.engines[t].run(step.ids[t], step.dst(t), stream=self.side)
        x = piece()
        cur.wait_stream(self.side)
        return x

    def _split_piece(self, i, piece):
        step = self.step
        if i == 0:
            for t in range(2):
                self.engines[t].start(step.ids[t], step.dst(t))
        else:
            self.engines[i - 1].wait(step.dst(i - 1))
        return piece()

    def replay(self):
        torch, step = self.step.torch, self.step
        main = torch.cuda.current_stream()
        if self.split:
            for g in self.graphs:
                g.replay()
            return
        if self.engines:
            self.side.wait_stream(main)  # the ids fed on the main stream
            with torch.cuda.stream(self.side):
                for t in range(2):
                    t0 = time.perf_counter()
                    self.engines[t].run(step.ids[t], step.dst(t), stream=self.side)
                    self.call_us[t].append((time.perf_counter() - t0) * 1e6)
                    self.events[t].record(self.side)
        for i, g in enumerate(self.graphs):
            if i and self.engines:
                main.wait_event(self.events[i - 1])
            g.replay()
        if self.engines:
            main.wait_stream(self.side)  # nothing of the step left on the side stream after it

    def take_call_us(self):
        """Each table's eager calls since the last take: [{"median", "p90", "calls"}] (us), or None."""
        out = [{"median": statistics.median(c), "p90": pct(c, 0.9), "calls": len(c)} if c else None
               for c in self.call_us]
        self.call_us = [[] for _ in self.engines]
        return out if any(out) else None


# --------------------------------------------------------------------------- the engines
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

    def start(self, ids, out):
        """The background way's first half on the current stream (layer-split variants)."""
        self.layer.lookup_start(ids.view(-1, HEADS), out.view(-1, self.layer.part, DIM))

    def wait(self, out):
        self.layer.lookup_wait(out)

    def close(self):
        self.layer.close()


def fill_rows(torch, eht, tables, step, threads, rank):
    """The rows every variant's layers consume, looked up once (the engine's inline call of the ids in
    step.ids): variants that do not write them (none, copy, raw) then multiply the same values as the
    lookups', not zeros, whose products cost the GEMM less power (and so time) than real rows'."""
    v = {"layer": True, "background": False, "no_hot": True, "push": None}
    engines, _ = make_engines(eht, tables, v, 0, [None, None], threads, rank)
    try:
        for t in range(2):
            engines[t].run(step.ids[t], step.rows[t])
        torch.cuda.synchronize()
    finally:
        for e in engines:
            e.close()


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
    kw = {"strategy": v["strategy"], "format": "raw" if v.get("late_dequant") or v.get("raw_only") else "bf16",
          "device": tables[0].device, "threads": threads}
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
