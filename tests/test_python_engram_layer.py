# SPDX-License-Identifier: Apache-2.0
"""test_python_engram_layer.py: eht.torch.EngramLayer, the engine's own call (`layer.lookup(indices, out,
background)`), the way vLLM's Engram kernel tests check theirs. A table of a v41-small layer (24
head ranges) with e4m3 NaN, -0, 0 and scales 0 / 255, against a reference from ENGRAM.md, bit for bit:
every (head_start, part) of tp 1/2/3/4/5/6/8, both vocab windows (the whole table; the rank's own shard),
T in {1, 7, 256, 2048}, int32 / int64 ids as the strided [T, 24] view of a [T, 2, 24] hash output, bf16
[T, part, 256] and packed uint8 rows at a row stride; `background` both ways on one object, and the
background way in two halves (`lookup_start` / `lookup_wait`: eager, a graph each, compiled); eager,
inside torch.cuda.graph at 130 sizes (all replayed with new ids), under torch.compile(fullgraph=True);
errors; a missing stream dependency shows as wrong rows (negative controls, both calls). Prints the eager call's CPU
time per call. Exits 77 without torch >= 2.4 or CUDA."""
import sys
import time

import pyutil

torch = pyutil.torch_cuda_or_skip(custom_op=True)
import eht  # noqa: E402
import eht.torch as et  # noqa: E402

check = pyutil.Checks()


from torch_engram_ref import R, REF, dev, expect, lay, make_ids, rows, same, table  # noqa: E402

check(REF is not None and __import__("torch_engram_ref").HAS_SPECIALS, "the table has NaN and inf values")

def new_out2(T, part, fmt):
    if fmt == "bf16":  # a slice of one persistent buffer
        return torch.full((T + 3, part, 256), 7.0, dtype=torch.bfloat16, device=dev)[:T]
    # packed rows at a token stride: a rank's columns inside a wider [T, 2 * part * 264] buffer
    return torch.full((T, 2, part, 264), 0xab, dtype=torch.uint8, device=dev)[:, 1]


TPS = (1, 2, 3, 4, 5, 6, 8)
layers = {}
for fmt in ("bf16", "raw"):
    for tp in TPS:
        for r in range(tp):
            hs, part = lay.head_range(tp, r)
            vs, ve = lay.shard(0, tp, r)
            layers[(fmt, tp, r, 0)] = et.EngramLayer(table, head_start=hs, part=part, vocab_start=vs, vocab_end=ve,
                                                     format=fmt, device=0)
check(all(lyr.max_tokens == 8192 for lyr in layers.values()), "max_tokens: the C default (8192)")

# ---- eager, both ways on one object, every rank, int32 / int64, T 1 / 7 / 256 / 2048 ----
n = 0
for (fmt, tp, r, _), layer in layers.items():
    hs, part = lay.head_range(tp, r)
    vs, ve = lay.shard(0, tp, r)
    for T in (1, 7, 256, 2048):
        dtype = torch.int32 if n % 2 else torch.int64
        n += 1
        ids3 = make_ids(T, dtype)
        ids = ids3[:, 0, :]
        for bg in (False, True):
            out = new_out2(T, part, fmt)
            layer.lookup(ids, out, background=bg)
            torch.cuda.synchronize()
            check(same(out, expect(ids, hs, part, vs, ve, fmt)),
                  "eager %s tp %d rank %d T %d %s bg=%s" % (fmt, tp, r, T, dtype, bg))

