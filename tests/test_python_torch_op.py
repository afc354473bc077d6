# SPDX-License-Identifier: Apache-2.0
"""test_python_torch_op.py: eht.torch's op the way vLLM's Engram kernel tests check theirs. A table of
a v41-small layer (24 head ranges) with weights that include e4m3 NaN, -0 and 0 and scales drawn from
120..134 plus the edge bytes 0 and 255, against a reference lookup written from ENGRAM.md (masked and
padded rows zero, NaN as vLLM's kernel gives it), compared bit for bit: eager, inside
torch.cuda.graph (replayed with new ids), under torch.compile(fullgraph=True) (and that compiled
function captured); ids as the non-contiguous [T, 24] view of a [T, 2, 24] hash output, int32 and
int64; every (head_start, part) of tp 1/2/3/4/6/8/12 over the whole table (the range masks) and over
the rank's own shard (the offset maps); both output layouts (bf16 [T, part, 256], packed uint8
[T, part, 264] with a row stride); graphs captured at 130 sizes and all replayed; errors naming the
argument; a missing stream dependency shows as wrong rows (negative control); a raw lookup dequantized
by eht.torch.dequant equals the bf16 lookup (eager, strided out, a captured graph replayed). Prints the op's graph
replay time beside the C path's. Exits 77 without torch.library.custom_op (torch >= 2.4) or CUDA."""
import sys
import time

import pyutil

torch = pyutil.torch_cuda_or_skip(custom_op=True)
import eht  # noqa: E402
import eht.torch as et  # noqa: E402

check = pyutil.Checks()


from torch_engram_ref import R, REF, dev, expect, g, lay, make_ids, new_out, rows, same, table  # noqa: E402

check(REF is not None and __import__("torch_engram_ref").HAS_SPECIALS, "the table has NaN and inf values")
engines = {}
for fmt, strategy in (("bf16", "direct"), ("bf16", "host"), ("bf16", "auto"), ("raw", "auto")):
    engines[(fmt, strategy)] = table.lookup_engine(strategy=strategy, format=fmt, device=0)

# ---- eager: every rank of tp 1/2/3/4/6/8/12, int32 and int64, both layouts ----
TPS = (1, 2, 3, 4, 6, 8, 12)
for (fmt, strategy), lk in engines.items():
    for dtype in (torch.int32, torch.int64):
        ids3 = make_ids(257, dtype)
        ids = ids3[:, 0, :]  # strides (48, 1)
        assert not ids.is_contiguous()
        for tp in TPS:
            hs_part = [lay.head_range(tp, r) for r in range(tp)]
            for r, (hs, part) in enumerate(hs_part):
                vs, ve = lay.shard(0, tp, r)
                out = new_out(257, part, fmt)
                et.lookup_into(lk, ids, out, head_start=hs, part=part, vocab_start=vs, vocab_end=ve)
                want = expect(ids, hs, part, vs, ve, fmt)
                check(same(out, want), "eager %s/%s %s tp %d rank %d" % (fmt, strategy, dtype, tp, r))
        # without a range every live id reads; part covering padded heads past 24
        out = new_out(257, 5, fmt)
        et.lookup_into(lk, ids, out, head_start=20, part=5)
        check(same(out, expect(ids, 20, 5, 0, R, fmt)), "eager %s/%s padded heads, no range" % (fmt, strategy))
        y = et.lookup(lk, ids, head_start=8, part=8)
        check(same(y, expect(ids, 8, 8, 0, R, fmt)), "functional %s/%s" % (fmt, strategy))
        check(y.is_contiguous() and y.dtype == (torch.bfloat16 if fmt == "bf16" else torch.uint8), "functional out")

