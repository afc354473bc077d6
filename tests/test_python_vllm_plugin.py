# SPDX-License-Identifier: Apache-2.0
"""test_python_vllm_plugin.py: eht.vllm, the vLLM general plug-in, against small fakes of the vLLM
classes and attributes ENGRAM.md lists (tests/fakes/vllm) and a recording stand-in of
eht.torch.EngramLayer (torch is not needed): the entry point in pyproject.toml and in the wheel's
metadata; VLLM_EHT unset patches nothing; VLLM_EHT=1 routes ParallelEngramEmbedding.lookup to one eht
layer per module with the per-call background flag passed through, makes it after load_weights, raises
vLLM's inline thresholds; the rank geometry (vLLM's rule, refused shard counts); vLLM's own storage
wrapped in the split layout (no copy: a write into vLLM's buffer shows in eht's rows); a served table
found by its rows (VLLM_EHT_KEY with `eht serve`). Runs without torch or a GPU."""
import array
import importlib
import os
import sys

import pyutil

HERE = os.path.dirname(os.path.abspath(__file__))
eht, check = pyutil.engine_fakes_eht()
src = os.environ.get("EHT_SOURCE_DIR", os.path.join(HERE, ".."))

# ---- the entry point: pyproject.toml, and the wheel's entry_points.txt as eht_build writes it ----
sys.path.insert(0, os.path.join(src, "python"))
import eht_build  # noqa: E402

eps = eht_build._project().get("entry-points", {})
check(eps.get("vllm.general_plugins", {}).get("eht") == "eht.vllm:register", "entry point: %r" % eps)


# ---- a stand-in EngramLayer that records its calls ----
FakeLayer = pyutil.stand_in_engram_layer()
import eht.vllm as ev  # noqa: E402
from vllm.distributed import parallel_state as ps  # noqa: E402

eng = importlib.import_module("vllm.models.deepseek_v41.common.engram")
orig_lookup = eng.ParallelEngramEmbedding.lookup

# ---- off: nothing patched ----
os.environ.pop("VLLM_EHT", None)
check(ev.register() is False and eng.ParallelEngramEmbedding.lookup is orig_lookup, "VLLM_EHT unset: nothing patched")
check(eng.INLINE_LOOKUP_THRESHOLD == 4096, "VLLM_EHT unset: vLLM's threshold stays")

