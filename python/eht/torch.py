# SPDX-License-Identifier: Apache-2.0
"""eht.torch: eht lookups as a torch op, called the way vLLM's and SGLang's Engram layers call their
table (import it only where PyTorch 2.4 or later is installed; `import eht` never imports torch).

    import eht, eht.torch
    lk = table.lookup_engine(strategy="auto", format="bf16", device=0)   # made once, before capture
    eng = eht.torch.engine_id(lk)               # an int the op names the engine by
    # ids: [T, 24] int32/int64, any strides (e.g. a [:, layer, :] view of the hash output)
    eht.torch.lookup_into(eng, ids, out, head_start=r * part, part=part,
                          vocab_start=vs, vocab_end=ve)      # out: [T, part, 256] bf16, any row stride
    y = eht.torch.lookup(eng, ids, head_start=0, part=part)  # the functional form: a new tensor

`torch.ops.eht.lookup_into` is a torch.library.custom_op that mutates `out`, with a fake (meta)
implementation: torch.compile(fullgraph=True) traces it as one node, and torch.cuda.graph captures it
(the engine must then stay alive while the graph may replay: the registry keeps it until release()).
It runs on torch's current stream of out's device. Semantics, as vLLM's lookup kernel:
- ids[:, head_start : head_start + part] are this rank's columns; columns >= H (padded heads) give
  zero rows;
- vocab_start / vocab_end (optional): ids outside [vocab_start, vocab_end) give zero rows; an id's
  table row is id + id_offset. id_offset None: the table's own numbering, i.e. first_row -
  vocab_start when the table holds exactly the range's rows (a rank's shard, numbered from 0 or
  absolutely), else 0 (a table of every row, the range then masks);
- out: [T, part, 256] bf16 for a bf16 engine, [T, part, row_bytes] uint8 (264: packed Engram rows)
  for a raw one; rows of any stride (unit stride inside a row).
Wrong types raise TypeError, wrong shapes, devices and ranges ValueError, naming the argument.
The engine's own options apply: its strategy, format, and where the module has them the background
mode (pushed by default; push=False: the stream's way) and SM cap of the engine-step work
(table.lookup_engine(background=True, push=False, sm_cap=N)).

Deferred dequant (`dequant_into` / `dequant`, op `torch.ops.eht.dequant_into`): a raw engine's rows
([..., 264] uint8 on the GPU) into bf16 ([..., 256]) on torch's current stream, one kernel over the
whole GPU. For lookups beside the model: look up raw on the side stream (the background mode then
runs no kernel beside the model's) and dequantize on the model's stream right before the layer that
reads the rows.

Strided ids, padded heads, a masked range or a strided output cost a torch copy each around the C
lookup (small elementwise kernels, captured with it); contiguous head-range ids into a contiguous out
go straight to eht_lookup_run.
"""
import ctypes
import inspect
import itertools
import logging
import threading

import torch

from . import Lookup, _bind
import eht as _eht

if not hasattr(getattr(torch, "library", None), "custom_op"):
    raise ImportError("eht.torch needs torch.library.custom_op (PyTorch 2.4 or later), not torch %s"
                      % torch.__version__)

__all__ = ["EngramLayer", "engine_id", "release", "lookup_into", "lookup", "dequant_into", "dequant", "check_args",
           "BACKGROUND_SUPPORTED"]

_log = logging.getLogger("eht")

_AUTO = -(1 << 63)  # id_offset / vocab bounds: not given
_engines = {}       # engine id -> Lookup (kept alive: captured graphs may replay it)
_ids = itertools.count(1)
_lock = threading.Lock()

# The background mode and SM cap ([engine-step]) are the engine's options (Lookup(background=True,
# sm_cap=N) where this module has them): the op runs the engine it names as that engine was made.
BACKGROUND_SUPPORTED = "background" in inspect.signature(Lookup.__init__).parameters


def engine_id(lookup):
    """The int that names `lookup` (an eht.Lookup) in the op; registers it on first use (call it
    outside torch.compile and before capturing). The registry keeps the engine until release()."""
    if isinstance(lookup, bool) or not isinstance(lookup, (Lookup, int)):
        raise TypeError("engine must be an eht.Lookup or an engine id (int), not %s" % type(lookup).__name__)
    if isinstance(lookup, int):
        _engine(lookup)
        return lookup
    with _lock:
        eid = getattr(lookup, "_eht_op_id", None)
        if eid is None or eid not in _engines:
            eid = next(_ids)
            _engines[eid] = lookup
            lookup._eht_op_id = eid
    return eid


