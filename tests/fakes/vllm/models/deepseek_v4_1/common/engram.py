# SPDX-License-Identifier: Apache-2.0
"""Fake vllm.models.deepseek_v4_1.common.engram, the spelling of other vLLM trees: the layer holds its
geometry as head_start / part_n_hash_cols / vocab_start_idx / vocab_end_idx, stores only its rank's
rows from row 0 (weight [owned, dim], weight_scale_inv [owned, dim // block]), has no load_weights of
its own, and keeps its storage in GPU memory without cpu_offload."""
from vllm.distributed.parallel_state import get_tp_group


class GpuBuffer:
    """A 2-D byte array standing for a torch tensor in GPU memory (is_cuda)."""

    def __init__(self, rows, cols):
        self.shape, self.is_cuda = (rows, cols), True


class NoRows:
    """A rank's empty host storage (a memoryview cannot have a zero in its shape)."""

    def __init__(self, rows, cols):
        self.shape, self.is_cuda = (rows, cols), False


def _host(rows, cols):
    return memoryview(bytearray(rows * cols)).cast("B", (rows, cols)) if rows else NoRows(rows, cols)


class ParallelEngramEmbedding:
    def __init__(self, num_embeddings, dim, head_sizes, block_size=32, cpu_offload=True):
        g = get_tp_group()
        self.num_embeddings, self.dim, self.block_size = num_embeddings, dim, block_size
        self.head_sizes = list(head_sizes)
        self.n_hash_cols, self.tp_size, self.cpu_offload = len(head_sizes), g.world_size, cpu_offload
        self.part_n_hash_cols = -(-self.n_hash_cols // self.tp_size)
        self.head_start = g.rank_in_group * self.part_n_hash_cols
        starts = [sum(head_sizes[:i]) for i in range(len(head_sizes) + 1)]
        self.vocab_start_idx = starts[min(self.head_start, self.n_hash_cols)]
        self.vocab_end_idx = starts[min(self.head_start + self.part_n_hash_cols, self.n_hash_cols)]
        self.part_num_embeddings = self.vocab_end_idx - self.vocab_start_idx
        make = _host if cpu_offload else GpuBuffer
        self.weight = make(self.part_num_embeddings, dim)
        self.weight_scale_inv = make(self.part_num_embeddings, dim // block_size)
        self.vllm_lookups = 0

    def lookup(self, indices, out, background=False):
        self.vllm_lookups += 1
        return out