# ---- the rank geometry (vLLM's rule) ----
sizes = [100 + i for i in range(24)]
off = [sum(sizes[:i]) for i in range(25)]
m = eng.ParallelEngramEmbedding(off[24], 256, sizes)
for tp, rank in ((1, 0), (4, 1), (3, 2), (8, 7), (6, 5)):
    part = -(-24 // tp)
    want = (rank * part, part, off[rank * part], off[min(24, rank * part + part)])
    check(ev.rank_geometry(m, tp, rank) == want, "tp %d rank %d: %r" % (tp, rank, ev.rank_geometry(m, tp, rank)))
for tp in (7, 9, 10, 11, 13):
    try:
        ev.rank_geometry(m, tp, 0)
        check(False, "tp %d accepted" % tp)
    except ValueError as e:
        check("shards" in str(e), "tp %d refused naming the shards: %s" % (tp, e))

# ---- on: vLLM's own storage, tp 4 rank 1 ----
os.environ["VLLM_EHT"] = "1"
os.environ.pop("VLLM_EHT_KEY", None)
ps.TP = ps.GroupCoordinator(rank_in_group=1, world_size=4)
check(ev.register() is True, "VLLM_EHT=1: patched")
check(eng.INLINE_LOOKUP_THRESHOLD >= 1 << 60 and eng.NvidiaParallelEngramEmbedding.INLINE_THRESHOLD_TOKENS >= 1 << 60,
      "vLLM's inline thresholds raised: every batch prefetched")
ev.register()  # a second registration (another process of the same interpreter) patches once
m = eng.ParallelEngramEmbedding(off[24], 256, sizes)
m.weight[5, 0] = 0x42
m.scale[5, 3] = 0x7f
m.load_weights(["w"])
# vLLM's lookup takes packed (newer trees): its packed calls' layer (raw rows) is made there too
check(m.loaded == 1 and len(FakeLayer.made) == 2, "load_weights ran vLLM's loader, then made the eht layers")
layer, raw = FakeLayer.made[0], FakeLayer.made[-1]
check(layer.kw.get("format") == "bf16" and raw.kw.get("format") == "raw" and raw.table is layer.table
      and {k: v for k, v in raw.kw.items() if k != "format"} == {k: v for k, v in layer.kw.items() if k != "format"},
      "the packed calls' layer: raw rows, the same table and geometry: %r / %r" % (layer.kw, raw.kw))
check(layer.kw.get("head_start") == 6 and layer.kw.get("part") == 6 and layer.kw.get("vocab_start") == off[6]
      and layer.kw.get("vocab_end") == off[12], "tp 4 rank 1's geometry: %r" % layer.kw)
t = layer.table
check(t.rows == off[24] and t.row_bytes == 264, "vLLM's storage as a split table: %d rows of %d" % (t.rows, t.row_bytes))
got = bytearray(264)
t.lookup(array.array("q", [5]), got, strategy="host")
check(got[0] == 0x42 and got[256 + 3] == 0x7f, "no copy: vLLM's bytes read through eht (weights, then scales)")
for bg in (False, True):
    m.lookup("ids", "out", background=bg)
check([c[2] for c in layer.calls] == [False, True], "the per-call background flag passed through: %r" % layer.calls)
check(m.vllm_lookups == 0, "vLLM's own lookup is not called")
for bg in (True, False):
    m.lookup("ids", "packed-out", background=bg, packed=True)
check(raw.calls == [("ids", "packed-out", True), ("ids", "packed-out", False)] and len(layer.calls) == 2
      and m.vllm_lookups == 0, "packed calls go to the raw layer, background passed: %r" % raw.calls)


class Out:  # a staging tensor: records how eht.vllm slices it
    def __init__(self, *shape):
        self.shape, self.ops = shape, []

    def dim(self):
        return len(self.shape)

    def __getitem__(self, key):
        self.ops.append(key)
        return Out(len(range(*key.indices(self.shape[0]))), *self.shape[1:])


class Ids:
    shape = (7, 24)


whole, exact = Out(64, 6, 256), Out(7, 6, 256)
m.lookup(Ids, whole, background=True)       # forks that pass their whole staging (vLLM's kernel writes T rows)
m.lookup(Ids, exact, background=True)
check(whole.ops == [slice(None, 7)] and layer.calls[-2][1].shape == (7, 6, 256) and layer.calls[-1][1] is exact
      and exact.ops == [], "a staging of more tokens than the call's: its first T rows; T rows: as given")
packed_whole = Out(64, 6, 264)
m.lookup(Ids, packed_whole, packed=True)
check(packed_whole.ops == [slice(None, 7)] and raw.calls[-1][1].shape == (7, 6, 264), "the same for packed calls")
del layer.calls[-2:], raw.calls[-1:]
log = pyutil.log_records()
for _ in range(2):
    m.lookup("ids", "out", background=True, future_flag=1)
check(m.vllm_lookups == 2 and m.vllm_args == (True, False, {"future_flag": 1}) and len(layer.calls) == 2,
      "an argument eht does not know: vLLM's lookup, with its arguments: %r" % (m.vllm_args,))
check(sum("future_flag" in x for x in log.messages) == 1, "said once: %r" % log.messages)
made = len(FakeLayer.made)
m2 = eng.NvidiaParallelEngramEmbedding(off[24], 256, sizes)
m2.lookup("ids", "out")
check(len(FakeLayer.made) == made + 1 and FakeLayer.made[-1].calls and FakeLayer.made[-1].kw["format"] == "bf16",
      "a layer without load_weights gets its eht layer at the first lookup")
m2.lookup("ids", "packed-out", packed=True)
check(len(FakeLayer.made) == made + 2 and FakeLayer.made[-1].kw["format"] == "raw" and FakeLayer.made[-1].calls,
      "... and its packed calls' layer at the first packed call")

# ---- newer vLLM: no load_weights on the layer; its eht layers made when vLLM's loader finishes ----
from vllm.model_executor.model_loader import base_loader, utils as loader_utils  # noqa: E402


class Model:  # the loaded model: an nn.Module's modules()
    def __init__(self, *mods):
        self.mods = mods

    def modules(self):
        return iter((self,) + self.mods)


check(getattr(base_loader.process_weights_after_loading, "_eht_patched", False)
      and getattr(loader_utils.process_weights_after_loading, "_eht_patched", False),
      "both bindings of vLLM's process_weights_after_loading followed")
made = len(FakeLayer.made)
m5 = eng.ParallelEngramEmbedding(off[24], 256, sizes)   # loaded through per-parameter loaders: no load_weights
m6 = eng.ParallelEngramEmbedding(off[24], 256, sizes)
m6.weight = None                                         # storage eht cannot read: left to vLLM, loading goes on
model = Model(m5, m6, m)                                 # m's layers exist already
base_loader.load_model(model)
check(model.processed == 1 and len(FakeLayer.made) == made + 2 and FakeLayer.made[-2].kw["format"] == "bf16"
      and FakeLayer.made[-1].kw["format"] == "raw" and m5._eht_layer is FakeLayer.made[-2]
      and m5._eht_layer_raw is FakeLayer.made[-1], "loaded: m5's two layers made, m's not again: %d" % len(FakeLayer.made))
m6.lookup("ids", "out")
check(m6._eht_layer is ev._VLLMS and m6.vllm_lookups == 1, "m6 keeps vLLM's lookup")
ev.register()
loader_utils.process_weights_after_loading(model, None, None)
check(model.processed == 2 and len(FakeLayer.made) == made + 2, "registered twice: followed once, nothing made twice")


class Broken(eng.ParallelEngramEmbedding):  # storage whose wrap fails: the first lookup tries again
    pass


ev.patch_class(Broken)
b = Broken(off[24], 256, sizes)
b.weight = "not a buffer"
base_loader.load_model(Model(b))
check(getattr(b, "_eht_layer", None) is None, "a layer that could not be made after loading: left to its first lookup")

# ---- a served table, found by its rows ----
cli = os.environ.get("EHT_CLI")
if cli:
    with pyutil.vllm_served_key(cli, ev, ps, "vllm-plugin"):
        m3 = eng.ParallelEngramEmbedding(3000, 256, [125] * 24)
        m3.lookup("ids", "out", background=True)
        served = FakeLayer.made[-1]
        check(served.table.rows == 3000 and served.table.tier != "memory", "the served table of 3000 rows: %r %s"
              % (served.table.rows, served.table.tier))
        m4 = eng.ParallelEngramEmbedding(2999, 256, [125] * 24)
        try:
            m4.lookup("ids", "out")
            check(False, "a layer whose rows no served table has")
        except LookupError as e:
            check("3000" in str(e) or "rows" in str(e), "no table of those rows: %s" % e)
        del m3, served
print("PASS" if check.failures == 0 else "FAIL: %d" % check.failures)
sys.exit(1 if check.failures else 0)