# ---- a rank's own shard (rows [vs, ve) stored from row 0) ----
for tp in (2, 5, 8):
    for r in range(tp):
        vs, ve = lay.shard(0, tp, r)
        hs, part = lay.head_range(tp, r)
        shard = eht.wrap(rows[vs:ve].clone(), ve - vs, 264, device=0, name="shard")
        with et.EngramLayer(shard, head_start=hs, part=part, vocab_start=vs, vocab_end=ve, format="bf16",
                            device=0) as layer:
            for T in (7, 2048):
                ids = make_ids(T)[:, 0, :]
                for bg in (False, True):
                    out = new_out2(T, part, "bf16")
                    layer.lookup(ids, out, background=bg)
                    torch.cuda.synchronize()
                    check(same(out, expect(ids, hs, part, vs, ve, "bf16")), "shard tp %d rank %d T %d bg=%s"
                          % (tp, r, T, bg))


raises = check.raises


lb = layers[("bf16", 3, 1, 0)]
ids = make_ids(300)[:, 0, :]
o = new_out2(300, 8, "bf16")
raises(ValueError, "indices", lambda: lb.lookup(ids.float(), o))
raises(ValueError, "indices", lambda: lb.lookup(ids[:, :10], o))
raises(ValueError, "out must be", lambda: lb.lookup(ids, o[:, :4]))
raises(ValueError, "out must be", lambda: lb.lookup(ids, o.to(torch.float16)))
raises(ValueError, "device", lambda: lb.lookup(ids, o.cpu()))
raises(ValueError, "part", lambda: et.EngramLayer(table, head_start=24, format="bf16", device=0))
raises(ValueError, "vocab_start and vocab_end", lambda: et.EngramLayer(table, vocab_start=3, device=0))
raises(eht.EhtError, "past table", lambda: et.EngramLayer(table, vocab_start=0, vocab_end=R + 10, device=0))

# ---- graphs: both ways, captured once, replayed with new ids; then 130 sizes all replayed ----
def warm_and_capture(fn, pool=None):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    gr = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gr, pool=pool):
        fn()
    return gr


for fmt in ("bf16", "raw"):
    layer = layers[(fmt, 4, 1, 0)]
    hs, part = lay.head_range(4, 1)
    vs, ve = lay.shard(0, 4, 1)
    for bg in (False, True):
        ids3 = make_ids(64)
        out = new_out2(64, part, fmt)
        gr = warm_and_capture(lambda: layer.lookup(ids3[:, 0, :], out, background=bg))
        for rep in range(3):
            ids3.copy_(make_ids(64))
            gr.replay()
            torch.cuda.synchronize()
            check(same(out, expect(ids3[:, 0, :], hs, part, vs, ve, fmt)), "graph %s bg=%s replay %d" % (fmt, bg, rep))

layer = layers[("bf16", 3, 1, 0)]
for bg in (False, True):
    graphs = []
    pool = torch.cuda.graph_pool_handle()
    for T in range(1, 131):
        ids3 = make_ids(T)
        out = new_out2(T, 8, "bf16")
        graphs.append((T, ids3, out, warm_and_capture(lambda: layer.lookup(ids3[:, 0, :], out, background=bg), pool)))
    for T, ids3, out, gr in reversed(graphs):
        ids3.copy_(make_ids(T))
        gr.replay()
    torch.cuda.synchronize()
    vs, ve = lay.shard(0, 3, 1)
    bad = sum(not same(out, expect(ids3[:, 0, :], 8, 8, vs, ve, "bf16")) for T, ids3, out, gr in graphs)
    check(bad == 0, "bg=%s: %d of 130 graph sizes differ after replay" % (bg, bad))
    print("graphs at 130 sizes, background=%s: %d differ" % (bg, bad))
    del graphs

# ---- torch.compile(fullgraph=True), and that compiled function captured ----
hs, part = lay.head_range(3, 2)
vs, ve = lay.shard(0, 3, 2)
lc = layers[("bf16", 3, 2, 0)]


@torch.compile(fullgraph=True)
def step(ids3, out, bg: bool):
    lc.lookup(ids3[:, 0, :], out, background=bg)
    return out.float().nan_to_num(0.0).sum(dim=(1, 2))


