# SPDX-License-Identifier: Apache-2.0
"""eht.vllm: a vLLM general plug-in (entry point `vllm.general_plugins: eht = eht.vllm:register`) that
makes DeepSeek-V4.1's Engram layers look their rows up through eht. vLLM calls register() in every
process it starts; it patches nothing unless VLLM_EHT=1.

With VLLM_EHT=1 each `ParallelEngramEmbedding` (vllm.models.deepseek_v41.common.engram, or
deepseek_v4_1 as some vLLM trees name it; with the subclasses of the `nvidia` module beside it) keeps
its own `lookup(indices, out, background=False)` signature, but the call goes to an
eht.torch.EngramLayer made for that layer and rank, with the per-call `background` passed through (and
newer vLLM's `packed=True`, uint8 [T, part, 264] rows out, to a second layer of eht's raw rows over
the same table; an argument eht does not know keeps vLLM's lookup for that call, with a warning):
- VLLM_EHT_KEY=K: the tables `eht serve --key K` hosts on the node (one copy for every worker), the
  layer's table found by its row count (V4.1's two Engram tables differ in rows);
- else vLLM's own storage, wrapped without a copy (eht.wrap(..., layout="split") over its weights
  [rows, 256] and scales [rows, 8], all the table's rows or the rank's own from its row 0, readable in
  place by the rank's GPU): vLLM keeps its loader and memory and swaps only the lookup. A layer whose
  storage is in GPU memory (vLLM without cpu_offload), or under names it does not know, keeps vLLM's
  own lookup, with a warning.
The rank's columns and rows follow vLLM's rule (part = cdiv(24, shards), head_start = rank * part,
the rows of those head ranges); the layer's own attributes are used where it has them, a row block
(shard_start / table_rows on the layer or its plan) in the trees that shard a table by rows. A layer
with none of these keeps its own lookup, with a warning. The eht layer
is made at the end of the weights' loading (before vLLM profiles its memory): after the layer's
load_weights, or, where it has none (newer vLLM loads each parameter), when vLLM's
process_weights_after_loading returns; else at the first lookup.
Placement: vLLM looks up inline, on the model's stream right before the layer, from 4,096 tokens,
because its kernel takes the SMs the model needs; eht's background way takes none: on an H200 it added
+0.04 ms over the bytes' copies to a prefill step beside the model, where vLLM's kernel inline added
+16.4 ms in the same run (docs/ENGINES.md). So the plug-in raises vLLM's inline threshold (an int class
or module attribute whose name holds "threshold") past any batch: every batch is then prefetched on
vLLM's side stream with background=True. VLLM_EHT_PREFETCH_ALL=0 keeps vLLM's placement; the per-call
background flag is always passed through as vLLM gives it. Newer vLLM's NVIDIA Engram (cpu_offload)
prefetches every batch from two methods marked eager_break_during_capture, which under PIECEWISE graphs
run eagerly between graph pieces at every step; inside such a capture the plug-in calls the eht layer's
two halves on the model's stream instead (lookup_start, lookup_wait), which capture into the pieces
(VLLM_EHT_PREFETCH_ALL=0 keeps vLLM's methods everywhere).
"""
import importlib
import inspect
import logging
import os

_log = logging.getLogger("eht")

# The module's name as ENGRAM.md gives it, then as other vLLM trees spell it; the first that imports.
ENGRAM_MODULES = ("vllm.models.deepseek_v41.common.engram", "vllm.models.deepseek_v4_1.common.engram")
ENGRAM_MODULE = ENGRAM_MODULES[0]
ENGRAM_CLASS = "ParallelEngramEmbedding"
N_COLS = 24  # 8 heads x 3 n-gram orders per Engram layer
_PATCHED = "_eht_patched"


def _switch_on(name, env=None):
    """Whether the environment (env, else os.environ) sets name to "1", "true", "yes" or "on": how an
    adapter's switch (VLLM_EHT, SGLANG_EHT) is read."""
    env = os.environ if env is None else env
    return env.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def enabled(env=None):
    """Whether VLLM_EHT turns the plug-in on ("1", "true", "yes", "on")."""
    return _switch_on("VLLM_EHT", env)