def release(engine):
    """Drops the registry's reference to an engine (no graph that captured it may replay after)."""
    eid = getattr(engine, "_eht_op_id", None) if isinstance(engine, Lookup) else engine
    with _lock:
        _engines.pop(eid, None)


def _engine(eid):
    lk = _engines.get(eid)
    if lk is None:
        raise ValueError("engine %r is not a registered eht engine id (eht.torch.engine_id(lookup) makes one)"
                         % (eid,))
    return lk


def _out_spec(lk):
    """(dtype, row length) of the engine's output rows."""
    if lk.format == "bf16":
        return torch.bfloat16, 256
    return torch.uint8, lk.table.row_bytes


def _int_arg(name, v, lo=None):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("%s must be an int, not %s" % (name, type(v).__name__))
    if lo is not None and v < lo:
        raise ValueError("%s must be >= %d, not %d" % (name, lo, v))
    return v


def check_args(engine, ids, out, head_start, part, vocab_start, vocab_end):
    """The op's argument checks (also run by its fake implementation, so compile-time shapes are
    checked as well). Returns the engine's Lookup."""
    lk = _engine(engine)
    if not isinstance(ids, torch.Tensor):
        raise TypeError("ids must be a torch.Tensor, not %s" % type(ids).__name__)
    if ids.dtype not in (torch.int32, torch.int64):
        raise TypeError("ids must be torch.int32 or torch.int64, not %s" % ids.dtype)
    if ids.dim() != 2:
        raise ValueError("ids must be 2-D [T, H] (tokens x heads), not shape %s" % (tuple(ids.shape),))
    _int_arg("head_start", head_start, 0)
    _int_arg("part", part, 1)
    if head_start > ids.shape[1]:
        raise ValueError("head_start must be in [0, H] = [0, %d] (ids have %d columns), not %d"
                         % (ids.shape[1], ids.shape[1], head_start))
    if (vocab_start == _AUTO) != (vocab_end == _AUTO):
        raise ValueError("vocab_start and vocab_end go together (give both or neither)")
    if vocab_start != _AUTO:
        _int_arg("vocab_start", vocab_start, 0)
        _int_arg("vocab_end", vocab_end, vocab_start)
    if not isinstance(out, torch.Tensor):
        raise TypeError("out must be a torch.Tensor, not %s" % type(out).__name__)
    dtype, rowlen = _out_spec(lk)
    if out.dtype != dtype:
        raise TypeError("out must be %s for this %s engine ([T, part, %d]), not %s"
                        % (dtype, lk.format, rowlen, out.dtype))
    want = (ids.shape[0], part, rowlen)
    if tuple(out.shape) != want:
        raise ValueError("out must have shape [T, part, %d] = %s, not %s" % (rowlen, list(want), list(out.shape)))
    if out.device != ids.device:
        raise ValueError("out must be on the device of ids (%s), not %s" % (ids.device, out.device))
    if out.numel() and out.stride(2) != 1:
        raise ValueError("out rows must be dense (stride 1 in the last dimension), not stride %d" % out.stride(2))
    return lk


def _dead_id(dtype, off):
    """An id whose row (id + off) is negative, so dead on every table."""
    return -(1 << 31) if dtype == torch.int32 else -(1 << 62)


@torch.library.custom_op("eht::lookup_into", mutates_args=("out",))
def _lookup_op(engine: int, ids: torch.Tensor, out: torch.Tensor, head_start: int, part: int,
               vocab_start: int, vocab_end: int, id_offset: int) -> None:
    lk = check_args(engine, ids, out, head_start, part, vocab_start, vocab_end)
    T, H = ids.shape
    if T == 0:
        return
    t = lk.table
    lo, hi = t.first_row, t.first_row + t.local_rows
    ranged = vocab_start != _AUTO
    if id_offset == _AUTO:
        off = t.first_row - vocab_start if ranged and t.local_rows == vocab_end - vocab_start else 0
    else:
        off = id_offset
    if ids.dtype == torch.int32 and not -(1 << 30) < off < (1 << 30):
        ids = ids.long()  # the dead id below must stay dead after the offset
    mask = ranged and (vocab_start + off > lo or vocab_end + off < hi)
    dead = _dead_id(ids.dtype, off)
    end = min(head_start + part, H)
    if end <= head_start:  # every column a padded head
        flat = torch.full((T * part,), dead, dtype=ids.dtype, device=ids.device)
    else:
        cols = ids[:, head_start:end]
        if mask:
            cols = torch.where((cols >= vocab_start) & (cols < vocab_end), cols, dead)
        if end - head_start < part:
            cols = torch.nn.functional.pad(cols, (0, part - (end - head_start)), value=dead)
        flat = cols.reshape(-1)
        if not flat.is_contiguous():
            flat = flat.contiguous()
    dense = out.is_contiguous()
    dst = out if dense else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    stream = torch.cuda.current_stream(out.device).cuda_stream if out.is_cuda else None
    lk.run(flat, dst.view(-1), id_offset=off, stream=stream)
    if not dense:
        out.copy_(dst)


