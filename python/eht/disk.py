# SPDX-License-Identifier: Apache-2.0
"""eht.disk: the disk tier in this process (no server): a checkpoint's rows read in place from its
safetensors files, a rank's head range mapped alone, and prefetch of a step's rows ahead of its lookup.

    t = eht.disk.open(ckpt, layer=1, tp=4, rank=1, layout=eht.engram.Layout.preset("v41"))
    lk = t.lookup_engine(strategy="host", format="bf16", device=0)
    with eht.disk.prefetch(t, next_ids):       # step k+1's reads start now
        lk.run(ids, out)                       # step k (rows of the oldest ticket come from its buffer)
"""
import ctypes
import os

from . import Table, _bind
from ._args import _buffer_address, _id_type
from ._native import _check, _closed
from ._ints import as_int, struct

__all__ = ["open", "prefetch", "Ticket", "stats", "drop_cache"]

_NO_CACHE = (1 << 64) - 1


class _DiskOpts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("weight", ctypes.c_char_p),
                ("scale", ctypes.c_char_p), ("rank", ctypes.c_uint32), ("nranks", ctypes.c_uint32),
                ("cache_bytes", ctypes.c_uint64), ("io_threads", ctypes.c_uint),
                ("prefetch_rows", ctypes.c_uint64), ("prefetch_slots", ctypes.c_uint),
                ("name", ctypes.c_char_p), ("first_row", ctypes.c_uint64), ("row_count", ctypes.c_uint64)]


class _DiskStats(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("rows_read", ctypes.c_uint64), ("cache_hits", ctypes.c_uint64),
                ("prefetch_hits", ctypes.c_uint64), ("cache_slots", ctypes.c_uint64),
                ("resident_rows", ctypes.c_uint64), ("uncached_rows", ctypes.c_uint64),
                ("uncached_bytes", ctypes.c_uint64), ("split_mode", ctypes.c_uint32)]


def _sigs():
    P, VP, I, U64 = ctypes.POINTER, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64
    return [
        ("eht_disk_open", I, [ctypes.c_char_p, P(_DiskOpts), P(VP)]),
        ("eht_disk_prefetch", I, [VP, VP, I, ctypes.c_int64, U64, ctypes.c_uint32, P(VP)]),
        ("eht_disk_wait", I, [VP]),
        ("eht_disk_ticket_rows", U64, [VP]),
        ("eht_disk_release", I, [VP]),
        ("eht_disk_stats", I, [VP, P(_DiskStats)]),
        ("eht_disk_drop_cache", I, [VP]),
        ("eht_disk_check", I, [VP]),
    ]


_lib = _bind.lazy(_sigs)


def open(ckpt, weight=None, scale=None, layer=None, rank=0, nranks=1, rows=None, tp=None, layout=None,
         cache_bytes=None, io_threads=0, prefetch_rows=0, prefetch_slots=0, name=None):
    """Opens a disk-tier table over a checkpoint (file, index or folder of shards).

    Tensors: weight (+ scale), or layer=N for DeepSeek-V4.1's `layers.N.engram.embed.weight` /
    `.scale` (264-byte packed rows). Rows this process maps: rows=(vocab_start, vocab_end); or
    tp + rank with a layout (eht.engram.Layout): the rank's Engram head range, vLLM's rule; or
    rank / nranks: an even split of rows (SGLang's). Ids outside give zero rows. cache_bytes: the
    hot-row cache (None: 16 MiB, 0: none)."""
    if layer is not None:
        weight = weight or "layers.%d.engram.embed.weight" % layer
        scale = scale or "layers.%d.engram.embed.scale" % layer
    if not weight:
        raise ValueError("weight (a tensor name) or layer is required")
    first = count = 0
    if tp is not None:
        if layout is None or layer is None:
            raise ValueError("tp needs layout (eht.engram.Layout) and layer (its Engram layer id)")
        if layer not in layout.layer_ids:
            raise ValueError("layer %d is not an Engram layer of the layout (%s)" % (layer, layout.layer_ids))
        first, end = layout.shard(layout.layer_ids.index(layer), tp, rank)
        count = end - first
        rank, nranks = 0, 1
    elif rows is not None:
        first, end = rows
        first, end = as_int("rows[0]", first), as_int("rows[1]", end)
        if not 0 <= first < end:
            raise ValueError("rows=(vocab_start, vocab_end) must satisfy 0 <= start < end, not %r" % (rows,))
        count = end - first
    for what, v in (("weight", weight), ("scale", scale), ("name", name)):
        if v is not None and (not isinstance(v, str) or "\0" in v):
            raise ValueError("%s=%r: a str without NUL characters" % (what, v))
    if cache_bytes is not None:
        cache_bytes = as_int("cache_bytes", cache_bytes, ctypes.c_uint64, hi=_NO_CACHE - 1)
    nranks = as_int("nranks", nranks, ctypes.c_uint32)
    rank = as_int("rank", rank, ctypes.c_uint32, hi=max(nranks, 1) - 1)  # nranks 0: rank 0 of 1
    opts = struct(_DiskOpts, size=ctypes.sizeof(_DiskOpts), weight=weight.encode(),
                  scale=scale.encode() if scale else None, rank=rank, nranks=nranks,
                  cache_bytes=0 if cache_bytes is None else (_NO_CACHE if cache_bytes == 0 else cache_bytes),
                  io_threads=io_threads, prefetch_rows=prefetch_rows, prefetch_slots=prefetch_slots,
                  name=name.encode() if name else None, first_row=first, row_count=count)
    h = ctypes.c_void_p()
    _check(_lib().eht_disk_open(os.fsencode(ckpt), ctypes.byref(opts), ctypes.byref(h)),
           "eht_disk_open(%s)" % ckpt)
    return Table(h)