def _import_engram():
    """(module, its name) of the first of ENGRAM_MODULES that imports, or (None, why not)."""
    errors = []
    for name in ENGRAM_MODULES:
        try:
            return importlib.import_module(name), name
        except ImportError as e:
            errors.append("%s: %s" % (name, e))
    return None, "; ".join(errors)


def _engram_classes(cls, name):
    """cls and its subclasses, after importing the platform module beside the common one (vLLM's NVIDIA
    subclass lives in <model>.nvidia.engram) so that they exist when register() runs; and that module's
    own class of the same name where it is not one of them (trees whose platform layer stands alone)."""
    platform = name.replace(".common.", ".nvidia.")
    todo = [cls]
    try:
        own = getattr(importlib.import_module(platform), ENGRAM_CLASS, None)
        if isinstance(own, type):
            todo.append(own)
    except Exception as e:  # noqa: BLE001 (optional: whatever it raises must not stop vLLM's start)
        _log.debug("eht.vllm: %s not imported (%s)", platform, e)
    found = []
    while todo:
        c = todo.pop()
        if c not in found:
            found.append(c)
            todo.extend(c.__subclasses__())
    return found


def register():
    """vLLM's general plug-in hook: patches the Engram layer class (and its subclasses that define their
    own lookup) when VLLM_EHT=1. Returns whether it patched (False: off, or this vLLM has no
    DeepSeek-V4.1 Engram module)."""
    if not enabled():
        return False
    mod, name = _import_engram()
    if mod is None:
        _log.warning("eht.vllm: VLLM_EHT=1 but no DeepSeek-V4.1 Engram module imports (%s): Engram lookups stay vLLM's",
                     name)
        return False
    cls = getattr(mod, ENGRAM_CLASS, None)
    if cls is None:
        _log.warning("eht.vllm: %s has no %s: Engram lookups stay vLLM's", name, ENGRAM_CLASS)
        return False
    for c in _engram_classes(cls, name):
        patch_class(c)
    hook_loader()
    if os.environ.get("VLLM_EHT_PREFETCH_ALL", "1") != "0":
        prefetch_all(mod, cls)
        for c in _prefetching_classes(name):
            patch_prefetch(c)
    _log.info("eht.vllm: %s.%s looks up through eht (%s)", name, ENGRAM_CLASS,
              "served key %s" % os.environ["VLLM_EHT_KEY"] if os.environ.get("VLLM_EHT_KEY") else "vLLM's own storage")
    return True