# A rank's own shard (rows [vs, ve) numbered from 0): the offset maps ids, the range masks.
lkb = engines[("bf16", "auto")]
ids3 = make_ids(300)
ids = ids3[:, 0, :]
for tp in (2, 4, 12):
    for r in range(tp):
        vs, ve = lay.shard(0, tp, r)
        hs, part = lay.head_range(tp, r)
        shard = eht.wrap(rows[vs:ve].clone(), ve - vs, 264, device=0, name="shard")  # memory of its own
        lk = shard.lookup_engine(strategy="auto", format="bf16", device=0)
        out = new_out(300, part, "bf16")
        et.lookup_into(lk, ids, out, head_start=hs, part=part, vocab_start=vs, vocab_end=ve)
        check(same(out, expect(ids, hs, part, vs, ve, "bf16")), "shard table tp %d rank %d" % (tp, r))
        et.release(lk)

# ---- errors name the argument ----
def raises(exc, what, fn):
    try:
        fn()
    except exc as e:
        check(what in str(e), "error %r names %r" % (str(e), what))
        return
    check(False, "no %s for %s" % (exc.__name__, what))


o = new_out(300, 8, "bf16")
raises(TypeError, "ids", lambda: et.lookup_into(lkb, ids.float(), o, part=8))
raises(ValueError, "ids", lambda: et.lookup_into(lkb, ids3, o, part=8))
raises(TypeError, "out", lambda: et.lookup_into(lkb, ids, o.to(torch.float16), part=8))
raises(ValueError, "out", lambda: et.lookup_into(lkb, ids, o[:, :4], part=8))
raises(ValueError, "out", lambda: et.lookup_into(lkb, ids, o.cpu(), part=8))
raises(ValueError, "head_start", lambda: et.lookup_into(lkb, ids, o, head_start=25, part=8))
raises(ValueError, "head_start", lambda: et.lookup_into(lkb, ids, o, head_start=-1, part=8))
raises(ValueError, "part", lambda: et.lookup_into(lkb, ids, o[:, :0], part=0))
raises(ValueError, "vocab_end", lambda: et.lookup_into(lkb, ids, o, part=8, vocab_start=10, vocab_end=5))
raises(ValueError, "vocab_start and vocab_end", lambda: et.lookup_into(lkb, ids, o, part=8, vocab_start=10))
raises(TypeError, "out must be torch.uint8", lambda: et.lookup_into(engines[("raw", "auto")], ids, o, part=8))
raises(ValueError, "engine", lambda: torch.ops.eht.lookup_into(123456, ids, o, 0, 8, -(1 << 63), -(1 << 63),
                                                          -(1 << 63)))

# ---- CUDA graphs: captured once, replayed with new ids written into the captured ids tensor ----
for (fmt, strategy), lk in engines.items():
    tp, r = 4, 1
    vs, ve = lay.shard(0, tp, r)
    hs, part = lay.head_range(tp, r)
    ids3 = make_ids(64)
    out = new_out(64, part, fmt)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up outside capture
        et.lookup_into(lk, ids3[:, 0, :], out, head_start=hs, part=part, vocab_start=vs, vocab_end=ve)
    torch.cuda.current_stream().wait_stream(s)
    gr = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gr):
        et.lookup_into(lk, ids3[:, 0, :], out, head_start=hs, part=part, vocab_start=vs, vocab_end=ve)
    for rep in range(3):
        ids3.copy_(make_ids(64))
        gr.replay()
        torch.cuda.synchronize()
        check(same(out, expect(ids3[:, 0, :], hs, part, vs, ve, fmt)), "graph %s/%s replay %d" % (fmt, strategy, rep))

# ---- graphs at 130 sizes (a distinct ids buffer each), all replayed after all were captured ----
for key in (("bf16", "host"), ("bf16", "auto")):
    lk = engines[key]
    graphs = []
    pool = torch.cuda.graph_pool_handle()
    for T in range(1, 131):
        ids3 = make_ids(T)
        out = new_out(T, 8, "bf16")
        gr = torch.cuda.CUDAGraph()
        with torch.cuda.graph(gr, pool=pool):
            et.lookup_into(lk, ids3[:, 0, :], out, head_start=8, part=8, vocab_start=0, vocab_end=R)
        graphs.append((T, ids3, out, gr))
    bad = 0
    for T, ids3, out, gr in reversed(graphs):
        ids3.copy_(make_ids(T))
        gr.replay()
    torch.cuda.synchronize()
    for T, ids3, out, gr in graphs:
        bad += not same(out, expect(ids3[:, 0, :], 8, 8, 0, R, "bf16"))
    check(bad == 0, "%s: %d of 130 graph sizes differ after replay" % (key, bad))
    print("graphs at 130 sizes, %s/%s: %d differ" % (key[0], key[1], bad))
    del graphs

