# SPDX-License-Identifier: Apache-2.0
"""torch_engram_ref: what the torch tests of Engram lookups share (imported after their skips: needs
torch and CUDA): a table of a v41-small layer (24 head ranges) with weights that include e4m3 NaN, -0
and 0 and scales drawn from 120..134 plus the edge bytes 0 and 255, wrapped for GPU 0; its reference
rows written from ENGRAM.md; the expected output of a rank's lookup; a bit-for-bit comparison that says
how it differs; hash-like ids; outputs at a row stride."""
import sys

import torch

import eht

dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
g = torch.Generator().manual_seed(7)
lay = eht.engram.Layout.preset("v41-small")
R = lay.rows[0]
H = lay.cols

# The table: random weights with the special e4m3 bytes, scales 120..134 and some rows at 0 / 255.
rows = torch.randint(0, 256, (R, 264), dtype=torch.uint8, generator=g)
special = torch.tensor([0x00, 0x80, 0x7f, 0xff], dtype=torch.uint8)
pos = torch.randint(0, R * 256, (R * 8,), generator=g)
w = rows[:, :256].contiguous().view(-1)
w[pos] = special[torch.arange(pos.numel()) % 4]
rows[:, :256] = w.view(R, 256)
rows[:, 256:] = torch.randint(120, 135, (R, 8), dtype=torch.uint8, generator=g)
rows[::97, 256 + 3] = 0
rows[5::101, 256 + 6] = 255
rows[7::103, :32] = 0  # zero weights under scale 255 below: 0 * inf = NaN
rows[7::103, 256] = 255


def ref_bf16(r):
    """ENGRAM.md: scale = float bits (s << 23) (0 -> +0.0, 255 -> +inf); value = bf16_rne(e4m3(w) * scale).
    A NaN (e4m3 NaN, 0 * inf) is eht's documented bf16 NaN, 0x7fc0 (torch's own conversion writes
    0xffff on the CPU's vector path and 0x7fff on the GPU)."""
    w = r[:, :256].contiguous().view(torch.float8_e4m3fn).to(torch.float32)
    s = (r[:, 256:264].to(torch.int32) << 23).view(torch.float32)
    prod = (w.view(-1, 8, 32) * s.view(-1, 8, 1)).view(-1, 256)
    out = prod.to(torch.bfloat16)
    out.view(torch.int16)[torch.isnan(prod)] = 0x7fc0
    return out


REF = {"bf16": ref_bf16(rows).to(dev), "raw": rows.to(dev)}
HAS_SPECIALS = bool(torch.isnan(REF["bf16"].float()).any().item() and torch.isinf(REF["bf16"].float()).any().item())
table = eht.wrap(rows, R, 264, device=0, name="op-test")


def expect(ids2, hs, part, vs, ve, fmt):
    T = ids2.shape[0]
    cols = torch.full((T, part), -1, dtype=torch.int64, device=dev)
    e = min(hs + part, H)
    if e > hs:
        cols[:, :e - hs] = ids2[:, hs:e].long()
    live = (cols >= vs) & (cols < ve) & (cols >= 0) & (cols < R)
    y = REF[fmt][cols.clamp(0, R - 1)]
    y[~live] = 0
    return y


_told = [0]


def same(a, b):
    if a.dtype == torch.bfloat16:
        a, b = a.view(torch.int16), b.view(torch.int16)
    ok = a.shape == b.shape and torch.equal(a, b)
    if not ok and a.shape == b.shape and _told[0] < 3:  # say how, a few times
        _told[0] += 1
        d = (a != b).nonzero()
        print("  %d elements differ, first at %s: got %s want %s" % (
            d.shape[0], d[0].tolist(), [hex(int(x) & 0xffff) for x in a[tuple(d[:4].t())]],
            [hex(int(x) & 0xffff) for x in b[tuple(d[:4].t())]]), file=sys.stderr)
    return ok


def make_ids(T, dtype=torch.int32):
    """[T, 2, 24] hash-like ids (the layer we read is index 0), with -1 and past-the-end ids."""
    x = torch.randint(0, R, (T, 2, H), dtype=torch.int64, generator=g)
    m = torch.rand((T, 2, H), generator=g)
    x[m < 0.03] = -1
    x[(m >= 0.03) & (m < 0.05)] = R + 5
    return x.to(dtype).to(dev)


def new_out(T, part, fmt):
    if fmt == "bf16":  # a slice of one persistent buffer
        return torch.full((T + 3, part, 256), 7.0, dtype=torch.bfloat16, device=dev)[:T]
    return torch.full((T, part, 272), 0xab, dtype=torch.uint8, device=dev)[:, :, :264]  # row stride 272