class Ticket:
    """A prefetch in flight (eht_disk_prefetch): wait(), rows (distinct rows staged), release(). A
    context manager: released on exit. Once its table is closed (t.close()), wait() raises EhtError
    (EBADF), release() raises it once and then does nothing, and collection releases it quietly;
    the native ticket is always released exactly once, and never touches the closed table."""

    def __init__(self, table, h):
        self.table, self._h = table, h

    def _table_closed(self):
        return getattr(self.table, "_n", None) is None or not getattr(self.table, "_h", None)

    def _closed_error(self):
        """Releases the native ticket (its table is closed) and returns the EhtError to raise."""
        h, self._h = self._h, None
        if h:
            _lib().eht_disk_release(h)  # -EBADF or a read error: the table is gone either way
        return _closed("prefetch ticket of table %s: the table" % getattr(self.table, "name", "?"))

    def wait(self):
        if self._table_closed():
            raise self._closed_error()
        h = self._h
        if not h:
            raise _closed("prefetch ticket (released)")
        _check(_lib().eht_disk_wait(h), "eht_disk_wait")
        return self

    @property
    def rows(self):
        h = self._h
        return int(_lib().eht_disk_ticket_rows(h)) if h and not self._table_closed() else 0

    def release(self):
        if self._h and self._table_closed():
            raise self._closed_error()
        h, self._h = self._h, None
        if h:
            _check(_lib().eht_disk_release(h), "eht_disk_release")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            try:
                _lib().eht_disk_release(h)
            except Exception:  # noqa: BLE001 (interpreter shutdown)
                pass


def prefetch(table, ids, id_offset=0):
    """Starts gathering the rows of ids (host memory: array('i'/'q'), a CPU torch tensor; a CUDA
    tensor is copied to the host first, which waits for it) and returns a Ticket at once."""
    try:
        import torch  # noqa: PLC0415
        if isinstance(ids, torch.Tensor):
            ids = ids.reshape(-1).cpu().contiguous()
    except ImportError:
        pass
    id_offset = as_int("id_offset", id_offset, ctypes.c_int64)
    addr, nbytes, _, keep = _buffer_address(ids, False)
    itype = _id_type(ids, nbytes, None)
    h = ctypes.c_void_p()
    n = table._use()  # held for the call: a close() on another thread takes effect after it
    _check(_lib().eht_disk_prefetch(n.h, addr, itype, id_offset, nbytes // (4 if itype == 0 else 8), 0,
                                    ctypes.byref(h)), "eht_disk_prefetch")
    del keep, n
    return Ticket(table, h)


def stats(table):
    """The disk table's counters since open, as a dict."""
    s = _DiskStats(size=ctypes.sizeof(_DiskStats))
    _check(_lib().eht_disk_stats(table._live(), ctypes.byref(s)), "eht_disk_stats")
    return {k: getattr(s, k) for k, _ in _DiskStats._fields_ if k != "size"}


def drop_cache(table):
    """Drops the table's rows from the page cache and the hot-row cache (cold reads next)."""
    _check(_lib().eht_disk_drop_cache(table._live()), "eht_disk_drop_cache")