@_lookup_op.register_fake
def _lookup_fake(engine, ids, out, head_start, part, vocab_start, vocab_end, id_offset):
    check_args(engine, ids, out, head_start, part, vocab_start, vocab_end)


def _resolve(engine, ids, head_start, part, vocab_start, vocab_end, id_offset):
    eid = getattr(engine, "_eht_op_id", None) if isinstance(engine, Lookup) else engine
    if eid is None:
        eid = engine_id(engine)
    if part is None:
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
            raise ValueError("part=None needs ids of shape [T, H]")
        part = ids.shape[1] - head_start
    vs = _AUTO if vocab_start is None else vocab_start
    ve = _AUTO if vocab_end is None else vocab_end
    off = _AUTO if id_offset is None else _int_arg("id_offset", id_offset)
    return eid, part, vs, ve, off


def lookup_into(engine, ids, out, head_start=0, part=None, vocab_start=None, vocab_end=None, id_offset=None):
    """Looks ids[:, head_start:head_start+part] up into out ([T, part, 256] bf16 or [T, part, row_bytes]
    uint8) on torch's current stream; see the module doc. engine: an eht.Lookup or engine_id()."""
    eid, part, vs, ve, off = _resolve(engine, ids, head_start, part, vocab_start, vocab_end, id_offset)
    torch.ops.eht.lookup_into(eid, ids, out, head_start, part, vs, ve, off)
    return out


def lookup(engine, ids, head_start=0, part=None, vocab_start=None, vocab_end=None, id_offset=None):
    """The functional form: a new [T, part, 256] bf16 (or [T, part, row_bytes] uint8) tensor."""
    eid, part, vs, ve, off = _resolve(engine, ids, head_start, part, vocab_start, vocab_end, id_offset)
    dtype, rowlen = _out_spec(_engine(eid))
    out = torch.empty((ids.shape[0], part, rowlen), dtype=dtype, device=ids.device)
    torch.ops.eht.lookup_into(eid, ids, out, head_start, part, vs, ve, off)
    return out


def _check_dequant(engine, raw, out):
    lk = _engine(engine)
    rb = lk.table.row_bytes
    if not isinstance(raw, torch.Tensor) or not isinstance(out, torch.Tensor):
        raise TypeError("raw and out must be tensors")
    if raw.dtype != torch.uint8 or raw.dim() < 1 or raw.shape[-1] != rb:
        raise ValueError("raw must be [..., %d] uint8 (packed Engram rows), not %s %s" % (rb, raw.dtype,
                                                                                           list(raw.shape)))
    if out.dtype != torch.bfloat16 or tuple(out.shape) != tuple(raw.shape[:-1]) + (256,):
        raise ValueError("out must be %s bf16 for raw %s, not %s %s" % (list(raw.shape[:-1]) + [256],
                                                                       list(raw.shape), out.dtype, list(out.shape)))
    if not (raw.is_cuda and out.is_cuda) or raw.device != out.device:
        raise ValueError("raw and out must be on one GPU (%s, %s)" % (raw.device, out.device))
    return lk


@torch.library.custom_op("eht::dequant_into", mutates_args=("out",))
def _dequant_op(engine: int, raw: torch.Tensor, out: torch.Tensor) -> None:
    lk = _check_dequant(engine, raw, out)
    if raw.numel() == 0:
        return
    src = raw if raw.is_contiguous() else raw.contiguous()
    dense = out.is_contiguous()
    dst = out if dense else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    lk.dequant(src.view(-1), dst.view(-1), stream=torch.cuda.current_stream(out.device).cuda_stream)
    if not dense:
        out.copy_(dst)