for bg in (False, True):
    ids3 = make_ids(96)
    out = new_out2(96, part, "bf16")
    try:
        ssum = step(ids3, out, bg)
        torch.cuda.synchronize()
        want = expect(ids3[:, 0, :], hs, part, vs, ve, "bf16")
        check(same(out, want), "compiled bg=%s: out" % bg)
        check(torch.allclose(ssum, want.float().nan_to_num(0.0).sum(dim=(1, 2)), equal_nan=True),
              "compiled bg=%s: the consumer reads the rows" % bg)
        gr = torch.cuda.CUDAGraph()
        with torch.cuda.graph(gr):
            step(ids3, out, bg)
        ids3.copy_(make_ids(96))
        gr.replay()
        torch.cuda.synchronize()
        check(same(out, expect(ids3[:, 0, :], hs, part, vs, ve, "bf16")), "compiled + graph bg=%s" % bg)
    except Exception as exc:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        check(False, "torch.compile(fullgraph=True): %s" % exc)

# ---- negative control: a missing stream dependency reads stale ids ----
layer = layers[("bf16", 1, 0, 0)]
for bg in (False, True):
    ids3 = make_ids(2048)
    old, new = ids3.clone(), make_ids(2048)
    out = new_out2(2048, 24, "bf16")
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    torch.cuda._sleep(200_000_000)
    ids3.copy_(new)
    with torch.cuda.stream(side):  # no wait: the lookup reads the old ids
        layer.lookup(ids3[:, 0, :], out, background=bg)
    torch.cuda.synchronize()
    check(same(out, expect(old[:, 0, :], 0, 24, 0, R, "bf16")) and not same(out, expect(new[:, 0, :], 0, 24, 0, R, "bf16")),
          "negative control bg=%s: without the dependency the rows are the stale ids'" % bg)
    torch.cuda._sleep(200_000_000)
    ids3.copy_(new)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        layer.lookup(ids3[:, 0, :], out, background=bg)
    torch.cuda.synchronize()
    check(same(out, expect(new[:, 0, :], 0, 24, 0, R, "bf16")), "with the dependency bg=%s the rows are right" % bg)

# ---- the background way in two halves (lookup_start / lookup_wait): eager with work between, a graph
# each (vLLM's piecewise graphs start a prefetch in one piece and join it in a later one), compiled ----
for fmt in ("bf16", "raw"):
    for tp, r in ((1, 0), (4, 1), (3, 2)):
        layer = layers[(fmt, tp, r, 0)]
        hs, part = lay.head_range(tp, r)
        vs, ve = lay.shard(0, tp, r)
        for T in (1, 7, 256, 2048):
            ids = make_ids(T, torch.int32 if T % 2 else torch.int64)[:, 0, :]
            out = new_out2(T, part, fmt)
            layer.lookup_start(ids, out)
            busy = torch.randn(512, 512, device=dev) @ torch.randn(512, 512, device=dev)  # the model's work
            layer.lookup_wait(out)
            torch.cuda.synchronize()
            check(same(out, expect(ids, hs, part, vs, ve, fmt)) and busy.isfinite().all().item(),
                  "start / wait eager %s tp %d rank %d T %d" % (fmt, tp, r, T))
layer = layers[("bf16", 4, 1, 0)]
hs, part = lay.head_range(4, 1)
vs, ve = lay.shard(0, 4, 1)
ids, out = make_ids(64)[:, 0, :], new_out2(64, part, "bf16")
raises(eht.EhtError, "not waited", lambda: (layer.lookup_start(ids, out), layer.lookup_start(ids, out)))
layer.lookup_wait(out)
torch.cuda.synchronize()
check(same(out, expect(ids, hs, part, vs, ve, "bf16")), "start / wait: the start before a refused one")
for T in (8, 64, 1024):
    ids3 = make_ids(T)
    out = new_out2(T, part, "bf16")
    layer.lookup_wait(layer.lookup_start(ids3[:, 0, :], out))  # (warm: what a capture cannot make)
    gstart, gwait = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(gstart):
        layer.lookup_start(ids3[:, 0, :], out)
    with torch.cuda.graph(gwait):
        layer.lookup_wait(out)
    for rep in range(3):
        ids3.copy_(make_ids(T))
        gstart.replay()
        torch.cuda._sleep(1_000_000)  # the model's layers between the two pieces
        gwait.replay()
        torch.cuda.synchronize()
        check(same(out, expect(ids3[:, 0, :], hs, part, vs, ve, "bf16")), "start / wait graphs T %d replay %d" % (T, rep))


