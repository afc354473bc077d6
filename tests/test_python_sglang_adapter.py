# SPDX-License-Identifier: Apache-2.0
"""test_python_sglang_adapter.py: eht.sglang, the SGLang Engram adapter, against a small fake of SGLang's
EngramEmbedding (tests/fakes/sglang: constructor, attributes, forward, _owned_rows, finish_load, the
host-table layouts, prefetch) and a recording stand-in of eht.torch.EngramLayer (torch is not needed):
the stub declares the module; SGLANG_EHT unset patches nothing; SGLANG_EHT=1 patches at the module's
import (the import hook) or at once; SGLang's shared layout becomes one eht lookup of every row with no
collective, its private layout's gather goes through eht with SGLang's all-reduce kept, a device table
keeps SGLang's lookup; lookups inside SGLang's prefetch run in the background, the others inline; the
storage wrapped without a copy (a write into SGLang's buffer shows in eht's rows); DP-idle row-0 ids and
empty batches; a served table found by its rows (SGLANG_EHT_KEY with `eht serve`). Runs without torch
or a GPU."""
import array
import ast
import inspect
import os
import sys
import types

import pyutil

eht, check = pyutil.engine_fakes_eht()


# ---- a stand-in EngramLayer that records its calls ----
FakeLayer = pyutil.stand_in_engram_layer()
import eht.sglang as es  # noqa: E402

# ---- the stub declares the module's public names, with the same parameters ----
with open(os.path.join(os.path.dirname(es.__file__), "sglang.pyi"), encoding="utf-8") as f:
    stub = {}
    for node in ast.parse(f.read()).body:
        if isinstance(node, ast.FunctionDef):
            stub[node.name] = [a.arg for a in node.args.args]
        elif isinstance(node, ast.AnnAssign):
            stub[node.target.id] = None
public = {}
for name, obj in vars(es).items():
    if name.startswith("_"):
        continue
    if inspect.isfunction(obj) and obj.__module__ == es.__name__:
        public[name] = list(inspect.signature(obj).parameters)
    elif name.isupper():
        public[name] = None
check(stub == public, "sglang.pyi declares the module as it is: stub %r, module %r" % (stub, public))

eng_name = es.ENGRAM_MODULE
FakeTensor = None


def ids(t):
    return FakeTensor((t, 24))


# ---- off: nothing patched, no import hook ----
os.environ.pop("SGLANG_EHT", None)
os.environ.pop("SGLANG_EHT_KEY", None)
hooks = list(sys.meta_path)
check(es.register() is False and sys.meta_path == hooks and eng_name not in sys.modules, "SGLANG_EHT unset: nothing")
check(es.enabled({"SGLANG_EHT": "on"}) and not es.enabled({"SGLANG_EHT": "0"}) and not es.enabled({}), "enabled()")

# ---- on, before SGLang's module is imported: patched at its import ----
os.environ["SGLANG_EHT"] = "1"
check(es.register() is True and eng_name not in sys.modules, "SGLANG_EHT=1: set to patch, SGLang not imported")
check(es.register() is True and len(sys.meta_path) == len(hooks) + 1, "one import hook however often registered")
import sglang.srt.layers.engram as eng  # noqa: E402

FakeTensor = eng.FakeTensor
Emb = eng.EngramEmbedding
check(getattr(Emb, "_eht_sglang_patched", False) and sys.meta_path == hooks,
      "patched at the import, the hook removed after")
patched = (Emb.forward, Emb._owned_rows, Emb.finish_load, Emb.prefetch)
check(es.register() is True and (Emb.forward, Emb._owned_rows, Emb.finish_load, Emb.prefetch) == patched,
      "a second registration (SGLang imported) patches once")


def one_layer():
    check(len(FakeLayer.made) == 1, "one eht layer made: %d" % len(FakeLayer.made))
    layer = FakeLayer.made.pop() if FakeLayer.made else FakeLayer(None)
    return layer


# ---- SGLang's shared host layout, tp 4 rank 1: every row on each rank, one eht lookup, no collective ----
os.environ["SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE"] = "1"
os.environ["SGLANG_DSV41_ENGRAM_HOST_TABLE_LAYOUT"] = "shared"
eng.PARALLEL.update(tp_size=4, tp_rank=1)
m = Emb(3000, 256, 1)
m.weight[0, 0] = 0x11
m.weight[5, 0] = 0x42
m.scale[5, 3] = 0x7f
check(not FakeLayer.made, "no eht layer before the weights are loaded")
m.finish_load("layer 1")
layer = one_layer()
check(layer.kw == dict(head_start=0, part=24, n_heads=24, vocab_start=0, vocab_end=3000, format="bf16",
                      device=es._vllm._device()),
      "shared: all 24 columns of every row: %r" % layer.kw)