# ---- torch.compile(fullgraph=True), and that compiled function captured in a graph ----
hs, part = lay.head_range(3, 2)
vs, ve = lay.shard(0, 3, 2)


eid = et.engine_id(lkb)


@torch.compile(fullgraph=True)
def layer(ids3, out):
    x = ids3[:, 0, :]
    et.lookup_into(lkb, x, out, head_start=hs, part=part, vocab_start=vs, vocab_end=ve)  # the engine object
    y = et.lookup(eid, x, head_start=0, part=8)                                           # or its id
    return out.float().nan_to_num(0.0).sum(dim=(1, 2)), y


ids3 = make_ids(96)
out = new_out(96, part, "bf16")
try:
    ssum, y = layer(ids3, out)
    torch.cuda.synchronize()
    check(same(out, expect(ids3[:, 0, :], hs, part, vs, ve, "bf16")), "compiled: out")
    check(same(y, expect(ids3[:, 0, :], 0, 8, 0, R, "bf16")), "compiled: functional")
    want = expect(ids3[:, 0, :], hs, part, vs, ve, "bf16").float().nan_to_num(0.0).sum(dim=(1, 2))
    check(torch.allclose(ssum, want, equal_nan=True), "compiled: the consumer reads the looked-up rows")
    gr = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gr):
        ssum_g, y_g = layer(ids3, out)
    ids3.copy_(make_ids(96))
    gr.replay()
    torch.cuda.synchronize()
    check(same(out, expect(ids3[:, 0, :], hs, part, vs, ve, "bf16")), "compiled + graph: out")
    check(same(y_g, expect(ids3[:, 0, :], 0, 8, 0, R, "bf16")), "compiled + graph: functional")
except Exception as exc:  # noqa: BLE001
    import traceback
    traceback.print_exc()
    check(False, "torch.compile(fullgraph=True): %s" % exc)

# ---- negative control: the op runs on the current stream, so a missing dependency reads stale ids ----
lk = engines[("bf16", "direct")]
ids3 = make_ids(2048)
old = ids3.clone()
new = make_ids(2048)
out = new_out(2048, 8, "bf16")
side = torch.cuda.Stream()
torch.cuda.synchronize()
torch.cuda._sleep(200_000_000)  # the main stream is busy, then writes new ids
ids3.copy_(new)
with torch.cuda.stream(side):  # no side.wait_stream(main): the lookup reads the old ids
    et.lookup_into(lk, ids3[:, 0, :], out, head_start=0, part=8)
torch.cuda.synchronize()
check(not same(out, expect(new[:, 0, :], 0, 8, 0, R, "bf16")) and same(out, expect(old[:, 0, :], 0, 8, 0, R, "bf16")),
      "negative control: without the stream dependency the rows are the stale ids' rows")
torch.cuda._sleep(200_000_000)
ids3.copy_(old)
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    et.lookup_into(lk, ids3[:, 0, :], out, head_start=0, part=8)
torch.cuda.synchronize()
check(same(out, expect(old[:, 0, :], 0, 8, 0, R, "bf16")), "with the stream dependency the rows are right")