@torch.compile(fullgraph=True)
def split_step(ids3, out):
    lc.lookup_start(ids3[:, 0, :], out)
    busy = ids3.float().sum()
    lc.lookup_wait(out)
    return out.float().nan_to_num(0.0).sum(dim=(1, 2)) + busy * 0


hs, part = lay.head_range(3, 2)
vs, ve = lay.shard(0, 3, 2)
ids3 = make_ids(96)
out = new_out2(96, part, "bf16")
try:
    ssum = split_step(ids3, out)
    torch.cuda.synchronize()
    want = expect(ids3[:, 0, :], hs, part, vs, ve, "bf16")
    check(same(out, want) and torch.allclose(ssum, want.float().nan_to_num(0.0).sum(dim=(1, 2)), equal_nan=True),
          "compiled start / wait: the consumer reads the rows")
except Exception as exc:  # noqa: BLE001
    import traceback
    traceback.print_exc()
    check(False, "torch.compile(fullgraph=True) of start / wait: %s" % exc)

# negative control: a wait on a stream not ordered after the start passes on the stale word of an
# earlier request (every eager request slot used first) and its reader sees the old rows
layer = layers[("bf16", 1, 0, 0)]
for _ in range(10):
    layer.lookup(make_ids(16)[:, 0, :], new_out2(16, 24, "bf16"), background=True)
torch.cuda.synchronize()
for ordered in (False, True):
    ids = make_ids(2048)[:, 0, :]
    out = new_out2(2048, 24, "bf16")
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    torch.cuda._sleep(200_000_000)
    layer.lookup_start(ids, out)
    if ordered:
        side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        layer.lookup_wait(out)
        seen = out.clone()
    torch.cuda.synchronize()
    time.sleep(0.2)  # (unordered, nothing waited for the CPU's copies: they land soon after)
    torch.cuda.synchronize()
    want = expect(ids, 0, 24, 0, R, "bf16")
    check(same(seen, want) == ordered and same(out, want),
          "start / wait negative control (ordered=%s): the reader saw %s rows" % (ordered, "the" if same(seen, want) else "old"))

# ---- the eager call's CPU per call (a tp-4 rank's strided ids), beside a bare Triton launch ----
hs, part = lay.head_range(4, 1)
vs, ve = lay.shard(0, 4, 1)
layer = et.EngramLayer(table, head_start=hs, part=part, vocab_start=vs, vocab_end=ve, format="bf16", device=0)
for T in (8, 256, 8192):
    ids = make_ids(T)[:, 0, :]
    out = new_out2(T, part, "bf16")
    for bg in (False, True):
        for _ in range(20):
            layer.lookup(ids, out, background=bg)
        torch.cuda.synchronize()
        reps, cpu = 200, []
        for _ in range(reps):  # each call alone (synced between), timed on the calling thread's CPU clock
            c0 = time.thread_time()
            layer.lookup(ids, out, background=bg)
            cpu.append(time.thread_time() - c0)
            torch.cuda.synchronize()
        cpu.sort()
        print("eager EngramLayer.lookup T %d background=%s: median %.1f us of the calling thread's CPU a call"
              % (T, bg, cpu[reps // 2] * 1e6))

print("PASS" if check.failures == 0 else "FAIL: %d" % check.failures)
sys.exit(1 if check.failures else 0)
