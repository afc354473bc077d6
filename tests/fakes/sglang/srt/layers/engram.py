# SPDX-License-Identifier: Apache-2.0
"""Fake sglang.srt.layers.engram: EngramEmbedding with the constructor, attributes and calls of SGLang's
(python/sglang/srt/layers/engram.py at sgl-project/sglang 4be612a4): rows split over TP by equal counts;
a device table by default; with SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=1 a host table, weights [n, 256]
then scales [n, 8] in one buffer, laid out as SGLANG_DSV41_ENGRAM_HOST_TABLE_LAYOUT says ("shared":
every row, no all-reduce; "private": the rank's rows, all-reduce). prefetch / _gather_shared_into: as a
test of newer SGLang uses them (the side-stream prefetch). Counts SGLang's own gathers and collectives."""
import os

PARALLEL = {"tp_size": 1, "tp_rank": 0}  # stands in for sglang.srt.runtime_context.get_parallel()
FP8_BLOCK_SIZE = 32


class FakeTensor:
    """A tensor's shape and dim(): what SGLang's layer and eht.sglang read of indices and outputs."""

    def __init__(self, shape):
        self.shape = tuple(shape)

    def dim(self):
        return len(self.shape)


class _HostTable:
    def __init__(self, layout, nbytes):
        self.layout, self.raw = layout, bytearray(nbytes)
        self.registered, self.dirty = True, False

    def finish_load(self, label):
        self.dirty = False


class EngramEmbedding:
    def __init__(self, num_embeddings, dim, layer_id):
        self.dim = dim
        self.tp_size, rank = PARALLEL["tp_size"], PARALLEL["tp_rank"]
        self.row_start = num_embeddings * rank // self.tp_size
        self.rows = num_embeddings * (rank + 1) // self.tp_size - self.row_start
        self.host_table = None
        self.sglang = {"gather": 0, "all_reduce": 0, "dp_gather": 0}
        sb = dim // FP8_BLOCK_SIZE
        if os.environ.get("SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE") == "1":
            layout = os.environ.get("SGLANG_DSV41_ENGRAM_HOST_TABLE_LAYOUT", "shared")
            n = num_embeddings if layout == "shared" else self.rows
            self.host_table = _HostTable(layout, max(1, n * (dim + sb)))
            raw = memoryview(self.host_table.raw)
            self.weight = raw[: n * dim].cast("B", (n, dim)) if n else FakeTensor((0, dim))
            self.scale = raw[n * dim: n * (dim + sb)].cast("B", (n, sb)) if n else FakeTensor((0, sb))
        else:
            self.weight = FakeTensor((self.rows, dim))  # device memory: eht cannot wrap it
            self.scale = FakeTensor((self.rows, sb))

    @property
    def _shared(self):
        return self.host_table is not None and self.host_table.layout == "shared"

    def __call__(self, *args, **kwargs):  # nn.Module's call
        return self.forward(*args, **kwargs)

    def _empty(self, indices):
        return FakeTensor((*indices.shape, self.dim))

    def finish_load(self, label=""):
        if self.host_table is not None:
            self.host_table.finish_load(label)

    def forward(self, indices, forward_batch=None, *, cp_all_tokens=False):
        if self._shared:
            out = self._empty(indices)
            if indices.shape[0]:
                self.sglang["gather"] += 1
            return out
        if self.tp_size > 1 and getattr(forward_batch, "dp_attention", False):
            self.sglang["dp_gather"] += 1  # every DP rank's ids first, then this rank's rows of them
            values = self._owned_rows(indices)
            self.sglang["all_reduce"] += 1
            return values
        return self._lookup(indices)

    def _lookup(self, indices):
        if indices.shape[0] == 0:
            return self._empty(indices)
        values = self._owned_rows(indices)
        if self.tp_size > 1:
            self.sglang["all_reduce"] += 1
        return values

    def _owned_rows(self, indices):
        self.sglang["gather"] += 1
        return self._empty(indices)

    def prefetch(self, ids):
        out = self._empty(ids)
        self._gather_shared_into(ids, out)
        return out

    def _gather_shared_into(self, ids, out):
        self.sglang["gather"] += 1
        return out
