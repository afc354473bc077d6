# SPDX-License-Identifier: Apache-2.0
"""eht: Engram host tables from Python.

ctypes over libeht (no compiled extension, standard library only). Where PyTorch is importable,
tables and lookup outputs can be zero-copy torch tensors on the right device.

    import eht
    client = eht.attach("mykey", device=0)        # tables served by `eht serve ... --key mykey`
    table = client.tables["layers.1.engram.embed"]
    dead = table.lookup(ids, out)                  # ids: torch/array; out: torch/bytearray
    lk = table.lookup_engine(strategy="auto", format="bf16")   # or an engine of one's own

libeht is found through $EHT_LIB, then next to this package (../../build/libeht.so), then the
system's library path.
"""
import ctypes
import ctypes.util
import errno as _errno
import os

__all__ = ["EhtError", "version", "wrap", "attach", "Table", "Lookup", "Client",
           "TIERS", "STRATEGIES", "FORMATS"]

TIERS = {0: "none", 1: "host-numa", 2: "region-pinned", 3: "region", 4: "disk", 5: "memory"}
STRATEGIES = {"auto": 0, "direct": 1, "sorted": 2, "host": 3}
FORMATS = {"raw": 0, "bf16": 1}
ENGRAM_ROW_BYTES = 264

_RUN_IDS_HOST, _RUN_IDS_DEVICE, _RUN_OUT_HOST, _RUN_OUT_DEVICE = 0x2, 0x4, 0x8, 0x10
_RUN_DEAD_ERROR = 0x1
_LOOKUP_CPU_ONLY = 0x1


class EhtError(OSError):
    """A failed libeht call: errno plus libeht's message (naming file, tensor, offset or limit)."""


def _find_library():
    env = os.environ.get("EHT_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "..", "..", "build", "libeht.so"),
                 os.path.join(here, "libeht.so")):
        if os.path.exists(cand):
            return cand
    found = ctypes.util.find_library("eht")
    if found:
        return found
    raise EhtError(_errno.ENOENT, "libeht.so not found: build with `make` or set EHT_LIB")


class _TableInfo(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("tier", ctypes.c_int), ("rows", ctypes.c_uint64),
                ("row_bytes", ctypes.c_uint64), ("first_row", ctypes.c_uint64),
                ("local_rows", ctypes.c_uint64), ("host", ctypes.c_void_p),
                ("device_ptr", ctypes.c_uint64), ("device", ctypes.c_int),
                ("numa_node", ctypes.c_int), ("page_size", ctypes.c_uint64),
                ("name", ctypes.c_char_p)]


class _LookupOpts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("strategy", ctypes.c_int),
                ("format", ctypes.c_int), ("device", ctypes.c_int), ("threads", ctypes.c_uint),
                ("max_batch", ctypes.c_uint64), ("staging_bytes", ctypes.c_uint64),
                ("numa_node", ctypes.c_int), ("spin_us", ctypes.c_uint)]


class _AttachOpts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("device", ctypes.c_int),
                ("timeout_ms", ctypes.c_uint32), ("rank", ctypes.c_uint32),
                ("nranks", ctypes.c_uint32)]


_lib = None


def _L():
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(_find_library())
    P, U64, I, U32, VP = ctypes.POINTER, ctypes.c_uint64, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p
    sigs = {
        "eht_version": (ctypes.c_char_p, []),
        "eht_last_error": (ctypes.c_char_p, []),
        "eht_tier_name": (ctypes.c_char_p, [I]),
        "eht_table_wrap": (I, [VP, U64, U64, I, ctypes.c_char_p, P(VP)]),
        "eht_table_get_info": (I, [VP, P(_TableInfo)]),
        "eht_table_close": (I, [VP]),
        "eht_lookup_create": (I, [VP, P(_LookupOpts), P(VP)]),
        "eht_lookup_run": (I, [VP, VP, I, ctypes.c_int64, U64, VP, VP, ctypes.c_uint, P(U64)]),
        "eht_lookup_last_strategy": (I, [VP]),
        "eht_lookup_strategy_name": (ctypes.c_char_p, [I]),
        "eht_lookup_destroy": (None, [VP]),
    }
    optional = {
        "eht_attach": (I, [ctypes.c_char_p, P(_AttachOpts), P(VP)]),
        "eht_client_table_count": (ctypes.c_size_t, [VP]),
        "eht_client_table": (I, [VP, ctypes.c_size_t, P(VP)]),
        "eht_client_check": (I, [VP]),
        "eht_detach": (I, [VP]),
    }
    for name, (res, args) in list(sigs.items()) + list(optional.items()):
        try:
            fn = getattr(lib, name)
        except AttributeError:
            if name in optional:
                continue
            raise
        fn.restype, fn.argtypes = res, args
    _lib = lib
    return lib


def _check(rc, what):
    if rc < 0:
        msg = _L().eht_last_error().decode(errors="replace")
        raise EhtError(-rc, "%s: %s" % (what, msg or os.strerror(-rc)))
    return rc


