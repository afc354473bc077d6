# SPDX-License-Identifier: Apache-2.0
"""Fake vllm.models.deepseek_v41.common.engram: ParallelEngramEmbedding with the constructor and call
ENGRAM.md describes (and newer vLLM's packed flag), storage in vLLM's split layout (weight [rows, 256],
scale [rows, 8])."""

INLINE_LOOKUP_THRESHOLD = 4096


class ParallelEngramEmbedding:
    def __init__(self, num_embeddings, dim, head_sizes, block_size=32, cpu_offload=True, dp_shared_memory=False,
                 use_thp=False):
        self.num_embeddings, self.dim, self.head_sizes = num_embeddings, dim, list(head_sizes)
        self.block_size, self.cpu_offload = block_size, cpu_offload
        self.dp_shared_memory, self.use_thp = dp_shared_memory, use_thp
        self.weight = memoryview(bytearray(num_embeddings * dim)).cast("B", (num_embeddings, dim))
        self.scale = memoryview(bytearray(num_embeddings * 8)).cast("B", (num_embeddings, 8))
        self.loaded = 0
        self.vllm_lookups = 0

    def load_weights(self, weights):
        self.loaded += 1
        return set(weights)

    def lookup(self, indices, out, background=False, packed=False, **later):
        # (packed: newer vLLM's uint8 [T, part, 264] out, fp8 weights then ue8m0 scales; later: an
        # argument a vLLM after this one may add)
        self.vllm_lookups += 1
        self.vllm_args = (background, packed, later)
        return out


class NvidiaParallelEngramEmbedding(ParallelEngramEmbedding):
    INLINE_THRESHOLD_TOKENS = 4096
