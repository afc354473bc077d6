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
mode (and its push way) and SM cap of the engine-step work (table.lookup_engine(background=True,
push=True, sm_cap=N)).

Deferred dequant (`dequant_into` / `dequant`, op `torch.ops.eht.dequant_into`): a raw engine's rows
([..., 264] uint8 on the GPU) into bf16 ([..., 256]) on torch's current stream, one kernel over the
whole GPU. For lookups beside the model: look up raw on the side stream (the background mode then
runs no kernel beside the model's) and dequantize on the model's stream right before the layer that
reads the rows.

Strided ids, padded heads, a masked range or a strided output cost a torch copy each around the C
lookup (small elementwise kernels, captured with it); contiguous head-range ids into a contiguous out
go straight to eht_lookup_run.
"""
import inspect
import itertools
import logging
import threading

import torch

from . import Lookup

if not hasattr(getattr(torch, "library", None), "custom_op"):
    raise ImportError("eht.torch needs torch.library.custom_op (PyTorch 2.4 or later), not torch %s"
                      % torch.__version__)

__all__ = ["engine_id", "release", "lookup_into", "lookup", "dequant_into", "dequant", "check_args",
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
