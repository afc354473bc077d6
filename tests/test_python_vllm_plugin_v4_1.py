# SPDX-License-Identifier: Apache-2.0
"""test_python_vllm_plugin_v4_1.py: eht.vllm against a vLLM tree that spells the model
`deepseek_v4_1` (tests/fakes/vllm/models/deepseek_v4_1; ENGRAM.md's `deepseek_v41` made unimportable
here): the plug-in patches that module's ParallelEngramEmbedding and the NVIDIA subclass's own lookup,
raises the subclass's inline threshold, reads the rank's geometry from head_start / part_n_hash_cols /
vocab_start_idx / vocab_end_idx, wraps the rank's own rows (weight + weight_scale_inv, stored from row
0) without a copy, and leaves a layer whose storage is in GPU memory, or under names it does not know,
or a rank that owns no rows, on vLLM's own lookup; newer vLLM's NVIDIA Engram's prefetch methods
(marked eager_break_during_capture) replaced by the eht layer's lookup_start / lookup_wait. Runs without torch or a GPU (a recording stand-in of eht.torch.EngramLayer)."""
import array
import os
import sys

import pyutil

eht, check = pyutil.engine_fakes_eht()
sys.modules["vllm.models.deepseek_v41"] = None  # this vLLM tree has only deepseek_v4_1
FakeLayer = pyutil.stand_in_engram_layer()
import eht.vllm as ev  # noqa: E402
from vllm.distributed import parallel_state as ps  # noqa: E402


log = pyutil.log_records()

os.environ["VLLM_EHT"] = "1"
os.environ.pop("VLLM_EHT_KEY", None)
ps.TP = ps.GroupCoordinator(rank_in_group=1, world_size=4)
check(ev.register() is True, "VLLM_EHT=1 patches the deepseek_v4_1 module: %r" % log.messages)
import vllm.models.deepseek_v4_1.common.engram as eng  # noqa: E402
import vllm.models.deepseek_v4_1.nvidia.engram as nv  # noqa: E402
check(nv.ParallelEngramEmbedding.INLINE_LOOKUP_THRESHOLD >= 1 << 60, "the NVIDIA subclass's inline threshold raised")

# ---- the rank's own rows, its geometry from the layer's attributes (tp 4, rank 1) ----
sizes = [100 + i for i in range(24)]
off = [sum(sizes[:i]) for i in range(25)]
m = eng.ParallelEngramEmbedding(off[24], 256, sizes)
check(ev.rank_geometry(m) == (6, 6, off[6], off[12]), "geometry from the layer's own names: %r" % (ev.rank_geometry(m),))
m.weight[5, 0] = 0x42
m.weight_scale_inv[5, 7] = 0x7e
m.lookup("ids", "out", background=True)
check(len(FakeLayer.made) == 1 and m.vllm_lookups == 0, "the first lookup made the eht layer; vLLM's did not run")
layer = FakeLayer.made[0]
check(layer.kw.get("head_start") == 6 and layer.kw.get("part") == 6 and layer.kw.get("vocab_start") == off[6]
      and layer.kw.get("vocab_end") == off[12], "tp 4 rank 1's geometry passed on: %r" % layer.kw)
t = layer.table
check(t.rows == off[12] - off[6] and t.row_bytes == 264,
      "the rank's rows only, weight then weight_scale_inv: %d rows of %d" % (t.rows, t.row_bytes))
got = bytearray(264)
t.lookup(array.array("q", [5]), got, strategy="host")
check(got[0] == 0x42 and got[256 + 7] == 0x7e, "no copy: vLLM's bytes read through eht (the rank's row 5)")
check(layer.calls == [("ids", "out", True)], "the background flag passed through: %r" % layer.calls)

# ---- the NVIDIA subclass: its own lookup is routed too ----
m2 = nv.ParallelEngramEmbedding(off[24], 256, sizes)
m2.lookup("ids", "out")
check(len(FakeLayer.made) == 2 and m2.vllm_lookups == 0 and FakeLayer.made[1].calls == [("ids", "out", False)],
      "the subclass's own lookup goes through eht")

# ---- storage in GPU memory: vLLM's lookup stays, once warned ----
m3 = nv.ParallelEngramEmbedding(off[24], 256, sizes, cpu_offload=False)
m3.lookup("ids", "out")
m3.lookup("ids", "out", background=True)
warned = [x for x in log.messages if "GPU memory" in x]
check(m3.vllm_lookups == 2 and len(FakeLayer.made) == 2, "GPU storage: vLLM's own lookup ran (%d), no eht layer"
      % m3.vllm_lookups)
check(len(warned) == 1 and "weight_scale_inv" in warned[0], "one warning naming the storage: %r" % warned)
m4 = eng.ParallelEngramEmbedding(off[24], 256, sizes, cpu_offload=False)
m4.lookup("ids", "out")
check(m4.vllm_lookups == 1, "the common class keeps its own lookup for GPU storage too")

# ---- storage under names the plug-in does not know: vLLM's lookup stays, the names in the warning ----
m5 = eng.ParallelEngramEmbedding(off[24], 256, sizes)
m5.qweight, m5.qscale = m5.weight, m5.weight_scale_inv
del m5.weight, m5.weight_scale_inv
m5.lookup("ids", "out")
unknown = [x for x in log.messages if "none of the storage attributes" in x]
check(m5.vllm_lookups == 1 and len(FakeLayer.made) == 2 and len(unknown) == 1 and "weight_scale_inv" in unknown[0],
      "unknown storage names: vLLM's lookup, one warning listing the names looked for: %r" % unknown)