t = layer.table
check(t.rows == 3000 and t.row_bytes == 264, "SGLang's storage as a split table: %d rows of %d" % (t.rows, t.row_bytes))
check(t.name == "sglang-engram-3000", "the table is named after SGLang, not vLLM: %r" % t.name)
got = bytearray(264)
t.lookup(array.array("q", [5]), got, strategy="host")
check(got[0] == 0x42 and got[256 + 3] == 0x7f, "no copy: SGLang's bytes read through eht (weights, then scales)")
t.lookup(array.array("q", [0]), got, strategy="host")
check(got[0] == 0x11, "row 0 (SGLang's DP-idle dummy tokens hash to it) is a live row of the table")
x = ids(7)
out = m(x, None, cp_all_tokens=True)
check(out.shape == (7, 24, 256) and layer.calls == [(x, out, False)], "shared: forward is eht's inline lookup: %r"
      % layer.calls)
check(m.sglang == {"gather": 0, "all_reduce": 0, "dp_gather": 0}, "SGLang's gather and collectives not run: %r"
      % m.sglang)
pre = m.prefetch(ids(3))
check(pre.shape == (3, 24, 256) and len(layer.calls) == 2 and layer.calls[1][2] is True,
      "inside SGLang's prefetch (its side stream) eht's background way: %r" % layer.calls[1:])
m(ids(2))
check(layer.calls[2][2] is False, "after the prefetch, inline again")
empty = m(ids(0))
check(empty.shape == (0, 24, 256) and len(layer.calls) == 3, "an empty batch: SGLang's empty output, no lookup")
odd = m(FakeTensor((4,)))
check(len(layer.calls) == 3 and m.sglang["gather"] == 1 and odd.shape == (4, 256),
      "indices that are not [T, H]: SGLang's own lookup")
check(m._eht_layer is layer and m._eht_table is t and m.num_embeddings == 3000, "the layer and its table kept")

# ---- SGLang's private host layout, tp 4 rank 1: the rank's rows through eht, SGLang's all-reduce kept ----
os.environ["SGLANG_DSV41_ENGRAM_HOST_TABLE_LAYOUT"] = "private"
p = Emb(3001, 256, 14)
check(p.row_start == 750 and p.rows == 750, "SGLang's equal row split: [%d, +%d)" % (p.row_start, p.rows))
p.weight[0, 0] = 0x33
x = ids(5)
out = p(x)  # no finish_load: the layer comes at the first lookup
layer = one_layer()
check(layer.kw["vocab_start"] == 750 and layer.kw["vocab_end"] == 1500 and layer.kw["part"] == 24,
      "private: the rank's rows [750, 1500) of all columns: %r" % layer.kw)
check(layer.table.rows == 750, "the rank's own storage: %d rows" % layer.table.rows)
layer.table.lookup(array.array("q", [0]), got, strategy="host")
check(got[0] == 0x33, "no copy: the shard's first row is global row 750")
check(out.shape == (5, 24, 256) and layer.calls == [(x, out, False)], "the gather is eht's: %r" % layer.calls)
check(p.sglang == {"gather": 0, "all_reduce": 1, "dp_gather": 0}, "SGLang's all-reduce sums the shards: %r" % p.sglang)
p(ids(4), types.SimpleNamespace(dp_attention=True))
check(len(layer.calls) == 2 and p.sglang == {"gather": 0, "all_reduce": 2, "dp_gather": 1},
      "DP attention: SGLang's id gather and all-reduce around eht's gather: %r" % p.sglang)
eng.PARALLEL.update(tp_size=4, tp_rank=0)
z = Emb(2, 256, 1)
z(ids(3))
check(z.rows == 0 and not FakeLayer.made and z.sglang["gather"] == 1, "a rank without rows: SGLang's zero rows")

# ---- a table in device memory (SGLang's default): SGLang's lookup stays ----
os.environ.pop("SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE")
eng.PARALLEL.update(tp_size=2, tp_rank=1)
d = Emb(3000, 256, 1)
d.finish_load()
d(ids(3))
check(not FakeLayer.made and d.sglang == {"gather": 1, "all_reduce": 1, "dp_gather": 0} and d._eht_mode is None,
      "device table without SGLANG_EHT_KEY: SGLang's own lookup: %r" % d.sglang)

# ---- a served table, found by its rows: every row on each rank, no collective ----
cli = os.environ.get("EHT_CLI")
if cli:
    key = "sglang-adapter-%d" % os.getpid()
    with pyutil.serve_synth(cli, key, 3000):
        os.environ["SGLANG_EHT_KEY"] = key
        s = Emb(3000, 256, 1)
        x = ids(6)
        out = s(x, types.SimpleNamespace(dp_attention=True))
        layer = one_layer()
        check(layer.table.rows == 3000 and layer.table.tier != "memory", "the served table of 3000 rows: %r %s"
              % (layer.table.rows, layer.table.tier))
        check(layer.kw["vocab_start"] == 0 and layer.kw["vocab_end"] == 3000 and layer.calls == [(x, out, False)],
              "served: all rows, eht's lookup: %r" % layer.kw)
        check(s.sglang == {"gather": 0, "all_reduce": 0, "dp_gather": 0}, "no collective: %r" % s.sglang)
        s2 = Emb(2999, 256, 1)
        check.raises(LookupError, "eht.sglang: no table of 2999 rows", lambda: s2(ids(1)))
        es._vllm._clients.clear()
        del s, layer
        os.environ.pop("SGLANG_EHT_KEY")
print("PASS" if check.failures == 0 else "FAIL: %d" % check.failures)
sys.exit(1 if check.failures else 0)