# ---- Engram hashing: the CUDA kernel through Layout.hash (torch tensors) equals the CPU's ----
v41 = eht.engram.Layout.preset("v41")
toks = torch.randint(0, v41.compressed_vocab, (300,), dtype=torch.int32, generator=g)
starts = [0, 100, 101, 300]
dead = (torch.rand(300, generator=g) < 0.05).to(torch.uint8)
cpu_rows = v41.hash(toks.tolist(), starts=starts, dead=dead.tolist())
gpu_rows = v41.hash(toks.to(dev), starts=torch.tensor(starts, dtype=torch.int32, device=dev), dead=dead.to(dev))
torch.cuda.synchronize()
check(gpu_rows.shape == (300, 2, 24) and gpu_rows.cpu().reshape(-1).tolist() == list(cpu_rows),
      "Layout.hash on the GPU equals the CPU's")

# ---- deferred dequant: a raw lookup, then eht.torch.dequant, equals the bf16 lookup ----
lkr = engines[("raw", "auto")]
ids = make_ids(300)[:, 0, :]
raw = et.lookup(lkr, ids, head_start=0, part=24)  # [300, 24, 264] uint8
want = expect(ids, 0, 24, 0, R, "bf16")
check(same(et.dequant(lkr, raw), want), "dequant of raw rows equals the bf16 lookup")
strided = torch.full((300, 24, 264), 7.0, dtype=torch.bfloat16, device=dev)[:, :, :256]
et.dequant_into(lkr, raw, strided)
check(same(strided, want), "dequant into a strided out")
ids_buf = make_ids(300)
raw_buf = torch.empty((300, 24, 264), dtype=torch.uint8, device=dev)
o = torch.empty((300, 24, 256), dtype=torch.bfloat16, device=dev)


def raw_then_dequant():
    et.lookup_into(lkr, ids_buf[:, 0, :], raw_buf, head_start=0, part=24)
    et.dequant_into(lkr, raw_buf, o)


def warm_and_capture(fn):
    """fn run once eagerly on a side stream (torch's rule before a capture), then captured."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    gr = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gr):
        fn()
    return gr


gr = warm_and_capture(raw_then_dequant)
for replay in range(3):
    ids_buf.copy_(make_ids(300))
    gr.replay()
    torch.cuda.synchronize()
    check(same(o, expect(ids_buf[:, 0, :], 0, 24, 0, R, "bf16")), "raw lookup + dequant graph replay %d" % replay)
raises(ValueError, "raw must be", lambda: et.dequant(lkr, raw[:, :, :100]))
raises(ValueError, "out must be", lambda: et.dequant_into(lkr, raw, torch.empty((300, 24, 255), dtype=torch.bfloat16,
                                                                                device=dev)))
raises(ValueError, "one GPU", lambda: et.dequant(lkr, raw.cpu()))

# ---- speed: the op (strided ids, head range, mask) against the C path on contiguous ids, as graphs ----
def graph_us(fn, reps=200):
    gr = warm_and_capture(fn)
    for _ in range(10):
        gr.replay()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        gr.replay()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps * 1e6


for T in (256, 1024, 8192):
    for strategy in ("direct", "auto"):
        lk = engines[("bf16", strategy)]
        ids3 = make_ids(T)
        out = torch.empty((T, 8, 256), dtype=torch.bfloat16, device=dev)
        flat = ids3[:, 0, 8:16].contiguous().view(-1)
        op = graph_us(lambda: et.lookup_into(lk, ids3[:, 0, :], out, head_start=8, part=8,
                                             vocab_start=lay.shard(0, 3, 1)[0], vocab_end=lay.shard(0, 3, 1)[1]))
        op_plain = graph_us(lambda: et.lookup_into(lk, ids3[:, 0, :], out, head_start=8, part=8))
        c = graph_us(lambda: lk.run(flat, out.view(-1), stream=torch.cuda.current_stream().cuda_stream))
        print("T %5d x 8 heads, %-6s: op %.1f us (masked range), %.1f us (no range), C path %.1f us (graph replays)"
              % (T, strategy, op, op_plain, c))

print("PASS" if check.failures == 0 else "FAIL: %d" % check.failures)
sys.exit(1 if check.failures else 0)