# ---- storage that holds no rows (vLLM's Mooncake placement keeps [0, dim] parameters): vLLM's lookup ----
m9 = eng.ParallelEngramEmbedding(off[24], 256, sizes)
m9.weight, m9.weight_scale_inv = eng.NoRows(0, 256), eng.NoRows(0, 8)
m9.lookup("ids", "out")
empty = [x for x in log.messages if "holds no rows" in x]
check(m9.vllm_lookups == 1 and len(FakeLayer.made) == 2 and len(empty) == 1,
      "empty storage: vLLM's lookup, one warning: %r" % empty)

# ---- a shard count that leaves the last rank only padded heads (tp 16: rank 15's columns [30, 32)) ----
ps.TP = ps.GroupCoordinator(rank_in_group=15, world_size=16)
m6 = eng.ParallelEngramEmbedding(off[24], 256, sizes)
check(ev.rank_geometry(m6) == (30, 2, off[24], off[24]), "rank 15 of 16 owns no rows: %r" % (ev.rank_geometry(m6),))
m6.lookup("ids", "out")
check(m6.vllm_lookups == 1 and len(FakeLayer.made) == 2, "a rank without rows keeps vLLM's lookup (its zero rows)")

# ---- a served table, found by the rows of the layer's head_sizes (it keeps no num_embeddings) ----
cli = os.environ.get("EHT_CLI")
if cli:
    with pyutil.vllm_served_key(cli, ev, ps, "vllm-plugin-v4-1"):
        m7 = eng.ParallelEngramEmbedding(3000, 256, [125] * 24)
        del m7.num_embeddings
        m7.lookup("ids", "out", background=True)
        served = FakeLayer.made[-1]
        check(len(FakeLayer.made) == 3 and served.table.rows == 3000 and m7.vllm_lookups == 0,
              "the served table of sum(head_sizes) = 3000 rows: %r" % (served.table.rows,))
        m8 = eng.ParallelEngramEmbedding(3000, 256, [125] * 24)
        del m8.num_embeddings, m8.head_sizes
        check.raises(LookupError, "neither num_embeddings, head_sizes nor table_rows", lambda: m8.lookup("ids", "out"))
        del m7, served

# ---- newer vLLM's NVIDIA Engram: inside a PIECEWISE capture its prefetch's two eager-break methods become the eht layer's two
# halves on the model's stream (nothing breaks a capture); a module whose embedding keeps vLLM's
# lookup keeps vLLM's methods ----
check(nv.Engram.__dict__.get("_eht_patched_prefetch") is True, "the NVIDIA Engram's prefetch patched")
ps.TP = ps.GroupCoordinator(rank_in_group=1, world_size=4)
del nv.BREAKS[:]


class Hash:
    """A [T, 24] hash output's stand-in (its shape is what the plug-in reads)."""

    def __init__(self, T):
        self.shape = (T, 24)


from vllm.compilation import breakable_cudagraph as bcg  # noqa: E402

emb = nv.ParallelEngramEmbedding(off[24], 256, sizes)
mod = nv.Engram(emb)
h7 = Hash(7)
# outside a PIECEWISE capture (eager steps, FULL graphs): vLLM's methods, eht's background call
mod.prepare_embeddings(h7)
mod._ready_rows(7)
split_layer = FakeLayer.made[-1]
check(split_layer.calls == [(h7, "staged", True)] and nv.BREAKS == ["_start_prefetch", "_finish_prefetch"]
      and mod.joins == 1, "outside a breakable capture: vLLM's prefetch: %r" % split_layer.calls)
del split_layer.calls[:], nv.BREAKS[:]
mod.joins = 0
bcg.ACTIVE[0] = True  # a PIECEWISE capture records the step
mod.prepare_embeddings(h7)
rows = mod._ready_rows(7)
check(split_layer.calls == [("start", h7, "staged"), ("wait", "staged")] and rows == "staged"
      and nv.BREAKS == [] and emb.vllm_lookups == 0 and mod.joins == 0,
      "eht's two halves, nothing eager: %r, breaks %r" % (split_layer.calls, nv.BREAKS))
# a batch over the eht layer's max_tokens: vLLM's side stream (its start would hold the model's stream)
split_layer.max_tokens = 4
del split_layer.calls[:]
mod.prepare_embeddings(h7)
mod._ready_rows(7)
check(split_layer.calls == [(h7, "staged", True)] and nv.BREAKS == ["_start_prefetch", "_finish_prefetch"]
      and mod.joins == 1, "over max_tokens: vLLM's prefetch, eht's background call: %r" % split_layer.calls)
del split_layer.max_tokens, nv.BREAKS[:]
mod.joins = 0
bcg.ACTIVE[0] = False
mod._ready_rows(7)  # a join without a start: vLLM's own (it waits for nothing)
check(mod.joins == 1 and nv.BREAKS == ["_finish_prefetch"], "a join without a start is vLLM's: %r" % nv.BREAKS)
made = len(FakeLayer.made)
gpu_mod = nv.Engram(nv.ParallelEngramEmbedding(off[24], 256, sizes, cpu_offload=False))
gpu_mod._prefetch_stream = "forced"  # (a GPU table's module prefetching anyway: its layer keeps vLLM's lookup)
del nv.BREAKS[:]
bcg.ACTIVE[0] = True
gpu_mod.prepare_embeddings(h7)
gpu_mod._ready_rows(7)
check(nv.BREAKS == ["_start_prefetch", "_finish_prefetch"] and gpu_mod.embed_tokens.vllm_lookups == 1
      and gpu_mod.joins == 1 and len(FakeLayer.made) == made,
      "an embedding on vLLM's lookup keeps vLLM's prefetch: %r" % nv.BREAKS)
bcg.ACTIVE[0] = False
check(ev.patch_prefetch(nv.Engram) is False, "patched once")

print("PASS" if check.failures == 0 else "FAIL: %d" % check.failures)
sys.exit(1 if check.failures else 0)
