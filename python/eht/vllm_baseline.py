# SPDX-License-Identifier: Apache-2.0
"""eht.vllm_baseline: vLLM's Engram lookup algorithm as the baseline eht's benchmarks compare with,
written here from its description (ENGRAM.md, PLATFORM.md), not copied: a persistent Triton grid of
min(cdiv(rows, 16), SMs) programs (SMs / 2 in the background way), 16 rows a program per turn, each row
read in place from pinned host memory over UVA in vLLM's split layout (weights [rows, 256] then scales
[rows, 8]: two host reads a row), dequantized (scale = float bits (s << 23); value = bf16_rne(e4m3(w) *
scale)) and written as bf16 [T, part, 256]. Needs torch and Triton (imported on first use).

    w, s = eht.vllm_baseline.split_views(host_uint8_tensor, rows)      # the table's two arrays
    eht.vllm_baseline.lookup(w, s, indices, out, head_start, part, vocab_start, vocab_end, background)
"""
import functools

ROWS_PER_PROGRAM = 16
DIM = 256
SCALES = 8


class _HostPtr:
    """A pinned host address handed to Triton as a pointer (UVA: the GPU reads it in place)."""

    def __init__(self, addr, dtype):
        self._addr, self.dtype = addr, dtype

    def data_ptr(self):
        return self._addr


@functools.lru_cache(maxsize=None)
def _kernel():
    import triton  # noqa: PLC0415
    import triton.language as tl  # noqa: PLC0415

    @triton.jit
    def engram_lookup(ids, s_tok, s_head, w, s, out, o_tok, o_head, head_start, part, n_heads, vocab_start,
                      vocab_end, n, ROWS: tl.constexpr, D: tl.constexpr, NS: tl.constexpr):
        pid = tl.program_id(0)
        nprog = tl.num_programs(0)
        d = tl.arange(0, D)
        for blk in range(pid, tl.cdiv(n, ROWS), nprog):
            r = blk * ROWS + tl.arange(0, ROWS)
            inb = r < n
            t = r // part
            j = r - t * part
            col = head_start + j
            live = inb & (col < n_heads)
            idx = tl.load(ids + t.to(tl.int64) * s_tok + col.to(tl.int64) * s_head, mask=live, other=-1).to(tl.int64)
            live = live & (idx >= vocab_start) & (idx < vocab_end)
            wv = tl.load(w + idx[:, None] * D + d[None, :], mask=live[:, None], other=0)
            sv = tl.load(s + idx[:, None] * NS + (d // (D // NS))[None, :], mask=live[:, None], other=0)
            wf = wv.to(tl.float8e4nv, bitcast=True).to(tl.float32)
            sf = (sv.to(tl.int32) << 23).to(tl.float32, bitcast=True)
            v = tl.where(live[:, None], wf * sf, 0.0).to(tl.bfloat16)
            dst = out + t.to(tl.int64)[:, None] * o_tok + j.to(tl.int64)[:, None] * o_head + d[None, :]
            tl.store(dst, v, mask=inb[:, None])

    return engram_lookup


def split_views(host, rows):
    """(weights, scales) pointers of a pinned uint8 torch tensor holding vLLM's split layout: rows x 256
    weight bytes, then rows x 8 scale bytes."""
    import torch  # noqa: PLC0415
    base = host.data_ptr()
    return _HostPtr(base, torch.uint8), _HostPtr(base + rows * DIM, torch.uint8)


def grid_size(n, background, device=None):
    """min(cdiv(n, 16), SMs), SMs / 2 for the background way: vLLM's persistent grid."""
    import torch  # noqa: PLC0415
    sms = torch.cuda.get_device_properties(device if device is not None else torch.cuda.current_device()
                                           ).multi_processor_count
    cap = max(1, sms // 2) if background else sms
    return max(1, min((n + ROWS_PER_PROGRAM - 1) // ROWS_PER_PROGRAM, cap))


def lookup(weights, scales, indices, out, head_start, part, vocab_start, vocab_end, background=False, n_heads=24):
    """indices [T, H] (int32/int64, any strides, GPU) -> out [T, part, 256] bf16 on torch's current
    stream; columns >= n_heads and ids outside [vocab_start, vocab_end) give zero rows."""
    T = indices.shape[0]
    n = T * part
    if n == 0:
        return out
    grid = (grid_size(n, background, out.device),)
    _kernel()[grid](indices, indices.stride(0), indices.stride(1), weights, scales, out, out.stride(0), out.stride(1),
                    head_start, part, n_heads, vocab_start, vocab_end, n, ROWS=ROWS_PER_PROGRAM, D=DIM, NS=SCALES)
    return out
