# SPDX-License-Identifier: Apache-2.0
"""test_python_vllm_plugin_rows.py: eht.vllm on the vLLM trees that shard an Engram table by rows
instead of heads (public forks: a rank owns the contiguous block [shard_start, shard_start +
cdiv(table_rows, tp)) of the table's rows, looks up all 24 columns with ids outside its block giving
zero rows, stores its block from row 0 in mapped host memory whose host views are weight_load_view /
weight_scale_load_view, and calls lookup(indices, out) without a background flag, out its
[max_tokens, 24 * 256] staging). The plug-in takes the block from the layer or its plan, wraps the host
views without a copy, gives the id shift (the last rank's block is padded past the table's end), views
the staging as the call's [T, 24, 256]; and where it cannot serve the layer (storage in GPU memory,
no geometry it knows, a rank without rows) it calls the layer's own lookup as that lookup takes it.
Runs without torch or a GPU (a recording stand-in of eht.torch.EngramLayer)."""
import array
import os
import sys
import types

import pyutil

eht, check = pyutil.engine_fakes_eht()
FakeLayer = pyutil.stand_in_engram_layer()
import eht.vllm as ev  # noqa: E402
from vllm.distributed import parallel_state as ps  # noqa: E402


log = pyutil.log_records()


class DeviceView:
    """A mapped allocation's device view (a CUDA tensor aliasing host memory)."""

    def __init__(self, rows, cols):
        self.shape, self.is_cuda = (rows, cols), True


class Ids:
    def __init__(self, tokens):
        self.shape = (tokens, 24)


class Staging:
    """The layer's [max_tokens, 6144] bf16 staging: records how eht.vllm slices and views it."""

    def __init__(self, max_tokens):
        self.shape, self.ops = (max_tokens, 24 * 256), []

    def dim(self):
        return len(self.shape)

    def __getitem__(self, key):
        self.ops.append(("getitem", key))
        return self

    def view(self, *shape):
        self.ops.append(("view", shape))
        return self


def host(rows, cols):
    return memoryview(bytearray(rows * cols)).cast("B", (rows, cols))