def _takes(fn, name, unreadable=True):
    """Whether fn (a layer's own lookup) takes the argument name: vLLM's takes background (and, in newer
    trees, packed), the trees that shard the table by rows call lookup(indices, out). unreadable: the
    answer where fn has no signature to read."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return unreadable
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)


def _takes_background(fn):
    return _takes(fn, "background")  # (no signature to read: pass it, as vLLM's takes it)


def _token_rows(out, indices, row_len=256):
    """out as [T, columns, row_len], without a copy: a [>= T, columns * row_len] output (the row-sharded
    trees' staging of every token the step may hold) viewed as its first T tokens' rows, and a
    [> T, columns, row_len] one (trees that pass their whole staging, as vLLM's kernel writes only the
    first T tokens' rows) sliced to them."""
    dim = getattr(out, "dim", None)
    if dim is None:
        return out
    T = int(indices.shape[0])
    if dim() == 2:
        return out[:T].view(T, -1, row_len)
    if dim() == 3 and int(out.shape[0]) > T:
        return out[:T]
    return out


def patch_class(cls):
    """Routes cls.lookup through eht and makes the eht layer after cls.load_weights (when it has one; a
    subclass of a patched class only where it defines its own). A layer whose storage is in GPU memory
    keeps the lookup it had."""
    if cls.__dict__.get(_PATCHED, False):
        return
    under_patched = any(b.__dict__.get(_PATCHED, False) for b in cls.__mro__[1:])
    own_lookup = cls.__dict__.get("lookup")
    orig_load = cls.__dict__.get("load_weights") if under_patched else getattr(cls, "load_weights", None)
    orig_lookup = own_lookup or (None if under_patched else getattr(cls, "lookup", None))
    if orig_lookup is None and not under_patched:
        _log.warning("eht.vllm: %s has no lookup method: nothing is routed through eht", cls.__name__)
    takes_packed = False
    if orig_lookup is not None:
        takes_background = _takes_background(orig_lookup)
        takes_packed = _takes(orig_lookup, "packed", unreadable=False)

        def vllms(self, indices, out, background, packed, kwargs):
            """vLLM's own lookup, with the arguments it takes."""
            if takes_background:
                kwargs["background"] = background
            if packed or takes_packed:
                kwargs["packed"] = packed
            return orig_lookup(self, indices, out, **kwargs)

        def lookup(self, indices, out, background=False, packed=False, **kwargs):
            # packed (newer vLLM): out is uint8 [T, part, 264], each row's fp8 weights then its ue8m0
            # scales, eht's raw rows; an argument eht does not know keeps vLLM's lookup for that call.
            if kwargs:
                _warn_once(cls, "eht.vllm: %s.lookup got %s, which eht does not know: those calls stay vLLM's"
                           % (cls.__name__, ", ".join(sorted(kwargs))))
                return vllms(self, indices, out, background, packed, kwargs)
            layer = make_layer(self, packed=bool(packed))
            if layer is _VLLMS:
                return vllms(self, indices, out, background, packed, {})
            layer.lookup(indices, _token_rows(out, indices, 264 if packed else 256), background=bool(background))
            return out

        cls.lookup = lookup
    if orig_load is not None:
        def load_weights(self, *args, **kwargs):
            result = orig_load(self, *args, **kwargs)
            _make_module_layers(self)  # before vLLM profiles its memory: eht's buffers are counted
            return result

        cls.load_weights = load_weights
    if takes_packed:
        cls._eht_takes_packed = True  # (its subclasses inherit it: _make_module_layers reads it)
    setattr(cls, _PATCHED, True)


def _make_module_layers(module):
    """A patched module's eht layer, and its packed calls' layer where its lookup takes packed."""
    make_layer(module)
    if getattr(module, "_eht_takes_packed", False):
        make_layer(module, packed=True)


_warned = set()


def _warn_once(key, msg):
    """One warning per key on the package's logger (eht.sglang's adapter shares it: its keys are
    strings, this module's classes)."""
    if key not in _warned:
        _warned.add(key)
        _log.warning(msg)


# Where vLLM's model loaders finish: process_weights_after_loading(model, model_config, target_device)
# in utils, and the same function as base_loader imports it by name (its own binding).
LOADER_MODULES = ("vllm.model_executor.model_loader.utils", "vllm.model_executor.model_loader.base_loader")
LOADER_HOOK = "process_weights_after_loading"


def make_layers(model):
    """The eht layers of every patched Engram module of a loaded model not made yet (newer vLLM's layer
    has no load_weights: its weights come through per-parameter loaders), before vLLM profiles its
    memory. A layer that cannot be made here is left to its first lookup, with a warning: loading
    goes on. Returns how many modules got their layers."""
    made = 0
    for module in getattr(model, "modules", lambda: ())():
        if not getattr(type(module), _PATCHED, False) or getattr(module, "_eht_layer", None) is not None:
            continue
        try:
            _make_module_layers(module)
            made += 1
        except Exception as e:  # noqa: BLE001 (the first lookup tries again and says why)
            _log.warning("eht.vllm: an Engram layer's eht layer was not made after loading (%s: %s): it is made at "
                         "its first lookup", type(e).__name__, e)
    return made


def hook_loader():
    """Wraps vLLM's process_weights_after_loading (each module of LOADER_MODULES that holds it) so that
    make_layers runs on the loaded model right after it. Returns the modules hooked (none in a vLLM
    without them: the layers are then made at their first lookup)."""
    hooked = []
    for name in LOADER_MODULES:
        try:
            mod = importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 (optional: whatever it raises must not stop vLLM's start)
            _log.debug("eht.vllm: %s not imported (%s)", name, e)
            continue
        orig = getattr(mod, LOADER_HOOK, None)
        if not callable(orig) or getattr(orig, _PATCHED, False):
            continue

        def after_loading(model, *args, _orig=orig, **kwargs):
            result = _orig(model, *args, **kwargs)
            make_layers(model)
            return result

        setattr(after_loading, _PATCHED, True)
        setattr(mod, LOADER_HOOK, after_loading)
        hooked.append(name)
    if not hooked:
        _log.info("eht.vllm: no %s to follow: Engram layers without load_weights get their eht layer at the "
                  "first lookup", LOADER_HOOK)
    return hooked


NO_INLINE = 1 << 62


def prefetch_all(mod, cls):
    """Raises vLLM's inline-lookup thresholds (int attributes of the Engram module, its class and the
    class's subclasses whose names hold "threshold") past any batch. Returns the names changed."""
    changed = []
    owners = [mod, cls] + list(cls.__subclasses__())
    owners += [v for v in vars(mod).values() if isinstance(v, type) and issubclass(v, cls) and v not in owners]
    for owner in owners:
        for name, value in list(vars(owner).items()):
            if "threshold" in name.lower() and isinstance(value, int) and not isinstance(value, bool):
                setattr(owner, name, NO_INLINE)
                changed.append("%s.%s" % (getattr(owner, "__name__", "?"), name))
    if changed:
        _log.info("eht.vllm: every Engram lookup prefetched beside the model (%s raised)", ", ".join(changed))
    else:
        _log.warning("eht.vllm: found no inline-lookup threshold to raise: vLLM's placement stays (trees that "
                     "prefetch every batch of an offloaded table on a side stream have none)")
    return changed


# Newer vLLM's NVIDIA Engram module starts a prefetch in one method and joins it in another, both
# marked eager_break_during_capture.
PREFETCH_METHODS = ("_start_prefetch", "_finish_prefetch")
_PATCHED_PREFETCH = "_eht_patched_prefetch"


def _prefetching_classes(name):
    """The classes of the Engram module and its platform module beside it that define both of
    PREFETCH_METHODS themselves."""
    found = []
    for mod_name in (name, name.replace(".common.", ".nvidia.")):
        try:
            mod = importlib.import_module(mod_name)
        except Exception as e:  # noqa: BLE001 (optional: whatever it raises must not stop vLLM's start)
            _log.debug("eht.vllm: %s not imported (%s)", mod_name, e)
            continue
        for v in vars(mod).values():
            if isinstance(v, type) and v not in found and all(m in vars(v) for m in PREFETCH_METHODS):
                found.append(v)
    return found


_breakable_capture = []  # vLLM's BreakableCUDAGraphCapture once imported (a call per prefetch)


def _piecewise_capture():
    """Whether vLLM's breakable CUDA-graph capture (its PIECEWISE graphs) is recording now: the only
    place where eager_break_during_capture breaks anything (a FULL capture records the methods' side
    stream into its one graph; outside a capture they run as they are)."""
    try:
        if not _breakable_capture:
            from vllm.compilation.breakable_cudagraph import BreakableCUDAGraphCapture  # noqa: PLC0415
            _breakable_capture.append(BreakableCUDAGraphCapture)
        return bool(_breakable_capture[0].is_active())
    except Exception:  # noqa: BLE001 (a vLLM without it has no such capture)
        return False


def _split_layer(module, hash_ids):
    """The eht layer whose two halves take module's prefetch of hash_ids, or None where vLLM's methods
    run: outside a PIECEWISE capture, an embedding that keeps vLLM's lookup, and a batch over the
    layer's max_tokens (its start would run whole, holding the model's stream until its rows are in)."""
    emb = getattr(module, "embed_tokens", None)
    if emb is None or not getattr(type(emb), _PATCHED, False) or not _piecewise_capture():
        return None
    layer = make_layer(emb)
    if layer is _VLLMS or int(hash_ids.shape[0]) > getattr(layer, "max_tokens", 1 << 62):
        return None
    return layer


def patch_prefetch(cls):
    """Newer vLLM's NVIDIA Engram (cpu_offload) starts each prefetch on a side stream from
    _start_prefetch(hash_ids, rows, stream) and joins it from _finish_prefetch(stream), both marked
    eager_break_during_capture: under vLLM's PIECEWISE graphs its capture breaks at each and the two
    run eagerly between graph pieces at every step. Inside such a capture, where the layer's embedding
    looks up through eht, the two become the eht layer's two halves on the current stream
    (lookup_start, lookup_wait): no side stream, nothing eager, each captured into the piece vLLM is
    capturing. Elsewhere vLLM's methods run (a FULL capture records their side stream into its one
    graph; eager steps fork it eagerly): in one graph the side stream costs the step less than the
    halves on the model's stream (docs/BENCHMARKS.md, round 47: layer-side against layer-split). An
    embedding that keeps vLLM's lookup keeps vLLM's methods, and so does a batch of more tokens than
    the eht layer's max_tokens (its start would run whole on the model's stream). Returns whether it
    patched."""
    if cls.__dict__.get(_PATCHED_PREFETCH, False):
        return False
    orig_start, orig_finish = (cls.__dict__[m] for m in PREFETCH_METHODS)

    def _start_prefetch(self, hash_ids, rows, stream, *args, **kwargs):
        layer = None if args or kwargs else _split_layer(self, hash_ids)
        if layer is None:
            self._eht_started = None
            return orig_start(self, hash_ids, rows, stream, *args, **kwargs)
        out = _token_rows(rows, hash_ids)
        layer.lookup_start(hash_ids, out)
        self._eht_started = (layer, out)
        return None

    def _finish_prefetch(self, stream, *args, **kwargs):
        started = getattr(self, "_eht_started", None)
        if started is None:
            return orig_finish(self, stream, *args, **kwargs)
        self._eht_started = None
        started[0].lookup_wait(started[1])
        return None

    cls._start_prefetch, cls._finish_prefetch = _start_prefetch, _finish_prefetch
    setattr(cls, _PATCHED_PREFETCH, True)
    _log.info("eht.vllm: %s's prefetch starts and joins eht's lookup on the model's stream (no eager break)",
              cls.__name__)
    return True


def _cdiv(a, b):
    return -(-a // b)


# The rank's geometry as a layer may hold it: ENGRAM.md's names, then those of vLLM trees that name it
# part_n_hash_cols and vocab_start_idx / vocab_end_idx.
GEOMETRY_ATTRS = (("head_start", "part", "vocab_start", "vocab_end"),
                  ("head_start", "part_n_hash_cols", "vocab_start_idx", "vocab_end_idx"))


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def row_shard(module):
    """(table_rows, shard_start, shard_end) where the layer's tree shards the table by rows instead of
    heads (every rank looks up all 24 columns, ids outside its contiguous block of rows give zero rows,
    and an all-reduce sums the ranks' outputs; the block stored from its row 0): shard_start and
    table_rows on the layer or on its plan, the block's end from shard_end, shard_rows, the plan's
    weight_shape, or cdiv(table_rows, tp_size). None for vLLM's head ranges."""
    for src in (module, getattr(module, "plan", None)):
        start, rows = getattr(src, "shard_start", None), getattr(src, "table_rows", None)
        if not (_is_int(start) and _is_int(rows)):
            continue
        end = getattr(src, "shard_end", None)
        if not _is_int(end):
            n = getattr(src, "shard_rows", None)
            shape = getattr(src, "weight_shape", None)
            caps = getattr(src, "caps", None)
            tp = getattr(src, "tp_size", getattr(caps, "tp_size", None))
            if not _is_int(n) and shape is not None and len(shape) == 2 and _is_int(shape[0]):
                n = shape[0]
            if not _is_int(n) and _is_int(tp) and tp > 0:
                n = _cdiv(rows, tp)
            if not _is_int(n):
                continue
            end = start + n
        return rows, min(start, rows), min(end, rows)
    return None


def rank_geometry(module, shards=None, rank=None):
    """(head_start, part, vocab_start, vocab_end) of this rank: the module's own attributes where it has
    them (either naming of GEOMETRY_ATTRS; a row shard, row_shard(), as all columns and the block's
    rows), else vLLM's rule from its head_sizes and the tensor-parallel group. LookupError where the
    layer has none of them."""
    for names in GEOMETRY_ATTRS:
        have = [getattr(module, a, None) for a in names]
        if all(_is_int(v) for v in have):
            return tuple(have)
    shard = row_shard(module)
    if shard is not None:
        return 0, N_COLS, shard[1], shard[2]
    if getattr(module, "head_sizes", None) is None:
        raise _NoGeometry("eht.vllm: the Engram layer has neither its rank's geometry (%s), a row shard "
                          "(shard_start and table_rows) nor head_sizes" % " or ".join("/".join(n) for n in GEOMETRY_ATTRS))
    if shards is None or rank is None:
        shards, rank = _group_shape()
    part = _cdiv(N_COLS, shards)
    if (shards - 1) * part >= N_COLS:
        raise ValueError("eht.vllm: %d shards leave the last rank without a head range (part %d of %d columns); "
                         "vLLM refuses this too" % (shards, part, N_COLS))
    sizes = list(getattr(module, "head_sizes"))
    if len(sizes) != N_COLS:
        raise ValueError("eht.vllm: head_sizes has %d entries, %d expected" % (len(sizes), N_COLS))
    off = [0]
    for s in sizes:
        off.append(off[-1] + int(s))
    hs = rank * part
    return hs, part, off[min(hs, N_COLS)], off[min(hs + part, N_COLS)]


def _group_shape():
    """(shards, rank) of vLLM's tensor-parallel group (TP x EDP in vLLM's newer code: the group the
    layer's head ranges are split over)."""
    ps = importlib.import_module("vllm.distributed.parallel_state")
    g = ps.get_tp_group()
    return int(g.world_size), int(g.rank_in_group)


def _device():
    """torch's current CUDA device, or None (no torch, no GPU)."""
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return None
    return torch.cuda.current_device() if torch.cuda.is_available() else None


def _served_table(module, key, who="eht.vllm"):
    """The table of the module's rows among those served under key (who: the adapter, for messages)."""
    import eht  # noqa: PLC0415
    client = _clients.get(key)
    if client is None:
        dev = _device()
        client = _clients[key] = eht.attach(key, device=-1 if dev is None else dev)
    rows = getattr(module, "num_embeddings", None)
    if rows is None and getattr(module, "head_sizes", None) is not None:
        rows = sum(int(x) for x in module.head_sizes)  # the whole table's rows: every head's buckets
    shard = row_shard(module) if rows is None else None
    if shard is not None:
        rows = shard[0]
    if rows is None:
        raise LookupError("%s: the Engram layer has neither num_embeddings, head_sizes nor table_rows: which "
                          "table served under key %r is its own is unknown" % (who, key))
    rows = int(rows)
    for t in client.tables.values():
        if t.rows == rows:
            return t
    raise LookupError("%s: no table of %d rows among those served under key %r (%s)"
                      % (who, rows, key, ", ".join("%s: %d" % (n, t.rows) for n, t in client.tables.items())))


_clients = {}
# The host views of storage that the GPU reads through mapped pointers come first: there, weight /
# weight_scale_inv are the device views of the same memory.
STORAGE_ATTRS = (("weight_load_view", "weight_scale_load_view"), ("weight", "scale"), ("weight", "weight_scale_inv"),
                 ("weights", "scales"), ("embed_weight", "embed_scale"))


class _InGpuMemory(ValueError):
    """The engine's storage is GPU memory: no host table to serve (eht.vllm keeps vLLM's lookup)."""


class _NoStorage(LookupError):
    """The engine's layer has none of STORAGE_ATTRS (eht.vllm keeps vLLM's lookup)."""


class _NoGeometry(LookupError):
    """The engine's layer says neither its rank's head range nor its row shard (eht.vllm keeps vLLM's
    lookup rather than guess which rows are the rank's)."""


_VLLMS = object()  # a module's _eht_layer when its lookup stays vLLM's


def _own_table(module, who="eht.vllm"):
    """The engine's own storage (weights [rows, 256] then scales [rows, 8]) wrapped without a copy; named
    after the adapter (who) so that `eht status` and errors say whose storage it is."""
    import eht  # noqa: PLC0415
    adapter = who.rsplit(".", 1)[-1]  # "vllm", "sglang": the table's name and the adapter's KEY variable
    for wa, sa in STORAGE_ATTRS:
        w, s = getattr(module, wa, None), getattr(module, sa, None)
        if w is not None and s is not None:
            if getattr(w, "is_cuda", False) or getattr(s, "is_cuda", False):
                raise _InGpuMemory("%s: the storage %s/%s is in GPU memory, not a host table (serve the tables "
                                   "with `eht serve` and set %s_EHT_KEY to look them up from host memory)"
                                   % (who, wa, sa, adapter.upper()))
            rows = int(w.shape[0])
            if rows == 0:  # e.g. vLLM's Mooncake placement: the rows live in an external store
                raise _NoStorage("%s: the storage %s/%s holds no rows (the table lives elsewhere); serve the "
                                 "tables with `eht serve` and set %s_EHT_KEY" % (who, wa, sa, adapter.upper()))
            # device: readable in place by this rank's GPU (every strategy serves it); None: no GPU
            return eht.wrap((w, s), rows, int(w.shape[-1]) + int(s.shape[-1]), layout="split",
                            device=_device(), name="%s-engram-%d" % (adapter, rows))
    raise _NoStorage("%s: the Engram layer has none of the storage attributes %s; serve the tables "
                     "with `eht serve` and set %s_EHT_KEY" % (who, ", ".join("%s/%s" % p for p in STORAGE_ATTRS),
                                                            adapter.upper()))


def make_layer(module, packed=False):
    """The eht.torch.EngramLayer of one vLLM Engram layer and rank (made once, kept on the module): bf16
    rows out, or with packed eht's raw rows (vLLM's packed lookup: fp8 weights then ue8m0 scales, 264
    bytes), a second layer over the same table."""
    layer = getattr(module, "_eht_layer", None)
    if packed and layer is not None and layer is not _VLLMS:
        raw = getattr(module, "_eht_layer_raw", None)
        if raw is None:
            from eht import torch as et  # noqa: PLC0415 (needs torch)
            kw = dict(getattr(module, "_eht_layer_kw"), format="raw")
            raw = module._eht_layer_raw = et.EngramLayer(module._eht_table, **kw)
        return raw
    if layer is not None:
        return layer
    if packed:
        layer = make_layer(module)
        return layer if layer is _VLLMS else make_layer(module, packed=True)
    from eht import torch as et  # noqa: PLC0415 (needs torch)
    key = os.environ.get("VLLM_EHT_KEY")
    try:
        hs, part, vs, ve = rank_geometry(module)
        if ve <= vs:  # only padded heads (a shard count that leaves this rank none): vLLM's zero rows
            _log.info("eht.vllm: this rank's Engram columns [%d, %d) hold no rows: its lookups stay vLLM's", hs,
                      hs + part)
            module._eht_layer = _VLLMS
            return _VLLMS
        table = _served_table(module, key) if key else _own_table(module)
    except (_NoGeometry, _InGpuMemory, _NoStorage) as e:  # vLLM's behaviour rather than a guess
        _log.warning("%s: its lookups stay vLLM's", e)
        module._eht_layer = _VLLMS
        return _VLLMS
    # A row shard's storage holds the rank's block from its row 0, padded past the table's end on the
    # last rank: the id shift is given (eht's own rule takes a table of exactly the window's rows).
    kw = {"id_shift": -vs} if not key and row_shard(module) is not None else {}
    kw.update(head_start=hs, part=part, n_heads=N_COLS, vocab_start=vs, vocab_end=ve, device=_device())
    layer = et.EngramLayer(table, format="bf16", **kw)
    module._eht_layer = layer
    module._eht_table = table  # the table must outlive the layer
    module._eht_layer_kw = kw  # (a packed call's layer: the same but raw rows)
    _log.info("eht.vllm: Engram layer of %d rows: heads [%d, %d), rows [%d, %d), from %s", table.rows, hs, hs + part,
              vs, ve, "key %s" % key if key else "vLLM's storage")
    return layer
