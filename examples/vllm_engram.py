#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""vllm_engram.py: the eht backend an engine developer writes, in the role of vLLM's
ParallelEngramEmbedding (DeepSeek-V4.1), runnable without vLLM on a synthetic checkpoint.

What it does, as the engine would:
- __init__ (before the engine's memory profiling): per Engram layer, the rank's table: attached from
  `eht serve --key KEY` when a key is given, else shared on the node (eht.Group over the TP group's
  coordinator, here one rank; host-NUMA, else a pinned region) and filled from the checkpoint's rows
  of the rank's head range through the in-process disk tier, else wrapped pinned memory; one lookup
  engine per layer, made now (fixed buffers, calibrated).
- forward(token ids): the Engram hash once per step on the main stream ([T, 2, 24] int32), then both
  layers' lookups on one prefetch stream (each layer reads its [T, 24] view, columns [head_start,
  head_start + part), its vocab range) into persistent bf16 [T, part, 256] buffers, one event per
  layer; the consumer of layer L waits on its event.
- CUDA graphs at several batch sizes (FULL decode graphs), replayed with new token ids.
- The engines are made in the default mode: this step has no model layers beside the lookups, so
  their own latency is what counts. An engine whose prefetch stream runs beside its layers makes
  them with background=True (the CPU pushes the rows by default; push=False for an engine that launches
  steps far ahead: docs/ENGINES.md).

    python3 examples/vllm_engram.py [--tp 4 --rank 1] [--key KEY] [--sizes 1,64,256,1024,8192]

Measured on one H200 (torch 2.11; v41-small checkpoint, tp 4 rank 1: 6 heads, both tables shared in
host-NUMA memory, AUTO engines), a step = GPU hash + both layers' lookups on the prefetch stream +
the consumers' reads, as a CUDA graph / eagerly from Python:
    T     1:  38.9 us / 387.5 us      T  256:  66.6 us / 535.3 us      T 8192: 760.8 us / 805.2 us
    T    64:  63.8 us / 612.7 us      T 1024: 134.0 us / 732.5 us
(every replay equal to an eager lookup of the same ids; eager steps pay Python and ctypes per call.)
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "python"))
import torch  # noqa: E402

import eht  # noqa: E402
import eht.torch as et  # noqa: E402


class OneRank:
    """A coordinator of one rank (vLLM's GroupCoordinator shape: broadcast_object with src=0 only)."""
    rank_in_group, world_size = 0, 1

    def broadcast_object(self, obj=None, src=0):
        assert src == 0
        return obj