@_dequant_op.register_fake
def _dequant_fake(engine, raw, out):
    _check_dequant(engine, raw, out)


def dequant_into(engine, raw, out):
    """raw [..., 264] uint8 (a raw engine's rows, GPU) -> out [..., 256] bf16 on torch's current stream."""
    eid = getattr(engine, "_eht_op_id", None) if isinstance(engine, Lookup) else engine
    if eid is None:
        eid = engine_id(engine)
    torch.ops.eht.dequant_into(eid, raw, out)
    return out


def dequant(engine, raw):
    """The functional form: a new [..., 256] bf16 tensor."""
    out = torch.empty(tuple(raw.shape[:-1]) + (256,), dtype=torch.bfloat16, device=raw.device)
    return dequant_into(engine, raw, out)


# ------------------------------------------------------------------ the engine's own call
class _LayerOpts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("n_heads", ctypes.c_uint32),
                ("head_start", ctypes.c_uint32), ("part", ctypes.c_uint32), ("format", ctypes.c_int),
                ("device", ctypes.c_int), ("vocab_start", ctypes.c_uint64), ("vocab_end", ctypes.c_uint64),
                ("id_shift", ctypes.c_int64), ("max_tokens", ctypes.c_uint64), ("threads", ctypes.c_uint),
                ("lookup_flags", ctypes.c_uint32)]


_LAYER_ID_SHIFT = 0x1
_LAYER_BACKGROUND = 0x1
_LAYER_HOST = 0x2
_LAYER_START = 0x4


def _layer_sigs():
    VP, U64, I64 = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int64
    return [("eht_engram_layer_create", ctypes.c_int, [VP, ctypes.POINTER(_LayerOpts), ctypes.POINTER(VP)]),
            ("eht_engram_layer_lookup", ctypes.c_int, [VP, VP, ctypes.c_int, U64, I64, I64, VP, U64, ctypes.c_uint, VP]),
            ("eht_engram_layer_wait", ctypes.c_int, [VP, VP]),
            ("eht_engram_layer_engine", VP, [VP, ctypes.c_uint]),
            ("eht_engram_layer_max_tokens", U64, [VP]),
            ("eht_engram_layer_destroy", None, [VP])]


_layer_lib_fns = _bind.lazy(_layer_sigs)


_is_compiling = torch.compiler.is_compiling
_raw_stream_of = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _raw_stream(device_index):
    """torch's current CUDA stream of a device as an int, without making a Stream object."""
    if _raw_stream_of is not None:
        return _raw_stream_of(device_index)
    return torch.cuda.current_stream(device_index).cuda_stream


_layers = {}  # layer id -> EngramLayer, for the op torch.compile traces


