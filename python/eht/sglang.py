# SPDX-License-Identifier: Apache-2.0
"""eht.sglang: makes SGLang's DeepSeek-V4.1 Engram layers look their rows up through eht. Off unless
SGLANG_EHT=1; then register() patches `EngramEmbedding` (module sglang.srt.layers.engram) in the process
that calls it: at once when SGLang's module is already imported, else when it is (an import hook), so
a sitecustomize.py can call it without importing torch or SGLang early. SGLang has no general plug-in
hook like vLLM's: register() must run in every SGLang process that builds the model (docs/SGLANG.md).

SGLang's layer (read in sgl-project/sglang 4be612a4, python/sglang/srt/layers/engram.py):
`EngramEmbedding(num_embeddings, dim, layer_id)`, called as `forward(indices, forward_batch=None, *,
cp_all_tokens=False)` -> bf16 [*indices.shape, dim]; indices are the layer's [T, 24] slice of the hash
output. Its rows are split over TP by equal row counts (row_start = num_embeddings * rank // tp), not
by head ranges; every rank looks up all 24 columns, zeroes the rows it does not hold, and an all-reduce
sums. With SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=1 the table lives in host memory, weights [n, 256]
then scales [n, 8] in one buffer (`host_table`), laid out as SGLANG_DSV41_ENGRAM_HOST_TABLE_LAYOUT says:
"shared" (one memfd with every row, mapped by each TP rank, no all-reduce) or "private" (each rank's
own rows in anonymous THP memory, all-reduce kept). What the adapter swaps:
- a full table on every rank (SGLang's shared layout, or SGLANG_EHT_KEY=K: the table `eht serve --key K`
  hosts on the node, found by its rows): `forward` is one eht lookup of all 24 columns and every row,
  with no collective, as SGLang's shared layout does;
- SGLang's private layout: `_owned_rows` (the rank's gather, ids outside [row_start, row_start + rows)
  giving zero rows) goes through eht; SGLang's all-reduce, DP and CP gathers stay;
- a table in device memory (SGLang's default) without SGLANG_EHT_KEY: SGLang's own lookup stays.
SGLang's own storage is wrapped without a copy (eht.vllm's helper: the split layout). The eht layer is
made after SGLang's `finish_load` (every rank's rows written), or at the first lookup.
Placement: SGLang has no per-call background flag. Lookups made inside the layer's `prefetch` (newer
SGLang, SGLANG_ENABLE_DSV41_ENGRAM_EMBED_PREFETCH: rows gathered on a side stream beside the model)
run eht's background way; every other lookup runs inline (background=False) where SGLang places it.
The ids SGLang's hasher gives DP-idle dummy tokens (row 0) are passed as they are: row 0 is a live row.
"""
from __future__ import annotations

import importlib
import importlib.abc
import logging
import os
import sys
import threading
from types import ModuleType
from typing import Any, Mapping, Optional

from eht import vllm as _vllm  # the storage, served-table and device helpers are shared

_log = logging.getLogger("eht")

ENGRAM_MODULE = "sglang.srt.layers.engram"
ENGRAM_CLASS = "EngramEmbedding"
ENV = "SGLANG_EHT"
KEY_ENV = "SGLANG_EHT_KEY"
N_COLS = _vllm.N_COLS  # 8 heads x 3 n-gram orders per Engram layer
FULL, SHARD = "full", "shard"
_PATCHED = "_eht_sglang_patched"
_FULL_LAYOUTS = ("shared", "numa_shared")  # every row on each rank, no all-reduce
_SHARD_LAYOUTS = ("private", "per_rank")  # the rank's own rows, SGLang's all-reduce sums
_state = threading.local()  # depth of `prefetch` calls on this thread: lookups inside run in the background


def enabled(env: Optional[Mapping[str, str]] = None) -> bool:
    """Whether SGLANG_EHT turns the adapter on ("1", "true", "yes", "on")."""
    return _vllm._switch_on(ENV, env)


