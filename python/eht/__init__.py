# SPDX-License-Identifier: Apache-2.0
"""eht: Engram host tables from Python.

ctypes over libeht (no compiled extension, standard library only). Where PyTorch is importable,
tables and lookup outputs can be zero-copy torch tensors on the right device.

    import eht
    client = eht.attach("mykey", device=0)        # tables served by `eht serve ... --key mykey`
    table = client.tables["layers.1.engram.embed"]
    dead = table.lookup(ids, out)                  # ids: torch/array; out: torch/bytearray
    lk = table.lookup_engine(strategy="auto", format="bf16")   # or an engine of one's own

libeht is found through $EHT_LIB, the build tree of a source checkout, pkg-config, $EHT_PREFIX, this
Python's prefix, /usr/local, then the system's library path (eht._libfind). Type hints: eht/__init__.pyi.
"""
import collections.abc as _abc
import ctypes
import ctypes.util
import errno as _errno
import json as _json
import os

from ._args import (_buffer_address, _choice, _device_index, _id_type, _stream_handle, _stream_or_current,
                    _torch)
from ._ints import IntRangeError, as_int as _as_int, struct as _struct
from ._native import (_ATTACH_WAIT, _DISK_ROWS_FN, _LOOKUP_BACKGROUND, _LOOKUP_BG_PUSH, _LOOKUP_BG_STREAM,
                      _LOOKUP_CPU_ONLY, _LOOKUP_GPU_DEDUP, _LOOKUP_NO_HOTSET, _METRIC_NAMES, _RUN_DEAD_ERROR,
                      _RUN_IDS_DEVICE, _RUN_IDS_HOST, _RUN_OUT_DEVICE, _RUN_OUT_HOST, _WRAP_SPLIT_CPU_FALLBACK,
                      EhtError, _AttachOpts, _check, _closed, _Closing, _free, _key, _L, _LookupOpts, _Metrics,
                      _Native, _TableCopy, _TableInfo, _WrapSplitOpts)
from ._version import __version__

__all__ = ["EhtError", "IntRangeError", "version", "library_path", "status", "metrics", "metrics_prometheus", "wrap",
           "attach", "Table", "Lookup", "Client",
           "read_hotset", "HotsetError", "Group", "Region", "SharedTable", "node_id", "share_host_table",
           "fabric_host_memory_supported", "ECSharedRegion", "engram", "disk",
           "TIERS", "STRATEGIES", "FORMATS", "ENGRAM_ROW_BYTES", "__version__"]


class _TierNames(_abc.Mapping):
    """{tier number: name}, read from the library's one list of tiers (eht_tier_count and
    eht_tier_name) on first use."""

    def __init__(self):
        self._names = None

    def _load(self):
        if self._names is None:
            lib = _L()
            names = {0: "none"}
            names.update((t, lib.eht_tier_name(t).decode()) for t in range(1, lib.eht_tier_count() + 1))
            self._names = names
        return self._names

    def __getitem__(self, tier):
        return self._load()[tier]

    def __iter__(self):
        return iter(self._load())

    def __len__(self):
        return len(self._load())

    def __repr__(self):
        return repr(self._load())


TIERS = _TierNames()


class _Strategies(_abc.Mapping):
    """Lookup strategy name -> id, as the loaded libeht lists them (eht_lookup_strategy_count and
    eht_lookup_strategy_name), read at first use."""

    def __init__(self):
        self._d = None

    def _m(self):
        if self._d is None:
            lib = _L()
            self._d = {lib.eht_lookup_strategy_name(i).decode(): i for i in range(lib.eht_lookup_strategy_count())}
        return self._d

    def __getitem__(self, name):
        return self._m()[name]

    def __iter__(self):
        return iter(self._m())

    def __len__(self):
        return len(self._m())

    def __repr__(self):
        return repr(self._m())


STRATEGIES = _Strategies()
FORMATS = {"raw": 0, "bf16": 1}
_METRIC_HELP = {"calls": "eht_lookup_run calls (eager, and each capture)", "ids": "ids those calls looked up",
                "calls_cpu": "calls run by the CPU piece", "calls_gpu": "calls run by the GPU piece",
                "calls_hot": "calls run through the hot set", "errors": "calls that returned an error",
                "call_ns": "nanoseconds the calling threads spent in calls",
                "dead_cpu": "dead ids the CPU counted", "rows_gathered": "rows the CPU pool copied",
                "bytes_staged": "bytes of the rows the CPU pool copied"}
ENGRAM_ROW_BYTES = 264


