# SPDX-License-Identifier: Apache-2.0
"""Fake vllm.models.deepseek_v4_1.nvidia.engram: the NVIDIA subclass, with a lookup of its own (its
kernel) and its inline threshold; and the NVIDIA Engram module that prefetches every batch of an
offloaded table from two methods marked eager_break_during_capture (BREAKS records each call of
them: where a PIECEWISE capture would break)."""
import functools

from vllm.models.deepseek_v4_1.common import engram

BREAKS = []


def eager_break_during_capture(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        BREAKS.append(fn.__name__)
        return fn(*args, **kwargs)
    return wrapper


class ParallelEngramEmbedding(engram.ParallelEngramEmbedding):
    INLINE_LOOKUP_THRESHOLD = 4096

    def lookup(self, indices, out, background=False):
        self.vllm_lookups += 1
        return out


class Engram:
    """The layer module: its embedding (embed_tokens), its staging rows, a prefetch stream where the
    table is offloaded; prepare_embeddings starts the batch's lookup, _ready_rows joins it."""

    def __init__(self, embed_tokens, staged_rows="staged"):
        self.embed_tokens, self.staged_rows = embed_tokens, staged_rows
        self._prefetch_stream = "prefetch-stream" if embed_tokens.cpu_offload else None
        self.joins = 0

    def prepare_embeddings(self, hash_ids):
        if self._prefetch_stream is None:
            return self.embed_tokens.lookup(hash_ids, self.staged_rows)
        self._start_prefetch(hash_ids, self.staged_rows, self._prefetch_stream)

    @eager_break_during_capture
    def _start_prefetch(self, hash_ids, rows, stream):
        self.embed_tokens.lookup(hash_ids, rows, background=True)

    @eager_break_during_capture
    def _finish_prefetch(self, stream):
        self.joins += 1

    def _ready_rows(self, num_tokens):
        if self._prefetch_stream is not None:
            self._finish_prefetch(self._prefetch_stream)
        return self.staged_rows