def version():
    """libeht's version string."""
    return _L().eht_version().decode()


def _torch():
    try:
        import torch  # noqa: PLC0415 (optional dependency)
        return torch
    except ImportError:
        return None


def _buffer_address(obj, writable):
    """(address, nbytes, is_device, keepalive) of a torch tensor or a buffer-protocol object."""
    torch = _torch()
    if torch is not None and isinstance(obj, torch.Tensor):
        if not obj.is_contiguous():
            raise ValueError("tensor must be contiguous")
        return obj.data_ptr(), obj.numel() * obj.element_size(), obj.is_cuda, obj
    mv = memoryview(obj)
    if writable and mv.readonly:
        raise ValueError("output buffer is read-only")
    if not mv.contiguous:
        raise ValueError("buffer must be contiguous")
    mv = mv.cast("B")
    if mv.nbytes == 0:
        return 0, 0, False, mv
    if mv.readonly:
        arr = (ctypes.c_char * mv.nbytes).from_buffer_copy(mv)
    else:
        arr = (ctypes.c_char * mv.nbytes).from_buffer(mv)
    return ctypes.addressof(arr), mv.nbytes, False, (mv, arr)


def _id_type(obj, nbytes, count):
    torch = _torch()
    if torch is not None and isinstance(obj, torch.Tensor):
        if obj.dtype == torch.int32:
            return 0
        if obj.dtype == torch.int64:
            return 1
        raise TypeError("ids must be int32 or int64, not %s" % obj.dtype)
    fmt = getattr(memoryview(obj), "format", "B")
    if fmt in ("i", "l") and memoryview(obj).itemsize == 4:
        return 0
    if fmt in ("q", "l", "Q") and memoryview(obj).itemsize == 8:
        return 1
    raise TypeError("ids must be int32 or int64 (array.array('i') or ('q'), or a torch tensor)")


class Lookup:
    """A lookup engine bound to one table (eht_lookup): fixed buffers, asynchronous on a stream."""

    def __init__(self, table, strategy="auto", format="raw", device=None, threads=0,
                 max_batch=0, cpu_only=False):
        self.table = table
        self.format = format
        opts = _LookupOpts(size=ctypes.sizeof(_LookupOpts), strategy=STRATEGIES[strategy],
                           format=FORMATS[format], device=-1 if device is None else device,
                           threads=threads, max_batch=max_batch, numa_node=-1,
                           flags=_LOOKUP_CPU_ONLY if cpu_only else 0)
        h = ctypes.c_void_p()
        _check(_L().eht_lookup_create(table._h, ctypes.byref(opts), ctypes.byref(h)), "eht_lookup_create")
        self._h = h

    @property
    def out_row_bytes(self):
        return 512 if self.format == "bf16" else self.table.row_bytes

    def run(self, ids, out, id_offset=0, stream=None, strategy=None, dead_is_error=False):
        """Looks ids up into out; returns the number of dead ids (zero rows)."""
        iaddr, inbytes, idev, keep_i = _buffer_address(ids, False)
        itype = _id_type(ids, inbytes, None)
        count = inbytes // (4 if itype == 0 else 8)
        oaddr, onbytes, odev, keep_o = _buffer_address(out, True)
        if onbytes < count * self.out_row_bytes:
            raise ValueError("output holds %d bytes, %d ids need %d" % (onbytes, count, count * self.out_row_bytes))
        flags = (_RUN_IDS_DEVICE if idev else _RUN_IDS_HOST) | (_RUN_OUT_DEVICE if odev else _RUN_OUT_HOST)
        if strategy is not None:
            flags |= STRATEGIES[strategy] << 8
        if dead_is_error:
            flags |= _RUN_DEAD_ERROR
        if stream is None and odev:
            torch = _torch()
            stream = torch.cuda.current_stream().cuda_stream if torch is not None else 0
        dead = ctypes.c_uint64(0)
        _check(_L().eht_lookup_run(self._h, iaddr, itype, id_offset, count, oaddr, stream or None,
                                   flags, ctypes.byref(dead)), "eht_lookup_run")
        del keep_i, keep_o
        return dead.value

    @property
    def last_strategy(self):
        return _L().eht_lookup_strategy_name(_L().eht_lookup_last_strategy(self._h)).decode()

    def close(self):
        if getattr(self, "_h", None):
            _L().eht_lookup_destroy(self._h)
            self._h = None

    __del__ = close


