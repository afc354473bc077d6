#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench-engram-layer.py: the engine's own call (eht.torch.EngramLayer.lookup(indices, out, background))
standalone on one GPU, as vLLM calls it: 24-column hash output, all 24 heads (tp 1), bf16 out, fresh
uniform ids each step; the same rows as one packed table and as vLLM's split layout (eht.wrap(...,
layout="split")) over the same bytes, and vLLM's own algorithm (eht.vllm_baseline) on them; median time
per step as a CUDA graph replay (synced), and the calling thread's CPU per eager call (eht's and vLLM's
Triton launch). Usage: bench-engram-layer.py [GiB] (default 16)."""
import importlib
import mmap
import statistics
import sys
import time

import torch

import eht
import eht.torch as et

gib = float(sys.argv[1]) if len(sys.argv) > 1 else 16.0
RB = 264
rows = int(gib * (1 << 30)) // RB
dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
# Anonymous memory on transparent huge pages, as eht bench step's tables (4 KiB pages cost the CPU's
# gather translation misses: a layer on torch.empty's memory measured slower than the bare engine).
_mm = mmap.mmap(-1, (rows * RB + (2 << 20) - 1) // (2 << 20) * (2 << 20), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
if hasattr(_mm, "madvise") and hasattr(mmap, "MADV_HUGEPAGE"):
    _mm.madvise(mmap.MADV_HUGEPAGE)
mem = torch.frombuffer(_mm, dtype=torch.uint8)[: rows * RB]
mem.view(torch.int64).fill_(0x3c3c3c3c3c3c3c3c)  # touch every page
packed = eht.wrap(mem, rows, RB, device=0, name="packed")
split = eht.wrap(mem, rows, RB, layout="split", device=0, name="split")  # the same bytes read as weights then scales
print("table: %.1f GiB, %d rows" % (gib, rows))


def replay_ms(lookup, T, reps=20):
    """Median ms of a CUDA graph replay of lookup(ids, out) (warmed up on a side stream, then captured),
    fresh uniform ids written into the captured ids tensor before each replay, synced around it."""
    ids = torch.randint(0, rows, (T, 24), dtype=torch.int32, device=dev)
    out = torch.empty((T, 24, 256), dtype=torch.bfloat16, device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        lookup(ids, out)
    torch.cuda.current_stream().wait_stream(s)
    gr = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gr):
        lookup(ids, out)
    times = []
    for _ in range(reps):
        ids.copy_(torch.randint(0, rows, (T, 24), dtype=torch.int32, device=dev))
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        gr.replay()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def graph_ms(layer, T, bg):
    return replay_ms(lambda ids, out: layer.lookup(ids, out, background=bg), T)


def eager_cpu_us(lookup, T, reps=100):
    """The calling thread's CPU (median us) per eager lookup(ids, out) of a tp-4 rank's call: ids a
    strided view, out [T, 6, 256] bf16; synced between calls."""
    ids = torch.randint(0, rows, (T, 48), dtype=torch.int32, device=dev)[:, 24:]  # a strided view
    out = torch.empty((T, 6, 256), dtype=torch.bfloat16, device=dev)
    cpu = []
    for _ in range(reps + 10):
        c0 = time.thread_time()
        lookup(ids, out)
        cpu.append(time.thread_time() - c0)
        torch.cuda.synchronize()
    return statistics.median(cpu[10:]) * 1e6


def vllm_on_packed():
    """vLLM's algorithm (eht.vllm_baseline) and the packed table's bytes read as its split layout, in
    place: (module, weights, scales)."""
    from eht import vllm_baseline as vb
    return (vb, vb._HostPtr(packed.device_ptr, torch.uint8),
            vb._HostPtr(packed.device_ptr + rows * 256, torch.uint8))


def vllm_ms(T, bg):
    vb, w, s = vllm_on_packed()
    return replay_ms(lambda ids, out: vb.lookup(w, s, ids, out, 0, 24, 0, rows, background=bg), T)


def vllm_eager_cpu_us(T, bg):
    """The same tp-4 rank call (heads [6, 12)) through vLLM's algorithm: its Triton launch."""
    vb, w, s = vllm_on_packed()
    return eager_cpu_us(lambda ids, out: vb.lookup(w, s, ids, out, 6, 6, 0, rows, background=bg), T)


try:
    importlib.import_module("triton")
    for T in (256, 8192):
        for bg in (False, True):
            print("vllm   T %5d (%6d ids) background=%-5s graph replay %.3f ms (vLLM's algorithm, Triton)"
                  % (T, T * 24, bg, vllm_ms(T, bg)))
    for T in (8, 256, 8192):
        for bg in (False, True):
            print("vllm   eager call T %5d (tp-4 rank, strided ids) background=%-5s: %.1f us of the calling "
                  "thread's CPU" % (T, bg, vllm_eager_cpu_us(T, bg)))
except ImportError:
    print("vllm: Triton is not installed, no baseline")

for name, table in (("packed", packed), ("split", split)):
    layer = et.EngramLayer(table, head_start=0, part=24, format="bf16", device=0)
    for T in (256, 8192):
        for bg in (False, True):
            print("%-6s T %5d (%6d ids) background=%-5s graph replay %.3f ms" % (name, T, T * 24, bg, graph_ms(layer, T, bg)))
    rank = et.EngramLayer(table, head_start=6, part=6, vocab_start=0, vocab_end=rows, format="bf16", device=0)
    for T in (8, 256, 8192):
        for bg in (False, True):
            print("%-6s eager call T %5d (tp-4 rank, strided ids) background=%-5s: %.1f us of the calling thread's CPU"
                  % (name, T, bg, eager_cpu_us(lambda ids, out: rank.lookup(ids, out, background=bg), T)))
    layer.close()
    rank.close()