class EngramLayer:
    """One Engram layer's table as one rank looks it up, called as vLLM calls its own:
    `layer.lookup(indices, out, background=False)`.

    table: an eht.Table (served, attached, shared or wrapped, e.g. eht.wrap(..., layout="split") over
    the engine's own storage). head_start / part: the rank's columns of the hash output (vLLM: part =
    cdiv(24, shards), head_start = rank * part); columns >= n_heads are padded heads (zero rows).
    vocab_start / vocab_end: the rank's rows (ids outside give zero rows); None: every row the table
    holds. format "bf16" (out [T, part, 256] bf16) or "raw" (out [T, part, row_bytes] uint8: packed rows).
    Both ways are made here; each call picks one with `background` (True on a side stream beside the
    model's layers, False inline before the layer). Calls are capturable in CUDA graphs (the object must
    outlive the graph) and traced by torch.compile(fullgraph=True) as one op."""

    def __init__(self, table, *, head_start=0, part=None, n_heads=24, vocab_start=None, vocab_end=None,
                 format="bf16", device=None, max_tokens=0, threads=0, gpu_dedup=False, no_hotset=False,
                 push=None, id_shift=None):
        if not isinstance(table, _eht.Table):
            raise TypeError("EngramLayer takes an eht.Table, not %s" % type(table).__name__)
        for name, v, lo in (("head_start", head_start, 0), ("n_heads", n_heads, 1), ("max_tokens", max_tokens, 0),
                            ("threads", threads, 0)):
            _int_arg(name, v, lo)
        if part is None:
            part = n_heads - head_start
        _int_arg("part", part, 1)
        if (vocab_start is None) != (vocab_end is None):
            raise ValueError("vocab_start and vocab_end go together (give both or neither)")
        if vocab_start is not None:
            _int_arg("vocab_start", vocab_start, 0)
            _int_arg("vocab_end", vocab_end, vocab_start)
        fmt = _eht._choice("format", format, _eht.FORMATS)
        dev = _eht._device_index(device)
        opts = _LayerOpts(size=ctypes.sizeof(_LayerOpts), n_heads=n_heads, head_start=head_start, part=part,
                          format=fmt, device=dev, vocab_start=vocab_start or 0, vocab_end=vocab_end or 0,
                          max_tokens=max_tokens, threads=threads,
                          lookup_flags=(_eht._LOOKUP_GPU_DEDUP if gpu_dedup else 0)
                          | (_eht._LOOKUP_NO_HOTSET if no_hotset else 0)
                          | (0 if push is None else _eht._LOOKUP_BG_PUSH if push else _eht._LOOKUP_BG_STREAM))
        if id_shift is not None:
            opts.flags |= _LAYER_ID_SHIFT
            opts.id_shift = _int_arg("id_shift", id_shift)
        lib = _layer_lib_fns()
        h = ctypes.c_void_p()
        tn = table._use()
        _eht._check(lib.eht_engram_layer_create(tn.h, ctypes.byref(opts), ctypes.byref(h)), "eht_engram_layer_create")
        self._n = _eht._Native(h.value, lib.eht_engram_layer_destroy, tn)
        self.table = table
        self.head_start, self.part, self.n_heads = head_start, part, n_heads
        self.format = format
        self.max_tokens = int(lib.eht_engram_layer_max_tokens(h.value))  # tokens of one internal step
        self.row_len = 256 if fmt == 1 else table.row_bytes
        self.dtype = torch.bfloat16 if fmt == 1 else torch.uint8
        self._esize = 2 if fmt == 1 else 1
        self._need = min(n_heads, head_start + part)  # the columns indices must have
        self._fn = lib.eht_engram_layer_lookup
        with _lock:
            self.id = next(_ids)
            _layers[self.id] = self

    # The eager call's path: each tensor attribute read once (an engine calls this per layer and step;
    # a tp-4 rank's eager call spent 16 us here against 9 in C on the lent H200's host).
    def _check(self, indices, out):
        """Raises for bad arguments; returns T."""
        if not isinstance(indices, torch.Tensor) or not isinstance(out, torch.Tensor):
            raise TypeError("indices and out must be torch tensors")
        ishape, idt = indices.shape, indices.dtype
        if (idt is not torch.int32 and idt is not torch.int64) or len(ishape) != 2:
            raise ValueError("indices must be [T, H] int32 or int64, not %s %s" % (list(ishape), idt))
        if ishape[1] < self._need:
            raise ValueError("indices have %d columns, the layer reads columns up to %d" % (ishape[1], self._need - 1))
        T, oshape = ishape[0], out.shape
        if out.dtype is not self.dtype or len(oshape) != 3 or oshape[0] != T or oshape[1] != self.part \
                or oshape[2] != self.row_len:
            raise ValueError("out must be %s %s, not %s %s" % ([T, self.part, self.row_len], self.dtype,
                                                                list(oshape), out.dtype))
        if T:  # (out holds T x part x row_len elements, none when T is 0)
            os_ = out.stride()
            if os_[2] != 1 or os_[1] != self.row_len:
                raise ValueError("out's rows of one token must be dense (strides (*, %d, 1)), not %s"
                                 % (self.row_len, os_))
        if out.get_device() != indices.get_device() or out.is_cuda != indices.is_cuda:
            raise ValueError("out must be on the device of indices (%s), not %s" % (indices.device, out.device))
        return T

    def _run(self, indices, out, background, T, start=False):
        if T == 0:
            return
        n = self._n  # one read: held for the call (a close() on another thread frees after it)
        if n is None:
            raise _eht._closed("this EngramLayer")
        if indices.is_cuda:
            flags, stream = (_LAYER_BACKGROUND if background else 0), _raw_stream(indices.get_device())
        else:
            flags, stream = _LAYER_HOST, None
        if start:
            flags |= _LAYER_START
        st = indices.stride()
        rc = self._fn(n.h, indices.data_ptr(), 0 if indices.dtype is torch.int32 else 1, T, st[0], st[1],
                      out.data_ptr(), out.stride(0) * self._esize, flags, stream)
        if rc:
            _eht._check(rc, "eht_engram_layer_lookup")

    def lookup(self, indices, out, background=False):
        """indices [T, H] (int32 / int64, any strides) -> out [T, part, 256] bf16 (or [T, part, row_bytes]
        uint8), on torch's current stream; background=True: the way beside the model's layers."""
        if _is_compiling():
            torch.ops.eht.engram_layer_lookup(self.id, indices, out, bool(background))
            return out
        self._run(indices, out, background, self._check(indices, out))
        return out

    def lookup_start(self, indices, out):
        """The background way in two halves, for an engine that starts a prefetch in one CUDA graph and
        joins it in another (vLLM's piecewise graphs): starts the lookup of indices into out on torch's
        current stream; the rows are in out for work enqueued after `lookup_wait(out)` on that stream (or
        one ordered after it). No side stream: both halves capture, into one graph or two. The layer's
        next background call comes after the wait (until then it raises), and the start after the
        layer's earlier background calls are joined to this stream (a captured wait polls on every SM; an
        earlier call's dequant queued ahead of these rows would find none free). A call of more than
        max_tokens tokens (or of host tensors) runs whole here, its rows waited for on the stream as
        an inline call's are."""
        if _is_compiling():
            torch.ops.eht.engram_layer_lookup_start(self.id, indices, out)
            return out
        self._run(indices, out, True, self._check(indices, out), start=True)
        return out

    def lookup_wait(self, out):
        """Ends `lookup_start` on torch's current stream: work enqueued after it reads out's rows.
        A no-op where nothing was started (or the start ran whole: host memory, more than max_tokens
        tokens)."""
        if _is_compiling():
            torch.ops.eht.engram_layer_lookup_wait(self.id, out)
            return out
        self._wait(out)
        return out

    def _wait(self, out):
        n = self._n
        if n is None:
            raise _eht._closed("this EngramLayer")
        if not isinstance(out, torch.Tensor):
            raise TypeError("out must be a torch tensor")
        stream = _raw_stream(out.get_device()) if out.is_cuda else None
        rc = _layer_lib_fns().eht_engram_layer_wait(n.h, stream)
        if rc:
            _eht._check(rc, "eht_engram_layer_wait")

    def engine(self, background=False):
        """The eht.Lookup-level handle (a ctypes address) of one way, e.g. for eht_lookup_last_dead_count."""
        n = self._n
        if n is None:
            raise _eht._closed("this EngramLayer")
        return _layer_lib_fns().eht_engram_layer_engine(n.h, _LAYER_BACKGROUND if background else 0)

    def close(self):
        """Frees the layer (synchronizing the device first); no graph that captured it may replay after."""
        with _lock:
            _layers.pop(getattr(self, "id", None), None)
        self._n = None  # the handle is freed when no running call holds it

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<eht.torch.EngramLayer heads [%d, %d) %s%s>" % (self.head_start, self.head_start + self.part,
                                                                 self.format, "" if self._n is not None else " closed")