class Table:
    """One table (eht_table): rows x row_bytes in a tier, readable by the CPU and/or a GPU."""

    def __init__(self, handle, owner=None, owned=True):
        self._h = handle
        self._owner = owner  # keeps memory or the attach session alive
        self._owned = owned
        info = _TableInfo(size=ctypes.sizeof(_TableInfo))
        _check(_L().eht_table_get_info(handle, ctypes.byref(info)), "eht_table_get_info")
        self.name = info.name.decode() if info.name else ""
        self.tier = TIERS.get(info.tier, "none")
        self.rows, self.row_bytes = info.rows, info.row_bytes
        self.first_row, self.local_rows = info.first_row, info.local_rows
        self.host_ptr, self.device_ptr = info.host or 0, info.device_ptr
        self.device, self.numa_node, self.page_size = info.device, info.numa_node, info.page_size

    def __repr__(self):
        return "<eht.Table %s %dx%d %s>" % (self.name, self.rows, self.row_bytes, self.tier)

    def host_view(self):
        """A read-only memoryview of the table's bytes (tiers with a host pointer)."""
        if not self.host_ptr:
            raise EhtError(_errno.EINVAL, "table %s has no host mapping (tier %s)" % (self.name, self.tier))
        arr = (ctypes.c_uint8 * (self.local_rows * self.row_bytes)).from_address(self.host_ptr)
        return memoryview(arr).toreadonly()

    def as_tensor(self, device=None):
        """The table as a zero-copy torch uint8 tensor [rows, row_bytes]: on the GPU (through
        __cuda_array_interface__) when it is GPU-readable and device is not 'cpu', else on the CPU."""
        torch = _torch()
        if torch is None:
            raise EhtError(_errno.ENOSYS, "PyTorch is not installed")
        shape = (self.local_rows, self.row_bytes)
        if self.device_ptr and device != "cpu":
            # torch takes no read-only flag here (nor does the seed): treat the tensor as read-only.
            holder = type("EhtCudaArray", (), {})()
            holder.__cuda_array_interface__ = {"shape": shape, "typestr": "|u1",
                                               "data": (self.device_ptr, False), "version": 3}
            holder.owner = self
            return torch.as_tensor(holder, device=torch.device("cuda", self.device))
        return torch.frombuffer(self.host_view(), dtype=torch.uint8).view(*shape)

    def lookup_engine(self, **kw):
        """A Lookup bound to this table (keyword arguments as Lookup)."""
        return Lookup(self, **kw)

    def lookup(self, ids, out, strategy="auto", format="raw", **kw):
        """Looks ids up into out with an engine made once per (strategy, format) and kept; returns
        the number of dead ids. Keyword arguments go to Lookup.run (id_offset, stream, ...)."""
        engines = self.__dict__.setdefault("_engines", {})
        if (strategy, format) not in engines:
            torch = _torch()
            gpu = torch is not None and isinstance(out, torch.Tensor) and out.is_cuda
            engines[strategy, format] = Lookup(self, strategy=strategy, format=format,
                                               cpu_only=not gpu)
        return engines[strategy, format].run(ids, out, **kw)

    def close(self):
        for lk in self.__dict__.pop("_engines", {}).values():
            lk.close()
        if getattr(self, "_h", None) and self._owned:
            _L().eht_table_close(self._h)
        self._h = None

    __del__ = close


def wrap(buffer, rows, row_bytes, device=-1, name="memory"):
    """A table over caller-owned memory (bytearray, mmap, torch CPU tensor, ...); pinned for
    `device` when device >= 0."""
    addr, nbytes, is_dev, keep = _buffer_address(buffer, False)
    if is_dev:
        raise ValueError("wrap takes host memory")
    if nbytes < rows * row_bytes:
        raise ValueError("buffer holds %d bytes, %d rows x %d need more" % (nbytes, rows, row_bytes))
    h = ctypes.c_void_p()
    _check(_L().eht_table_wrap(addr, rows, row_bytes, device, name.encode(), ctypes.byref(h)), "eht_table_wrap")
    return Table(h, owner=(buffer, keep))


class Client:
    """An attachment to the tables that `eht serve` hosts under a key (eht_attach)."""

    def __init__(self, key, device=-1, timeout=60.0, rank=0, nranks=1):
        lib = _L()
        if not hasattr(lib, "eht_attach"):
            raise EhtError(_errno.ENOSYS, "this libeht has no eht_attach")
        opts = _AttachOpts(size=ctypes.sizeof(_AttachOpts), device=device,
                           timeout_ms=int(timeout * 1000), rank=rank, nranks=nranks)
        h = ctypes.c_void_p()
        _check(lib.eht_attach(key.encode(), ctypes.byref(opts), ctypes.byref(h)), "eht_attach(%s)" % key)
        self._h = h
        self.tables = {}
        for i in range(lib.eht_client_table_count(h)):
            th = ctypes.c_void_p()
            _check(lib.eht_client_table(h, i, ctypes.byref(th)), "eht_client_table")
            t = Table(th, owner=self, owned=False)
            self.tables[t.name] = t

    def check(self):
        """Raises EhtError when the server is gone."""
        _check(_L().eht_client_check(self._h), "eht_client_check")

    def close(self):
        if getattr(self, "_h", None):
            for t in self.tables.values():
                t.close()  # its engines; the table itself belongs to the attachment
            _L().eht_detach(self._h)
            self._h = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def attach(key, device=-1, timeout=60.0, rank=0, nranks=1):
    """Attaches to the tables served under `key`; see Client."""
    return Client(key, device=device, timeout=timeout, rank=rank, nranks=nranks)