def _disk_rows_callback(disk_rows, head_range):
    """The attach's disk_rows callback (kept alive by the caller during eht_attach): disk_rows(name,
    rows) -> (first_row, row_count) or None; or head_range=(layout, tp, rank): each
    "layers.N.engram..." table's rank head range of layer N (vLLM's rule)."""
    if head_range is not None:
        if disk_rows is not None:
            raise ValueError("give disk_rows or head_range, not both")
        layout, tp, hrank = head_range
        from .engram import check_tp  # noqa: PLC0415
        check_tp(layout.cols, tp)

        def disk_rows(name, rows):
            parts = name.split(".")
            if len(parts) > 2 and parts[0] == "layers" and parts[1].isdigit() and int(parts[1]) in layout.layer_ids:
                li = layout.layer_ids.index(int(parts[1]))
                if rows != layout.rows[li]:
                    raise ValueError("table %s has %d rows, the layout's layer %s %d" % (name, rows, parts[1],
                                                                                      layout.rows[li]))
                a, e = layout.shard(li, tp, hrank)
                return a, e - a
            return None
    if disk_rows is None:
        return None
    errors = []

    def cb(arg, name, rows, first, count):
        try:
            r = disk_rows(name.decode(), rows)
            if r is not None:
                what = "disk_rows(%r) -> (first_row, row_count)" % name.decode(errors="replace")
                first[0] = _as_int(what + "[0]", r[0], ctypes.c_uint64)  # libeht checks the range
                count[0] = _as_int(what + "[1]", r[1], ctypes.c_uint64)
            return 0
        except Exception as exc:  # noqa: BLE001 (reported after eht_attach returns)
            errors.append(exc)
            return -_errno.EINVAL
    fn = _DISK_ROWS_FN(cb)
    fn._errors = errors
    return fn


def _hot_rows(rows):
    """Hot-set rows (ints, or the path of an `eht hotset build` file) as (keep-alive array, int64
    C array, count)."""
    if isinstance(rows, (str, bytes, os.PathLike)):
        rows = read_hotset(rows)
    import array
    try:
        arr = array.array("q", rows)
    except OverflowError:
        arr = array.array("q", (_as_int("hot set row %d" % i, r, ctypes.c_int64, lo=0) for i, r in enumerate(rows)))
    n = len(arr)
    buf = (ctypes.c_int64 * max(n, 1)).from_buffer(arr) if n else (ctypes.c_int64 * 1)()
    return arr, buf, n


def _reload_settings():
    """libeht reads its EHT_* settings (docs/ENVIRONMENT.md) from the environment once per process:
    after os.environ changed (a benchmark's variant, a test), this reads them again. What was made
    before keeps what it read."""
    lib = _L()
    if hasattr(lib, "eht_settings_reload"):  # (a libeht older than the table reads them at each use)
        lib.eht_settings_reload()


class HotsetError(EhtError, ValueError):
    """A file that is not a valid hot set (read_hotset): an EhtError that is also a ValueError."""


def read_hotset(path):
    """Row ids of a hot-set file of `eht hotset build`, read by libeht (eht_hotset_read)."""
    lib = _L()
    rows, n = ctypes.POINTER(ctypes.c_int64)(), ctypes.c_uint64(0)
    rc = lib.eht_hotset_read(os.fsencode(path), ctypes.byref(rows), ctypes.byref(n))
    if rc < 0:
        msg = lib.eht_last_error().decode(errors="replace") or os.strerror(-rc)
        raise (HotsetError if rc == -_errno.EINVAL else EhtError)(-rc, "read_hotset(%s): %s" % (path, msg))
    try:
        return rows[:n.value]
    finally:
        lib.eht_hotset_free(rows)


def version():
    """libeht's version string (the loaded library's; eht.__version__ is this package's)."""
    return _L().eht_version().decode()


def library_path():
    """The libeht.so file this module loaded."""
    return _L()._eht_path


def status(key=None):
    """What running servers of this user hold (eht_serve_status): a dict for key, a list of dicts
    for key None. Raises EhtError (errno ENOENT) when no server holds key."""
    lib = _L()
    if not hasattr(lib, "eht_serve_status"):
        raise EhtError(_errno.ENOSYS, "this libeht has no eht_serve_status")
    out = ctypes.c_void_p()
    _check(lib.eht_serve_status(key.encode() if key else None, ctypes.byref(out)), "eht_serve_status")
    try:
        return _json.loads(ctypes.string_at(out.value).decode())
    finally:
        _free(out)