class EngramBackend:
    def __init__(self, ckpt, layout, tp, rank, key=None, group=None, device=None, max_tokens=8192):
        self.layout, self.tp, self.rank = layout, tp, rank
        self.device = torch.device("cuda", torch.cuda.current_device() if device is None else device)
        self.head_start, self.part = layout.head_range(tp, rank)
        self.tables, self.engines, self.ranges = [], [], []
        client = eht.attach(key, device=self.device.index) if key else None
        for li, lid in enumerate(layout.layer_ids):
            vs, ve = layout.shard(li, tp, rank)
            name = "layers.%d.engram.embed" % lid
            if client is not None:
                t = client.tables[name]
            else:
                t = self._share(ckpt, lid, vs, ve, group)
            self.tables.append(t)
            self.ranges.append((vs, ve))
            lk = t.lookup_engine(strategy="auto", format="bf16", device=self.device.index)
            self.engines.append(et.engine_id(lk))
        self._client = client
        self.stream = torch.cuda.Stream(self.device)  # the prefetch stream, shared by both layers
        self.events = [torch.cuda.Event() for _ in layout.layer_ids]
        self.out = torch.zeros((len(layout.layer_ids), max_tokens, self.part, 256), dtype=torch.bfloat16,
                               device=self.device)  # persistent: stable across replays

    def _share(self, ckpt, lid, vs, ve, group):
        """The rank's rows [vs, ve) in memory shared by the node's ranks (host-NUMA, else a pinned
        region), filled from the checkpoint through the in-process disk tier."""
        disk = eht.disk.open(ckpt, layer=lid, rows=(vs, ve), cache_bytes=0)
        nbytes = (ve - vs) * 264
        g = eht.Group.from_coordinator(group or OneRank())
        st = g.share_table(nbytes, row_bytes=264, name="l%d" % lid, device=self.device.index)
        g.close()
        cpu = st.cpu if st is not None else torch.empty(nbytes, dtype=torch.uint8).pin_memory()
        ids = torch.arange(vs, ve, dtype=torch.int64)
        lk = disk.lookup_engine(strategy="host", cpu_only=True)
        step = 1 << 16
        for a in range(0, ve - vs, step):
            lk.run(ids[a:a + step], cpu[a * 264:(a + step) * 264])
        if st is not None:
            st.table._keep = st
            return st.table
        t = eht.wrap(cpu, ve - vs, 264, device=self.device.index, name="layers.%d.engram.embed" % lid)
        t._keep = cpu
        return t

    def hash(self, tokens, starts):
        return self.layout.hash(tokens, starts=starts)  # [T, 2, 24] int32, main stream

    def lookups(self, ids3):
        """Both layers' lookups on the prefetch stream; returns the per-layer outputs (read them after
        waiting on self.events[L])."""
        T = ids3.shape[0]
        self.stream.wait_stream(torch.cuda.current_stream(self.device))
        outs = []
        with torch.cuda.stream(self.stream):
            for li in range(len(self.engines)):
                vs, ve = self.ranges[li]
                o = self.out[li, :T]
                et.lookup_into(self.engines[li], ids3[:, li, :], o, head_start=self.head_start, part=self.part,
                               vocab_start=vs, vocab_end=ve)
                self.events[li].record(self.stream)
                outs.append(o)
        return outs

    def forward(self, tokens, starts):
        ids3 = self.hash(tokens, starts)
        outs = self.lookups(ids3)
        acc = []
        for li, o in enumerate(outs):  # the consumer of layer L waits for its event only
            torch.cuda.current_stream(self.device).wait_event(self.events[li])
            acc.append(o.float().nan_to_num(0.0).sum())
        return acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tp", type=int, default=4)
    ap.add_argument("--rank", type=int, default=1)
    ap.add_argument("--key")
    ap.add_argument("--ckpt")
    ap.add_argument("--sizes", default="1,64,256,1024,8192")
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    layout = eht.engram.Layout.preset("v41-small")
    eht.engram.check_tp(layout.cols, a.tp)
    tmp = None
    ckpt = a.ckpt
    if not ckpt and not a.key:
        tmp = tempfile.TemporaryDirectory()
        ckpt = tmp.name
        cli = os.environ.get("EHT_CLI") or os.path.join(here, "..", "build", "eht")
        subprocess.run([cli, "synth", ckpt, "--preset", "v41-small"], check=True, stdout=subprocess.DEVNULL)
    t0 = time.perf_counter()
    be = EngramBackend(ckpt, layout, a.tp, a.rank, key=a.key)
    print("backend made in %.2f s: tp %d rank %d, heads [%d, %d), tables %s" % (
        time.perf_counter() - t0, a.tp, a.rank, be.head_start, be.head_start + be.part,
        ", ".join("%s (%s)" % (t.name, t.tier) for t in be.tables)))
    sizes = [int(x) for x in a.sizes.split(",")]
    graphs = {}
    for T in sizes:  # FULL decode graphs, one per batch size, each holding its own lookups
        tok = torch.randint(0, layout.compressed_vocab, (T,), dtype=torch.int32, device=be.device)
        st = torch.tensor([0, T], dtype=torch.int32, device=be.device)
        be.forward(tok, st)  # warm-up
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            res = be.forward(tok, st)
        graphs[T] = (tok, st, g, res)
    for T in sizes:
        tok, st, g, res = graphs[T]
        tok.copy_(torch.randint(0, layout.compressed_vocab, (T,), dtype=torch.int32, device=be.device))
        g.replay()
        torch.cuda.synchronize()
        ids3 = be.hash(tok, st)  # check the replay against an eager lookup of the same ids
        ok = True
        for li in range(len(be.engines)):
            vs, ve = be.ranges[li]
            want = et.lookup(be.engines[li], ids3[:, li, :], head_start=be.head_start, part=be.part,
                             vocab_start=vs, vocab_end=ve)
            ok = ok and torch.equal(want.view(torch.int16), be.out[li, :T].view(torch.int16))
        t1 = time.perf_counter()
        for _ in range(a.reps):
            g.replay()
        torch.cuda.synchronize()
        graph_us = (time.perf_counter() - t1) / a.reps * 1e6
        t1 = time.perf_counter()
        for _ in range(max(10, a.reps // 4)):
            be.forward(tok, st)
        torch.cuda.synchronize()
        eager_us = (time.perf_counter() - t1) / max(10, a.reps // 4) * 1e6
        print("T %5d: step (hash + 2 layers' lookups of %d heads + consumers) %.1f us as a graph, %.1f us eager; "
              "replay %s the eager lookup" % (T, be.part, graph_us, eager_us, "equals" if ok else "DIFFERS FROM"))
        if not ok:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