class RowShardedEmbedding:
    """The layer as the row-sharded trees make it: the block on the layer itself (shard_start /
    shard_end / table_rows), or only on its plan (plan_only); table_memory "ram" (mapped host memory),
    "device" (GPU memory) or "disk" (no storage)."""

    def __init__(self, table_rows, tp, rank, table_memory="ram", plan_only=False):
        shard_rows = -(-table_rows // tp)
        block = dict(table_rows=table_rows, shard_start=rank * shard_rows)
        if plan_only:
            self.plan = types.SimpleNamespace(weight_shape=(shard_rows, 256), scale_shape=(shard_rows, 8),
                                              caps=types.SimpleNamespace(tp_size=tp, tp_rank=rank), **block)
        else:
            self.plan = types.SimpleNamespace(caps=types.SimpleNamespace(tp_size=tp, tp_rank=rank))
            self.__dict__.update(block, shard_rows=shard_rows, shard_end=(rank + 1) * shard_rows, tp_size=tp)
        if table_memory == "ram":
            self.weight_load_view, self.weight_scale_load_view = host(shard_rows, 256), host(shard_rows, 8)
            self.weight, self.weight_scale_inv = DeviceView(shard_rows, 256), DeviceView(shard_rows, 8)
        elif table_memory == "device":
            self.weight, self.weight_scale_inv = DeviceView(shard_rows, 256), DeviceView(shard_rows, 8)
        else:
            self.weight = self.weight_scale_inv = None
        self.own_lookups = []

    def lookup(self, indices, out):  # no background flag in these trees
        self.own_lookups.append((indices, out))


class HeadlessEmbedding:
    """A layer with none of the geometry eht.vllm knows (no head range, no row block, no head_sizes)."""

    def __init__(self):
        self.weight, self.weight_scale_inv = host(4, 256), host(4, 8)
        self.own_lookups = 0

    def lookup(self, indices, out):
        self.own_lookups += 1


# The row-sharded class as a tree's platform module holds it, standing alone (no subclass of the common
# module's class): register() patches it too.
platform = types.ModuleType("vllm.models.deepseek_v41.nvidia.engram")
platform.ParallelEngramEmbedding = RowShardedEmbedding
sys.modules[platform.__name__] = platform
os.environ["VLLM_EHT"] = "1"
os.environ.pop("VLLM_EHT_KEY", None)
ps.TP = ps.GroupCoordinator(rank_in_group=0, world_size=1)
check(ev.register() is True and RowShardedEmbedding.__dict__.get("_eht_patched") is True,
      "register() patched the platform module's own Engram class")
ev.patch_class(HeadlessEmbedding)

# ---- the block on the layer: tp 4 rank 1 of a 1,000-row table owns rows [250, 500) ----
m = RowShardedEmbedding(1000, 4, 1)
check(ev.row_shard(m) == (1000, 250, 500) and ev.rank_geometry(m) == (0, 24, 250, 500),
      "the row block from the layer: %r %r" % (ev.row_shard(m), ev.rank_geometry(m)))
m.weight_load_view[5, 0] = 0x42
m.weight_scale_load_view[5, 7] = 0x7e
ids, staging = Ids(7), Staging(64)
got_out = m.lookup(ids, staging)
check(len(FakeLayer.made) == 1 and m.own_lookups == [], "the first lookup made the eht layer; the layer's own did not run")
layer = FakeLayer.made[0]
check(layer.kw.get("head_start") == 0 and layer.kw.get("part") == 24 and layer.kw.get("vocab_start") == 250
      and layer.kw.get("vocab_end") == 500 and layer.kw.get("id_shift") == -250,
      "every column, the block's rows, its shift: %r" % layer.kw)
t = layer.table
check(t.rows == 250 and t.row_bytes == 264, "the host views wrapped: %d rows of %d" % (t.rows, t.row_bytes))
row = bytearray(264)
t.lookup(array.array("q", [5]), row, strategy="host")
check(row[0] == 0x42 and row[256 + 7] == 0x7e, "no copy: the host view's bytes read through eht (the block's row 5)")
check(layer.calls == [(ids, staging, False)] and staging.ops == [("getitem", slice(None, 7)), ("view", (7, -1, 256))],
      "the staging viewed as the call's [T, 24, 256], inline: %r %r" % (layer.calls, staging.ops))
check(got_out is staging, "lookup returns the out it was given")

# ---- the last rank's block, padded past the table's end: tp 4 rank 3 of 998 rows ----
m2 = RowShardedEmbedding(998, 4, 3)
m2.lookup(Ids(1), Staging(8))
k2 = FakeLayer.made[-1].kw
check(len(FakeLayer.made) == 2 and (k2.get("vocab_start"), k2.get("vocab_end"), k2.get("id_shift")) == (750, 998, -750)
      and FakeLayer.made[-1].table.rows == 250, "the last rank: rows [750, 998) of its 250 stored: %r" % k2)

# ---- the block only on the plan (its weight_shape gives the block's size): tp 2 rank 1 ----
m3 = RowShardedEmbedding(1001, 2, 1, plan_only=True)
check(ev.rank_geometry(m3) == (0, 24, 501, 1001), "the row block from the plan: %r" % (ev.rank_geometry(m3),))
m3.lookup(Ids(2), Staging(8))
check(len(FakeLayer.made) == 3 and FakeLayer.made[-1].kw.get("id_shift") == -501, "the plan's block served")

# ---- storage in GPU memory, or none (disk): the layer's own lookup, called as it takes it ----
for memory in ("device", "disk"):
    m4 = RowShardedEmbedding(1000, 4, 0, table_memory=memory)
    ids4, out4 = Ids(3), Staging(8)
    m4.lookup(ids4, out4)
    m4.lookup(ids4, out4, background=True)
    check(m4.own_lookups == [(ids4, out4)] * 2 and len(FakeLayer.made) == 3,
          "%s storage: the layer's own lookup(indices, out) ran: %r" % (memory, m4.own_lookups))
check(any("GPU memory" in x for x in log.messages), "GPU storage warned: %r" % log.messages)

# ---- a rank whose block starts past the table's end owns no rows: its own lookup (zero rows) ----
m5 = RowShardedEmbedding(10, 8, 7)
check(ev.rank_geometry(m5) == (0, 24, 10, 10), "rank 7 of 8 over 10 rows owns none: %r" % (ev.rank_geometry(m5),))
m5.lookup(Ids(1), Staging(8))
check(len(m5.own_lookups) == 1 and len(FakeLayer.made) == 3, "a rank without rows keeps its own lookup")

# ---- no geometry eht.vllm knows: a warning and the layer's own lookup, not a guess or a crash ----
m6 = HeadlessEmbedding()
m6.lookup(Ids(1), Staging(8))
nogeo = [x for x in log.messages if "row shard" in x]
check(m6.own_lookups == 1 and len(FakeLayer.made) == 3 and len(nogeo) == 1,
      "no geometry: its own lookup, one warning naming what was looked for: %r" % nogeo)

# ---- a served table, found by table_rows ----
cli = os.environ.get("EHT_CLI")
if cli:
    with pyutil.vllm_served_key(cli, ev, ps, "vllm-plugin-rows"):
        m7 = RowShardedEmbedding(3000, 2, 1, table_memory="disk")
        m7.lookup(Ids(1), Staging(8))
        served = FakeLayer.made[-1]
        check(len(FakeLayer.made) == 4 and served.table.rows == 3000 and "id_shift" not in served.kw
              and served.kw.get("vocab_start") == 1500 and m7.own_lookups == [],
              "the served table of table_rows = 3000, ids unshifted: %r" % (served.kw,))

print("PASS" if check.failures == 0 else "FAIL: %d" % check.failures)
sys.exit(1 if check.failures else 0)