class Lookup(_Closing):
    """A lookup engine bound to one table (eht_lookup): fixed buffers, asynchronous on a stream.

    background=True is the mode for lookups beside the model's kernels (a side stream forked at the
    step's start): no SM waits for the CPU (stream memory operations and the copy engine), AUTO runs
    as HOST, every kernel is capped at sm_cap SMs (default half of them). sm_cap caps the grid of each of
    the engine's kernels in any mode; spin_us is how long the process's CPU pool spins after a job.
    push (background=True only): None, the default, pushes: the CPU moves the rows with copies of its
    own and the graph holds two nodes a lookup instead of about ten (a decode step of two tables on
    the H200: +35 / +50 us synced against +69 / +61, back to back +38 / +48 against +26 / +65).
    push=False keeps captured lookups the stream's way, for an engine that launches steps far ahead
    and measures that better; eager calls are pushed either way (fewer calls on the caller's thread).
    no_hotset=True loads no hot set at create, not even the table's own (set_hotset still can).

    Engines call it as they call their own kernels: ids and out as CUDA tensors, on the current
    (or a given) stream, eagerly or inside torch.cuda.graph(...) for every strategy. A captured graph
    needs the same ids / out tensors at every replay (write new ids into the captured ids tensor) and
    this engine kept alive while the graph may replay."""

    def __init__(self, table, strategy="auto", format="raw", device=None, threads=0,
                 max_batch=0, cpu_only=False, gpu_dedup=False, sm_cap=0, background=False, spin_us=0,
                 no_hotset=False, push=None):
        self.table = table
        self.format = format
        if not isinstance(table, Table):
            raise TypeError("Lookup takes an eht.Table, not %s" % type(table).__name__)
        dev = _device_index(device)
        if push is not None and not background:
            raise ValueError("push is a way of the background mode: give background=True too")
        opts = _struct(_LookupOpts, size=ctypes.sizeof(_LookupOpts), strategy=_choice("strategy", strategy, STRATEGIES),
                           format=_choice("format", format, FORMATS), device=dev,
                           threads=threads, max_batch=max_batch, numa_node=-1, sm_cap=sm_cap, spin_us=spin_us,
                           flags=(_LOOKUP_CPU_ONLY if cpu_only else 0) | (_LOOKUP_GPU_DEDUP if gpu_dedup else 0)
                           | (_LOOKUP_BACKGROUND if background else 0) | (_LOOKUP_NO_HOTSET if no_hotset else 0)
                           | (0 if push is None else _LOOKUP_BG_PUSH if push else _LOOKUP_BG_STREAM))
        h = ctypes.c_void_p()
        tn = table._use()  # the table cannot go while the engine is made
        _check(_L().eht_lookup_create(tn.h, ctypes.byref(opts), ctypes.byref(h)), "eht_lookup_create")
        self._n = _Native(h, _L().eht_lookup_destroy, tn)
        self._h = h

    def _use(self):
        """The engine's _Native, held by the caller for one call (see _Native); EhtError once closed."""
        n = getattr(self, "_n", None)  # one read: close() on another thread may clear it any time
        if n is None or not n.h:
            raise _closed("this lookup engine")
        return n

    def __repr__(self):
        return "<eht.Lookup %s %s%s>" % (getattr(self.table, "name", "?"), self.format,
                                         "" if getattr(self, "_n", None) is not None else " closed")

    @property
    def out_row_bytes(self):
        return 512 if self.format == "bf16" else self.table.row_bytes

    def run(self, ids, out, id_offset=0, stream=None, strategy=None, dead_is_error=False, count_dead=None):
        """Looks ids up into out. Returns the number of dead ids (zero rows) when it is known without
        waiting: always for host output; for GPU output only with count_dead=True (which synchronizes
        the stream, so not inside a CUDA graph). Otherwise returns None: read last_dead_count() once
        the stream has passed the call (the GPU counts dead ids itself). The count is this call's,
        also with other threads running the same engine (libeht runs one call of an engine at a time)."""
        n = self._use()
        self.table._live()
        torch = _torch()
        if torch is not None and isinstance(ids, torch.Tensor) and ids.dim() > 1:
            # A view only: a flattened copy would be freed when this returns, while the stream (or a
            # captured graph's every replay) still reads it.
            if not ids.is_contiguous():
                raise ValueError("ids must be contiguous: a copy made here would be freed while the stream still "
                                 "reads it; pass ids.contiguous() and keep it alive until the stream is done, or use "
                                 "eht.torch's op (it runs on torch's current stream, whose allocator orders the reuse "
                                 "of its copies)")
            ids = ids.view(-1)
        id_offset = _as_int("id_offset", id_offset, ctypes.c_int64)
        iaddr, inbytes, idev, keep_i = _buffer_address(ids, False)
        itype = _id_type(ids, inbytes, None)
        count = inbytes // (4 if itype == 0 else 8)
        oaddr, onbytes, odev, keep_o = _buffer_address(out, True)
        if onbytes < count * self.out_row_bytes:
            raise ValueError("output holds %d bytes, %d ids need %d" % (onbytes, count, count * self.out_row_bytes))
        flags = (_RUN_IDS_DEVICE if idev else _RUN_IDS_HOST) | (_RUN_OUT_DEVICE if odev else _RUN_OUT_HOST)
        if strategy is not None:
            flags |= _choice("strategy", strategy, STRATEGIES) << 8
        if dead_is_error:
            flags |= _RUN_DEAD_ERROR
        handle = _stream_or_current(stream, out.device) if odev else _stream_handle(stream)
        if count_dead is None:
            count_dead = not odev
        if count_dead and odev and torch is not None and torch.cuda.is_current_stream_capturing():
            raise ValueError("count_dead=True synchronizes the stream and cannot be used inside a CUDA graph; "
                             "read last_dead_count() after a replay")
        dead = ctypes.c_uint64(0)
        _check(_L().eht_lookup_run(n.h, iaddr, itype, id_offset, count, oaddr, handle or None,
                                   flags, ctypes.byref(dead) if count_dead else None), "eht_lookup_run")
        del keep_i, keep_o, n
        return dead.value if count_dead else None

    def dequant(self, raw, out, stream=None):
        """Dequantizes raw Engram rows (264 bytes each, GPU memory, as a lookup with format="raw" writes
        them) into bf16 rows (512 bytes each, GPU memory) on the stream (default: torch's current one),
        with one kernel over the whole GPU (eht_lookup_dequant); the values a format="bf16" lookup gives.
        For lookups beside the model: look up raw on the side stream, dequantize on the model's stream
        right before the layer that reads the rows. Capturable; the row count is raw's."""
        n = self._use()
        self.table._live()
        raddr, rnbytes, rdev, keep_r = _buffer_address(raw, False)
        oaddr, onbytes, odev, keep_o = _buffer_address(out, True)
        rb = self.table.row_bytes
        if rnbytes % rb:
            raise ValueError("raw holds %d bytes, not whole rows of %d" % (rnbytes, rb))
        count = rnbytes // rb
        if onbytes < count * 512:
            raise ValueError("output holds %d bytes, %d rows need %d" % (onbytes, count, count * 512))
        if not (rdev and odev):
            raise ValueError("raw and out must be GPU memory")
        handle = _stream_or_current(stream, out.device)
        _check(_L().eht_lookup_dequant(n.h, raddr, count, oaddr, handle or None), "eht_lookup_dequant")
        del keep_r, keep_o, n

    def set_hotset(self, rows):
        """GPU hot-row cache (eht_lookup_set_hotset): rows (ints, or the path of an `eht hotset build`
        file) are copied into GPU memory and from then on served from there for GPU output. Once,
        before the first run; needs a GPU engine."""
        e = self._use()
        self.table._live()
        arr, buf, n = _hot_rows(rows)
        _check(_L().eht_lookup_set_hotset(e.h, buf, n), "eht_lookup_set_hotset")

    def update_hotset(self, rows):
        """Refreshes the hot set while serving (eht_lookup_update_hotset): rows (at most as many as
        set_hotset gave) are read now, on this thread or any other; the set goes in at the next run
        outside a CUDA graph, or at apply_hotset() between graph replays."""
        e = self._use()
        self.table._live()
        arr, buf, n = _hot_rows(rows)
        _check(_L().eht_lookup_update_hotset(e.h, buf, n), "eht_lookup_update_hotset")

    def apply_hotset(self, stream=None):
        """Applies a pending refresh on the stream (default: torch's current one); True if one was."""
        e = self._use()
        handle = _stream_or_current(stream)
        rc = _L().eht_lookup_hotset_apply(e.h, handle or None)
        _check(rc, "eht_lookup_hotset_apply")
        return rc == 1

    def adapt_hotset(self, period_ms=1000):
        """Lets the traffic choose the hot set (eht_lookup_hotset_adapt): sampled hits and misses are
        scored every period_ms and clearly hotter missed rows swapped in at a step boundary; 0 stops."""
        e = self._use()
        period_ms = _as_int("period_ms", period_ms, ctypes.c_uint)
        _check(_L().eht_lookup_hotset_adapt(e.h, period_ms), "eht_lookup_hotset_adapt")

    @property
    def hotset_hit_rate(self):
        """Sampled hit fraction of the last adapting period (None when not adapting)."""
        r = _L().eht_lookup_hotset_hit_rate(self._use().h)
        return None if r < 0 else r

    @property
    def hotset_refreshes(self):
        """Hot-set refreshes applied so far."""
        return int(_L().eht_lookup_hotset_refreshes(self._use().h))

    @property
    def hotset_rows(self):
        """Rows of the engine's hot set (0: none)."""
        return int(_L().eht_lookup_hotset_rows(self._use().h))

    def last_dead_count(self):
        """Dead ids of the last run (or graph replay), valid once the stream has passed it."""
        return int(_L().eht_lookup_last_dead_count(self._use().h))

    @property
    def background(self):
        """True when the engine runs in the background mode: asked for (background=True or
        EHT_LOOKUP_BACKGROUND=1) on a GPU whose driver has stream memory operations."""
        return bool(_L().eht_lookup_background(self._use().h))

    @property
    def last_strategy(self):
        e = self._use()
        self.table._live()
        return _L().eht_lookup_strategy_name(_L().eht_lookup_last_strategy(e.h)).decode()

    def close(self):
        """Drops the engine (freed once nothing else uses it: a run() in progress on another thread
        finishes first); run() then raises EhtError."""
        self._h = None
        self._n = None