def _layer(lid):
    layer = _layers.get(lid)
    if layer is None:
        raise ValueError("%r is not a live EngramLayer id" % (lid,))
    return layer


@torch.library.custom_op("eht::engram_layer_lookup", mutates_args=("out",))
def _layer_op(layer_id: int, indices: torch.Tensor, out: torch.Tensor, background: bool) -> None:
    layer = _layer(layer_id)
    layer._run(indices, out, background, layer._check(indices, out))


@_layer_op.register_fake
def _layer_fake(layer_id, indices, out, background):
    _layer(layer_id)._check(indices, out)


@torch.library.custom_op("eht::engram_layer_lookup_start", mutates_args=("out",))
def _layer_start_op(layer_id: int, indices: torch.Tensor, out: torch.Tensor) -> None:
    layer = _layer(layer_id)
    layer._run(indices, out, True, layer._check(indices, out), start=True)


@_layer_start_op.register_fake
def _layer_start_fake(layer_id, indices, out):
    _layer(layer_id)._check(indices, out)


# (out is named as mutated so that a compiled graph keeps the wait before whatever reads the rows)
@torch.library.custom_op("eht::engram_layer_lookup_wait", mutates_args=("out",))
def _layer_wait_op(layer_id: int, out: torch.Tensor) -> None:
    _layer(layer_id)._wait(out)


@_layer_wait_op.register_fake
def _layer_wait_fake(layer_id, out):
    _layer(layer_id)
