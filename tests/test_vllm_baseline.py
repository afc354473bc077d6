# SPDX-License-Identifier: Apache-2.0
"""test_vllm_baseline.py: eht.vllm_baseline (vLLM's lookup algorithm in Triton, the benchmarks' baseline)
bit for bit against a reference written from ENGRAM.md: several (head_start, part) of tp 1/3/4/8, both
vocab windows (the whole layer; a rank's range), T in {1, 7, 256}, int32 and int64 ids as the strided
[T, 24] view of a [T, 2, 24] hash output, both grids (the background way's SMs / 2). Exits 77 without
torch, Triton or CUDA."""
import importlib
import os
import sys

import pyutil

sys.path.insert(0, os.path.join(os.environ.get("EHT_SOURCE_DIR", "."), "python"))
try:
    import torch
    importlib.import_module("triton")
except ImportError as e:
    print("SKIP: %s" % e, file=sys.stderr)
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: no CUDA device", file=sys.stderr)
    sys.exit(77)
import eht  # noqa: E402
from eht import vllm_baseline as vb  # noqa: E402

check = pyutil.Checks()
dev = torch.device("cuda", 0)
g = torch.Generator().manual_seed(11)
lay = eht.engram.Layout.preset("v41-small")
R, H = lay.rows[0], lay.cols
rows = torch.randint(0, 256, (R, 264), dtype=torch.uint8, generator=g)
rows[:, 256:] = torch.randint(118, 136, (R, 8), dtype=torch.uint8, generator=g)
rows[::89, 256 + 2] = 0
rows[3::97, 256 + 5] = 255
# vLLM's storage: weights [R, 256] then scales [R, 8], pinned, read in place over UVA
host = torch.empty(R * 264, dtype=torch.uint8).pin_memory()
host[:R * 256].copy_(rows[:, :256].reshape(-1))
host[R * 256:].copy_(rows[:, 256:].reshape(-1))
w, s = vb.split_views(host, R)


def ref_bf16(r):
    wf = r[:, :256].contiguous().view(torch.float8_e4m3fn).to(torch.float32)
    sf = (r[:, 256:264].to(torch.int32) << 23).view(torch.float32)
    return (wf.view(-1, 8, 32) * sf.view(-1, 8, 1)).view(-1, 256)


REF = ref_bf16(rows).to(dev)  # float32 products; compared after the same bf16 rounding


def expect(ids2, hs, part, vs, ve):
    T = ids2.shape[0]
    cols = torch.full((T, part), -1, dtype=torch.int64, device=dev)
    e = min(hs + part, H)
    if e > hs:
        cols[:, :e - hs] = ids2[:, hs:e].long()
    live = (cols >= vs) & (cols < ve) & (cols >= 0) & (cols < R)
    y = REF[cols.clamp(0, R - 1)]
    y[~live] = 0
    return y.to(torch.bfloat16)


def same(a, b):
    an, bn = torch.isnan(a.float()), torch.isnan(b.float())
    return bool(torch.equal(an, bn) and torch.equal(a.view(torch.int16)[~an], b.view(torch.int16)[~bn]))


n = 0
for tp in (1, 3, 4, 8):
    for r in range(tp):
        hs, part = lay.head_range(tp, r)
        vs, ve = lay.shard(0, tp, r)
        for T in (1, 7, 256):
            dtype = torch.int32 if n % 2 else torch.int64
            x = torch.randint(-2, R + 3, (T, 2, H), dtype=torch.int64, generator=g).to(dtype).to(dev)
            ids = x[:, 0, :]
            for window in ((vs, ve), (0, R)):
                for bg in (False, True):
                    out = torch.full((T, part, 256), 3.0, dtype=torch.bfloat16, device=dev)
                    vb.lookup(w, s, ids, out, hs, part, window[0], window[1], background=bg)
                    torch.cuda.synchronize()
                    check(same(out, expect(ids, hs, part, *window)),
                          "tp %d rank %d T %d %s window %s bg=%s" % (tp, r, T, dtype, window, bg))
                    n += 1
check(vb.grid_size(6144, True) * 2 <= torch.cuda.get_device_properties(0).multi_processor_count + 1,
      "the background grid is at most half the SMs")
print("%d cases" % n)
print("PASS" if check.failures == 0 else "FAIL: %d" % check.failures)
sys.exit(1 if check.failures else 0)