class Table(_Closing):
    """One table (eht_table): rows x row_bytes in a tier, readable by the CPU and/or a GPU."""

    def __init__(self, handle, owner=None, owned=True):
        self._h = handle
        self._owned = owned
        # owner: the attachment's _Native (a served table is freed by eht_detach) or the wrapped
        # buffer; either outlives every engine and view of this table.
        self._n = _Native(handle, _L().eht_table_close if owned else None, owner)
        info = _TableInfo(size=ctypes.sizeof(_TableInfo))
        _check(_L().eht_table_get_info(handle, ctypes.byref(info)), "eht_table_get_info")
        self.name = info.name.decode() if info.name else ""
        self.tier = TIERS.get(info.tier, "none")
        self.rows, self.row_bytes = info.rows, info.row_bytes
        self.first_row, self.local_rows = info.first_row, info.local_rows
        self.host_ptr, self.device_ptr = info.host or 0, info.device_ptr
        self.device, self.numa_node, self.page_size = info.device, info.numa_node, info.page_size
        # Which copy this process maps (one per NUMA node: share_table(per_numa=True), eht serve
        # --per-numa): index, count, numa_node, writer (this rank fills it), pool_threads (the
        # server's CPU budget for this worker's lookup pool).
        cp = _TableCopy(size=ctypes.sizeof(_TableCopy))
        _check(_L().eht_table_copy(handle, ctypes.byref(cp)), "eht_table_copy")
        self.copy = {"index": cp.index, "count": cp.count, "numa_node": cp.numa_node, "writer": bool(cp.writer),
                     "pool_threads": cp.pool_threads}

    def __repr__(self):
        return "<eht.Table %s %dx%d %s%s>" % (self.name, self.rows, self.row_bytes, self.tier,
                                             "" if getattr(self, "_h", None) else " closed")

    @property
    def writable(self):
        """Whether this process may write the table's host memory (False for the tables a server
        hands out: mapped read-only, so a stray write cannot reach the other workers' rows)."""
        if not self.host_ptr:
            return True
        if "_writable" not in self.__dict__:
            self._writable = _mapping_writable(self.host_ptr)
        return self._writable

    def _live(self):
        """The handle, or EhtError once the table (or its attachment) is closed."""
        return self._use().h

    def _use(self):
        """The table's _Native, held by the caller for one call (see _Native); EhtError once closed."""
        n = getattr(self, "_n", None)  # one read: close() on another thread may clear it any time
        if n is None or not getattr(self, "_h", None):
            raise _closed("table %s" % getattr(self, "name", "?"))
        return n

    def host_view(self):
        """A read-only memoryview of the table's bytes (tiers with a host pointer); it keeps the
        table's memory mapped while it lives, even after close()."""
        self._live()
        if not self.host_ptr:
            raise EhtError(_errno.EINVAL, "table %s has no host mapping (tier %s)" % (self.name, self.tier))
        arr = (ctypes.c_uint8 * (self.local_rows * self.row_bytes)).from_address(self.host_ptr)
        arr._eht_keep = self._n
        return memoryview(arr).cast("B").toreadonly()  # "B", not ctypes' "<B": v[i] works

    def as_tensor(self, device=None, readonly=False):
        """The table as a zero-copy torch uint8 tensor [rows, row_bytes]: on the GPU (through
        __cuda_array_interface__) when it is GPU-readable and device is not 'cpu', else on the CPU.

        torch has no read-only tensors, and a write into a read-only table's memory kills the process
        (SIGSEGV on the CPU, an illegal address on the GPU). So for a table that is not writable
        (a served one) this raises EhtError (EROFS) unless readonly=True says the tensor is only
        read; host_view() (a read-only memoryview) and lookup() need no such promise."""
        self._live()
        torch = _torch()
        if torch is None:
            raise EhtError(_errno.ENOSYS, "PyTorch is not installed")
        if not readonly and not self.writable:
            raise EhtError(_errno.EROFS, "table %s is read-only in this process and torch tensors cannot be: "
                           "as_tensor(readonly=True) if it is only read (a write would kill the process), "
                           "else host_view() or lookup()" % self.name)
        shape = (self.local_rows, self.row_bytes)
        if self.device_ptr and device != "cpu":
            # torch takes no read-only flag here: the refusal above is the guard.
            holder = type("EhtCudaArray", (), {})()
            holder.__cuda_array_interface__ = {"shape": shape, "typestr": "|u1",
                                               "data": (self.device_ptr, False), "version": 3}
            holder.owner = self._n
            return torch.as_tensor(holder, device=torch.device("cuda", self.device))
        return torch.frombuffer(self.host_view(), dtype=torch.uint8).view(*shape)

    def cpu_page_size(self):
        """The CPU page size this process maps the rows with now (eht_table_page_size: 2 MiB on
        hugetlb or mostly-THP memory, else 4 KiB; the disk tier: its page cache's; 0 unknown). CPU
        gathers (HOST, AUTO) run about twice as fast on 2 MiB pages."""
        h = self._live()
        fn = getattr(_L(), "eht_table_page_size", None)  # optional: an older libeht has none
        return int(fn(h)) if fn else 0

    def hotset(self):
        """The hot set its server handed over with this table (eht_table_hotset: `eht serve --hotset`),
        as an array.array("q") of absolute row ids, most useful first; None when it has none. A GPU
        engine takes it as is: table.lookup_engine(device=0).set_hotset(table.hotset())."""
        tn = self._use()
        h = tn.h
        lib = _L()
        if not hasattr(lib, "eht_table_hotset"):
            return None
        rows = ctypes.POINTER(ctypes.c_int64)()
        n = ctypes.c_uint64(0)
        rc = lib.eht_table_hotset(h, ctypes.byref(rows), ctypes.byref(n))
        if rc == -_errno.ENOENT:
            return None
        _check(rc, "eht_table_hotset(%s)" % self.name)
        import array
        out = array.array("q")
        out.frombytes(ctypes.string_at(rows, 8 * n.value))
        return out

    def lookup_engine(self, **kw):
        """A Lookup bound to this table (keyword arguments as Lookup)."""
        return Lookup(self, **kw)

    def lookup(self, ids, out, strategy="auto", format="raw", device=None, **kw):
        """Looks ids up into out with an engine made once per (strategy, format, device) and kept;
        returns what Lookup.run returns (the dead count for host output; for GPU output None unless
        count_dead=True: see Lookup.run). Keyword arguments go to Lookup.run (id_offset, stream, ...).
        Works inside torch.cuda.graph for every strategy once the engine exists (make it with an
        eager call first: creating one calibrates AUTO on the GPU)."""
        self._live()
        torch = _torch()
        gpu = torch is not None and isinstance(out, torch.Tensor) and out.is_cuda
        dev = _device_index(device) if device is not None else (out.device.index if gpu else -1)
        if gpu and dev is None:
            dev = torch.cuda.current_device()
        if gpu and dev != out.device.index:
            raise ValueError("out is on cuda:%d, device asks for %d" % (out.device.index, dev))
        engines = self.__dict__.setdefault("_engines", {})
        key = (strategy, format, dev)
        if key not in engines:
            engines[key] = Lookup(self, strategy=strategy, format=format, device=dev if gpu else None,
                                  cpu_only=not gpu)
        return engines[key].run(ids, out, **kw)

    def close(self):
        """Closes the table for Python use (EhtError afterwards); the memory is released once no
        engine or view of it is left (a lookup running on another thread finishes first)."""
        for lk in self.__dict__.pop("_engines", {}).values():
            lk.close()
        self._h = None
        self._n = None