def register(lazy: bool = True) -> bool:
    """Patches SGLang's Engram layer class when SGLANG_EHT=1. With SGLang's module imported already (or
    lazy=False) the class is patched now; else at the module's import. Returns whether it patched or is
    set to patch (False: off, or lazy=False and this SGLang has no Engram layer)."""
    if not enabled():
        return False
    mod = sys.modules.get(ENGRAM_MODULE)
    if mod is not None:
        return patch_module(mod)
    if lazy:
        if not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
            sys.meta_path.insert(0, _PatchOnImport())
        _log.info("eht.sglang: %s will look up through eht once %s is imported", ENGRAM_CLASS, ENGRAM_MODULE)
        return True
    try:
        mod = importlib.import_module(ENGRAM_MODULE)
    except ImportError as e:
        _log.warning("eht.sglang: %s=1 but %s cannot be imported (%s): Engram lookups stay SGLang's", ENV,
                     ENGRAM_MODULE, e)
        return False
    return patch_module(mod)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds SGLang's Engram module through the other finders and patches it once it has run."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != ENGRAM_MODULE:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _PatchingLoader(spec.loader, self)
        return spec


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, inner: Any, finder: _PatchOnImport) -> None:
        self._inner, self._finder = inner, finder

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        patch_module(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_code, ... as the real loader has them
        if name in ("_inner", "_finder"):
            raise AttributeError(name)
        return getattr(self._inner, name)


def patch_module(mod: ModuleType) -> bool:
    """Patches the Engram layer class of SGLang's module. Returns whether it did (or had)."""
    cls = getattr(mod, ENGRAM_CLASS, None)
    if cls is None:
        _log.warning("eht.sglang: %s has no %s: Engram lookups stay SGLang's", mod.__name__, ENGRAM_CLASS)
        return False
    if not patch_class(cls):
        return False
    key = os.environ.get(KEY_ENV)
    _log.info("eht.sglang: %s.%s looks up through eht (%s)", mod.__name__, ENGRAM_CLASS,
              "served key %s" % key if key else "SGLang's host tables")
    return True


def patch_class(cls: type) -> bool:
    """Routes cls's lookups through eht (see the module's docstring). Returns False, patching nothing,
    when cls lacks `forward` or `_empty` (a layer this adapter does not know)."""
    if getattr(cls, _PATCHED, False):
        return True
    missing = [n for n in ("forward", "_empty") if not callable(getattr(cls, n, None))]
    if missing:
        _log.warning("eht.sglang: %s has no %s: Engram lookups stay SGLang's", cls.__name__, ", ".join(missing))
        return False
    orig_init, orig_forward = cls.__init__, cls.forward

    def __init__(self: Any, num_embeddings: int, *args: Any, **kwargs: Any) -> None:
        orig_init(self, num_embeddings, *args, **kwargs)
        if not isinstance(getattr(self, "num_embeddings", None), int):
            self.num_embeddings = int(num_embeddings)  # the served table is found by it

    def forward(self: Any, indices: Any, forward_batch: Any = None, *args: Any, **kwargs: Any) -> Any:
        layer = make_layer(self)
        if layer is None or self._eht_mode != FULL or indices.dim() != 2:
            return orig_forward(self, indices, forward_batch, *args, **kwargs)
        return _lookup(self, layer, indices, self._empty(indices))

    cls.__init__, cls.forward = __init__, forward
    _wrap_optional(cls)
    setattr(cls, _PATCHED, True)
    return True


def _wrap_optional(cls: type) -> None:
    """The methods a given SGLang has or lacks: _owned_rows (the private layout's gather), finish_load
    (after loading), prefetch and _gather_shared_into (newer SGLang's side-stream prefetch)."""
    orig_owned = getattr(cls, "_owned_rows", None)
    if callable(orig_owned):
        def _owned_rows(self: Any, indices: Any) -> Any:
            layer = make_layer(self)
            if layer is None or self._eht_mode != SHARD or indices.dim() != 2:
                return orig_owned(self, indices)
            return _lookup(self, layer, indices, self._empty(indices))

        cls._owned_rows = _owned_rows
    orig_finish = getattr(cls, "finish_load", None)
    if callable(orig_finish):
        def finish_load(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = orig_finish(self, *args, **kwargs)
            make_layer(self)  # every rank's rows are written (SGLang's barrier for the shared layout)
            return result

        cls.finish_load = finish_load
    orig_prefetch = getattr(cls, "prefetch", None)
    if callable(orig_prefetch):
        def prefetch(self: Any, *args: Any, **kwargs: Any) -> Any:
            _state.depth = getattr(_state, "depth", 0) + 1
            try:
                return orig_prefetch(self, *args, **kwargs)
            finally:
                _state.depth -= 1

        cls.prefetch = prefetch
    orig_into = getattr(cls, "_gather_shared_into", None)
    if callable(orig_into):
        def _gather_shared_into(self: Any, ids: Any, out: Any, *args: Any, **kwargs: Any) -> Any:
            layer = make_layer(self)
            if (layer is None or self._eht_mode != FULL or args or kwargs or ids.dim() != 2
                    or tuple(out.shape[:2]) != tuple(ids.shape)):
                return orig_into(self, ids, out, *args, **kwargs)
            return _lookup(self, layer, ids, out)

        cls._gather_shared_into = _gather_shared_into


def _background() -> bool:
    return getattr(_state, "depth", 0) > 0


def _lookup(module: Any, layer: Any, indices: Any, out: Any) -> Any:
    if indices.shape[0]:
        layer.lookup(indices, out, background=_background())
    return out


def storage_mode(module: Any) -> Optional[str]:
    """"full" (a table of every row on this rank: SGLANG_EHT_KEY, or SGLang's shared host layout),
    "shard" (SGLang's private host layout: the rank's rows) or None (SGLang's lookup stays)."""
    if os.environ.get(KEY_ENV):
        return FULL
    host = getattr(module, "host_table", None)
    if host is None:
        _vllm._warn_once("device", "eht.sglang: an Engram table in device memory and no %s: SGLang's lookup "
                         "stays (SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=1 keeps it in host memory; or serve it "
                         "with `eht serve`)" % KEY_ENV)
        return None
    shared = getattr(module, "_shared", None)
    layout = getattr(host, "layout", None)
    if shared is True or layout in _FULL_LAYOUTS:
        return FULL
    if layout in _SHARD_LAYOUTS:
        return SHARD
    _vllm._warn_once("layout " + str(layout), "eht.sglang: SGLang's host-table layout %r is not one this "
                     "adapter knows: SGLang's lookup stays" % (layout,))
    return None


def _num_embeddings(module: Any) -> int:
    n = getattr(module, "num_embeddings", None)
    if isinstance(n, int):
        return n
    host = getattr(module, "host_table", None)
    if host is not None and getattr(host, "layout", None) in _FULL_LAYOUTS:
        return int(module.weight.shape[0])
    raise LookupError("eht.sglang: the Engram layer's row count is unknown (made before eht.sglang.register())")


def make_layer(module: Any) -> Any:
    """The eht.torch.EngramLayer of one SGLang Engram layer and rank (made once, kept on the module), or
    None where SGLang's lookup stays."""
    layer = getattr(module, "_eht_layer", None)
    if layer is not None or getattr(module, "_eht_mode", False) is None:
        return layer
    mode = storage_mode(module)
    if mode == SHARD and int(module.rows) == 0:
        mode = None  # a rank past the table's last row: SGLang's zero rows
    if mode is None:
        module._eht_mode = None
        return None
    from eht import torch as et  # noqa: PLC0415 (needs torch)
    key = os.environ.get(KEY_ENV)
    if mode == FULL:
        module.num_embeddings = _num_embeddings(module)
        vs, ve = 0, module.num_embeddings
    else:
        vs = int(module.row_start)
        ve = vs + int(module.rows)
    table = _vllm._served_table(module, key, "eht.sglang") if key else _vllm._own_table(module, "eht.sglang")
    if not key and table.rows != ve - vs:
        raise LookupError("eht.sglang: SGLang's storage holds %d rows, the rank's rows are [%d, %d)"
                          % (table.rows, vs, ve))
    layer = et.EngramLayer(table, head_start=0, part=N_COLS, n_heads=N_COLS, vocab_start=vs, vocab_end=ve,
                           format="bf16", device=_vllm._device())
    module._eht_layer, module._eht_table, module._eht_mode = layer, table, mode  # the table outlives the layer
    _log.info("eht.sglang: Engram layer of %d rows: rows [%d, %d) of all %d columns, %s, from %s", table.rows,
              vs, ve, N_COLS, "no all-reduce" if mode == FULL else "SGLang's all-reduce",
              "key %s" % key if key else "SGLang's host table")
    return layer