def wrap(buffer, rows, row_bytes, device=-1, name="memory", layout="packed"):
    """A table over caller-owned memory (bytearray, mmap, torch CPU tensor, ...), never copied (a
    read-only mmap included: it cannot be closed while the table lives); pinned for `device` when
    device >= 0.

    layout="split": an engine's own storage in vLLM's layout, weights [rows, 256] then scales
    [rows, row_bytes - 256] (one buffer holding both, or a (weights, scales) pair), wrapped without a
    copy (eht_table_wrap_split2). With device >= 0 both arrays become readable in place by that GPU
    (memory the engine pinned or cuMem-mapped already is used as it is, other memory is pinned), so
    every strategy serves it, raw and bf16, bit for bit as the packed table; memory the GPU cannot read
    leaves, as for a packed wrap, one warning and a table the CPU strategy serves (AUTO as HOST)."""
    if not isinstance(name, str) or "\0" in name:
        raise ValueError("name=%r: a str without NUL characters" % (name,))
    rows = _as_int("rows", rows, ctypes.c_uint64, lo=1)
    row_bytes = _as_int("row_bytes", row_bytes, ctypes.c_uint64, lo=1)
    if rows * row_bytes >= 1 << 63:
        raise ValueError("rows=%d x row_bytes=%d: over 2^63 bytes" % (rows, row_bytes))
    if layout == "split":
        return _wrap_split(buffer, rows, row_bytes, _device_index(device), name)
    if layout != "packed":
        raise ValueError("layout must be 'packed' or 'split', not %r" % (layout,))
    addr, nbytes, is_dev, keep = _buffer_address(buffer, False)
    if is_dev:
        raise ValueError("wrap takes host memory")
    if nbytes < rows * row_bytes:
        raise ValueError("buffer holds %d bytes, %d rows x %d need more" % (nbytes, rows, row_bytes))
    h = ctypes.c_void_p()
    _check(_L().eht_table_wrap(addr, rows, row_bytes, _device_index(device), name.encode(), ctypes.byref(h)),
           "eht_table_wrap")
    return Table(h, owner=(buffer, keep))


def _wrap_split(buffer, rows, row_bytes, device, name):
    wb = 256
    sb = row_bytes - wb
    if sb < 1:
        raise ValueError("layout='split' needs row_bytes > 256 (256 weight bytes, then the scales), not %d" % row_bytes)
    if isinstance(buffer, tuple):
        if len(buffer) != 2:
            raise ValueError("layout='split' takes one buffer or a (weights, scales) pair")
        waddr, wn, wdev, wkeep = _buffer_address(buffer[0], False)
        saddr, sn, sdev, skeep = _buffer_address(buffer[1], False)
        if wn < rows * wb or sn < rows * sb:
            raise ValueError("weights hold %d bytes and scales %d, %d rows need %d and %d"
                             % (wn, sn, rows, rows * wb, rows * sb))
        keep = (wkeep, skeep)
        dev = wdev or sdev
    else:
        waddr, n, dev, keep = _buffer_address(buffer, False)
        if n < rows * row_bytes:
            raise ValueError("buffer holds %d bytes, %d rows x %d need more" % (n, rows, row_bytes))
        saddr = waddr + rows * wb
    if dev:
        raise ValueError("wrap takes host memory")
    h = ctypes.c_void_p()
    # CPU_FALLBACK: as eht_table_wrap, memory the GPU cannot read is a warning and a CPU-only table.
    opts = _WrapSplitOpts(size=ctypes.sizeof(_WrapSplitOpts), flags=_WRAP_SPLIT_CPU_FALLBACK, device=device,
                          name=name.encode())
    _check(_L().eht_table_wrap_split2(waddr, wb, saddr, sb, rows, ctypes.byref(opts), ctypes.byref(h)),
           "eht_table_wrap_split2")
    return Table(h, owner=(buffer, keep))


def metrics():
    """The process's lookup counters since it started, over every engine (eht_metrics_read): a dict of
    calls, ids, calls_cpu / calls_gpu / calls_hot (by path), errors, call_ns, dead_cpu, rows_gathered,
    bytes_staged. Cheap: relaxed atomic counters that libeht keeps anyway."""
    m = _Metrics(size=ctypes.sizeof(_Metrics))
    _check(_L().eht_metrics_read(ctypes.byref(m)), "eht_metrics_read")
    return {n: getattr(m, n) for n in _METRIC_NAMES}


def metrics_prometheus(prefix="eht"):
    """metrics() in the Prometheus text exposition format (0.0.4), for an engine's own /metrics: each
    counter as PREFIX_lookup_NAME_total with HELP and TYPE lines."""
    m = metrics()
    lines = []
    for name in _METRIC_NAMES:
        full = "%s_lookup_%s_total" % (prefix, name)
        lines.append("# HELP %s %s" % (full, _METRIC_HELP[name]))
        lines.append("# TYPE %s counter" % full)
        lines.append("%s %d" % (full, m[name]))
    return "\n".join(lines) + "\n"


def _mapping_writable(addr):
    """Whether the mapping holding addr is writable (/proc/self/maps), True when unknown."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                span, perms = line.split(None, 2)[:2]
                lo, hi = (int(x, 16) for x in span.split("-"))
                if lo <= addr < hi:
                    return perms[1] == "w"
    except (OSError, ValueError):
        pass
    return True


class Client(_Closing):
    """An attachment to the tables that `eht serve` hosts under a key (eht_attach)."""

    def __init__(self, key, device=-1, timeout=60.0, rank=0, nranks=1, disk_rows=None, head_range=None, wait=False):
        lib = _L()
        if not hasattr(lib, "eht_attach"):
            raise EhtError(_errno.ENOSYS, "this libeht has no eht_attach")
        bkey = _key(key)
        if not isinstance(timeout, (int, float)) or not 0 < timeout <= 86400:
            raise ValueError("timeout=%r: give seconds in (0, 86400]" % (timeout,))
        device = _as_int("device", device, ctypes.c_int, lo=-1)
        nranks = _as_int("nranks", nranks, ctypes.c_uint32, lo=1)
        rank = _as_int("rank", rank, ctypes.c_uint32)
        if not 0 <= rank < nranks:
            raise ValueError("rank=%d of nranks=%d" % (rank, nranks))
        cb = _disk_rows_callback(disk_rows, head_range)
        # Without wait, a key nobody serves fails at once (ENOENT), as `eht worker` does, instead of
        # waiting out the timeout; a server that holds the key is waited for while it loads.
        opts = _AttachOpts(size=ctypes.sizeof(_AttachOpts), device=device, flags=_ATTACH_WAIT if wait else 0,
                           timeout_ms=max(1, int(timeout * 1000)), rank=rank, nranks=nranks)
        if cb is not None:
            opts.disk_rows = cb
        h = ctypes.c_void_p()
        rc = lib.eht_attach(bkey, ctypes.byref(opts), ctypes.byref(h))
        if rc < 0 and cb is not None and cb._errors:
            raise cb._errors[0]
        if rc == -_errno.ENOENT and not wait:
            _check(rc, "eht_attach(%s) (attach(..., wait=True) waits for a server)" % key)
        _check(rc, "eht_attach(%s)" % key)
        self._n = _Native(h, lib.eht_detach)
        self._h = h
        self.key = key
        self.tables = {}
        for i in range(lib.eht_client_table_count(h)):
            th = ctypes.c_void_p()
            _check(lib.eht_client_table(h, i, ctypes.byref(th)), "eht_client_table")
            t = Table(th, owner=self._n, owned=False)
            self.tables[t.name] = t

    def check(self):
        """Raises EhtError when the server is gone."""
        n = getattr(self, "_n", None)  # held for the call: a close() meanwhile takes effect after it
        if n is None or not getattr(self, "_h", None):
            raise _closed("attachment %s" % getattr(self, "key", "?"))
        _check(_L().eht_client_check(n.h), "eht_client_check")

    def close(self):
        """Detaches: its tables raise EhtError from now on; the mappings go once no table view or
        engine of them is left and no lookup on them is running (at once when there is none)."""
        for t in getattr(self, "tables", {}).values():
            t.close()
        self._h = None
        self._n = None

    def __repr__(self):
        return "<eht.Client %s %d table(s)%s>" % (getattr(self, "key", "?"), len(getattr(self, "tables", {})),
                                                 "" if getattr(self, "_h", None) else " closed")


def attach(key, device=-1, timeout=60.0, rank=0, nranks=1, disk_rows=None, head_range=None, wait=False):
    """Attaches to the tables served under `key`; see Client. device: an ordinal, "cuda:N", a
    torch.device, or -1 / None / "cpu" for none. No server of key: EhtError (ENOENT) at once, or
    with wait=True a wait of up to timeout seconds for one (then ETIMEDOUT). Disk-tier tables map
    rank's share of rows (an even split of nranks, SGLang's rule), or with head_range=(eht.engram.Layout,
    tp, rank) each Engram layer's rank head range (vLLM's rule), or what disk_rows(name, rows) ->
    (first, count) says."""
    return Client(key, device=_device_index(device), timeout=timeout, rank=rank, nranks=nranks,
                  disk_rows=disk_rows, head_range=head_range, wait=wait)

from .group import Group, Region, SharedTable, node_id  # noqa: E402 (needs the names above)
from .shared import ECSharedRegion, fabric_host_memory_supported, share_host_table  # noqa: E402
from . import disk, engram  # noqa: E402


def __getattr__(name):
    # eht.torch (the torch op) loads on first use, and only where torch is installed: `import eht`
    # never imports torch.
    if name == "torch":
        import importlib  # noqa: PLC0415
        return importlib.import_module(".torch", __name__)
    raise AttributeError("module 'eht' has no attribute %r" % name)
