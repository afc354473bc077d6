# SPDX-License-Identifier: Apache-2.0
"""libeht through ctypes: finding and loading it with every signature bound, its errors as EhtError,
its log lines into logging's "eht" logger, the structs and flags its calls take, and the lifetime of
its handles (_Native). The public API is the package's (eht/__init__.py)."""
import atexit as _atexit
import ctypes
import errno as _errno
import logging as _logging
import os

from ._libfind import candidates as _lib_candidates, find_library as _find_lib

_METRIC_NAMES = ("calls", "ids", "calls_cpu", "calls_gpu", "calls_hot", "errors", "call_ns", "dead_cpu",
                 "rows_gathered", "bytes_staged")

# Flags of eht.h (test_python_flags checks each against it).
_RUN_IDS_HOST, _RUN_IDS_DEVICE, _RUN_OUT_HOST, _RUN_OUT_DEVICE = 0x2, 0x4, 0x8, 0x10
_RUN_DEAD_ERROR = 0x1
_LOOKUP_CPU_ONLY = 0x1
_LOOKUP_GPU_DEDUP = 0x4
_LOOKUP_NO_HOTSET = 0x8
_LOOKUP_BACKGROUND = 0x10
_LOOKUP_BG_PUSH = 0x20
_LOOKUP_BG_STREAM = 0x40
_ATTACH_WAIT = 0x2


class EhtError(OSError):
    """A failed libeht call: errno plus libeht's message (naming file, tensor, offset or limit)."""


EhtError.__module__ = "eht"  # (raised and caught as eht.EhtError: its name in tracebacks and pickles)


def _find_library():
    found = _find_lib()
    if found:
        return found
    raise EhtError(_errno.ENOENT, "libeht.so not found (looked in %s and the system's library path): "
                   "`make install`, or set EHT_LIB to the file" % ", ".join(_lib_candidates()))


class _TableInfo(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("tier", ctypes.c_int), ("rows", ctypes.c_uint64),
                ("row_bytes", ctypes.c_uint64), ("first_row", ctypes.c_uint64),
                ("local_rows", ctypes.c_uint64), ("host", ctypes.c_void_p),
                ("device_ptr", ctypes.c_uint64), ("device", ctypes.c_int),
                ("numa_node", ctypes.c_int), ("page_size", ctypes.c_uint64),
                ("name", ctypes.c_char_p)]


class _TableCopy(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("index", ctypes.c_int), ("count", ctypes.c_int),
                ("numa_node", ctypes.c_int), ("writer", ctypes.c_int), ("pool_threads", ctypes.c_uint)]


class _LookupOpts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("strategy", ctypes.c_int),
                ("format", ctypes.c_int), ("device", ctypes.c_int), ("threads", ctypes.c_uint),
                ("max_batch", ctypes.c_uint64), ("staging_bytes", ctypes.c_uint64),
                ("numa_node", ctypes.c_int), ("spin_us", ctypes.c_uint),
                ("hotset", ctypes.c_void_p), ("hotset_rows", ctypes.c_uint64),
                ("hotset_max_bytes", ctypes.c_uint64), ("sm_cap", ctypes.c_uint)]


class _Metrics(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32)] + [(n, ctypes.c_uint64) for n in _METRIC_NAMES]


class _WrapSplitOpts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("device", ctypes.c_int),
                ("name", ctypes.c_char_p)]


_WRAP_SPLIT_CPU_FALLBACK = 0x1
_DISK_ROWS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64,
                                 ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64))


class _AttachOpts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("device", ctypes.c_int),
                ("timeout_ms", ctypes.c_uint32), ("rank", ctypes.c_uint32),
                ("nranks", ctypes.c_uint32), ("disk_rows", _DISK_ROWS_FN), ("disk_rows_arg", ctypes.c_void_p)]


_lib = None


# libeht's log lines (warnings by default, EHT_LOG sets the level) go to the logging logger "eht".
_LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_LOG_LEVELS = (_logging.ERROR, _logging.WARNING, _logging.INFO, _logging.DEBUG, 5)


def _log_line(level, message, arg):
    try:
        _logging.getLogger("eht").log(_LOG_LEVELS[level] if 0 <= level < len(_LOG_LEVELS) else _logging.WARNING,
                                      "%s", message.decode(errors="replace"))
    except Exception:  # noqa: BLE001 (never raise into C)
        pass


_log_cb = _LOG_FN(_log_line)


class _Closing:
    """Handles are context managers: `with eht.attach(key) as c:`, `with table.lookup_engine() as lk:`."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _L():
    global _lib
    if _lib is not None:
        return _lib
    path = _find_library()
    lib = ctypes.CDLL(path)
    lib._eht_path = path
    P, U64, I, VP = ctypes.POINTER, ctypes.c_uint64, ctypes.c_int, ctypes.c_void_p
    sigs = {
        "eht_version": (ctypes.c_char_p, []),
        "eht_last_error": (ctypes.c_char_p, []),
        "eht_tier_name": (ctypes.c_char_p, [I]),
        "eht_tier_count": (I, []),
        "eht_tier_caps": (ctypes.c_uint, [I]),
        "eht_table_wrap": (I, [VP, U64, U64, I, ctypes.c_char_p, P(VP)]),
        "eht_table_get_info": (I, [VP, P(_TableInfo)]),
        "eht_table_copy": (I, [VP, P(_TableCopy)]),
        "eht_table_close": (I, [VP]),
        "eht_lookup_create": (I, [VP, P(_LookupOpts), P(VP)]),
        "eht_lookup_run": (I, [VP, VP, I, ctypes.c_int64, U64, VP, VP, ctypes.c_uint, P(U64)]),
        "eht_lookup_last_strategy": (I, [VP]),
        "eht_lookup_background": (I, [VP]),
        "eht_lookup_dequant": (I, [VP, VP, U64, VP, VP]),
        "eht_lookup_last_dead_count": (U64, [VP]),
        "eht_lookup_strategy_name": (ctypes.c_char_p, [I]),
        "eht_lookup_strategy_count": (I, []),
        "eht_hotset_read": (I, [ctypes.c_char_p, P(P(ctypes.c_int64)), P(U64)]),
        "eht_hotset_free": (None, [P(ctypes.c_int64)]),
        "eht_lookup_destroy": (None, [VP]),
        "eht_table_wrap_split": (I, [VP, U64, VP, U64, U64, ctypes.c_char_p, P(VP)]),
        "eht_table_wrap_split2": (I, [VP, U64, VP, U64, U64, P(_WrapSplitOpts), P(VP)]),
        "eht_metrics_read": (I, [P(_Metrics)]),
    }
    optional = {
        "eht_attach": (I, [ctypes.c_char_p, P(_AttachOpts), P(VP)]),
        "eht_client_table_count": (ctypes.c_size_t, [VP]),
        "eht_client_table": (I, [VP, ctypes.c_size_t, P(VP)]),
        "eht_client_check": (I, [VP]),
        "eht_detach": (I, [VP]),
        "eht_serve_status": (I, [ctypes.c_char_p, P(ctypes.c_void_p)]),
        "eht_lookup_set_hotset": (I, [VP, P(ctypes.c_int64), U64]),
        "eht_lookup_hotset_rows": (U64, [VP]),
        "eht_lookup_update_hotset": (I, [VP, P(ctypes.c_int64), U64]),
        "eht_lookup_hotset_apply": (I, [VP, VP]),
        "eht_lookup_hotset_adapt": (I, [VP, ctypes.c_uint]),
        "eht_lookup_hotset_hit_rate": (ctypes.c_double, [VP]),
        "eht_lookup_hotset_refreshes": (U64, [VP]),
        "eht_table_hotset": (I, [VP, P(P(ctypes.c_int64)), P(U64)]),
        "eht_table_page_size": (U64, [VP]),
        "eht_settings_reload": (I, []),
    }
    for name, (res, args) in list(sigs.items()) + list(optional.items()):
        try:
            fn = getattr(lib, name)
        except AttributeError:
            if name in optional:
                continue
            raise
        fn.restype, fn.argtypes = res, args
    if hasattr(lib, "eht_log_set_callback"):
        lib.eht_log_set_callback.restype, lib.eht_log_set_callback.argtypes = None, [_LOG_FN, ctypes.c_void_p]
        lib.eht_log_set_callback(_log_cb, None)
        # Back to stderr before the interpreter goes: a library thread may still log.
        _atexit.register(lib.eht_log_set_callback, _LOG_FN(), None)
    _lib = lib
    return lib


def _check(rc, what):
    if rc < 0:
        msg = _L().eht_last_error().decode(errors="replace")
        raise EhtError(-rc, "%s: %s" % (what, msg or os.strerror(-rc)))
    return rc


class _Native:
    """One native handle, freed when the last Python object that can reach it goes: a table keeps
    its attachment's _Native alive, an engine its table's, a view of rows its table's. close()
    on the Python objects only drops references, so no use of freed memory is possible. A call into
    libeht holds its object's _Native in a local for the call's length (ctypes lets go of the GIL
    meanwhile): a close() from another thread then takes effect once the running call returns."""

    def __init__(self, handle, free, owner=None):
        self.h = handle
        self._free = free
        self._owner = owner  # a _Native (or buffer) that must outlive this one

    def __del__(self):
        h, self.h = self.h, None
        if h and self._free is not None:
            try:
                self._free(h)
            except Exception:  # noqa: BLE001 (interpreter shutdown: the library may be gone)
                pass


def _key(key):
    if not isinstance(key, str):
        raise TypeError("key must be a str, not %s" % type(key).__name__)
    if "\0" in key:
        raise ValueError("key %r contains a NUL character" % key)
    return key.encode()


def _closed(what):
    return EhtError(_errno.EBADF, "%s is closed" % what)


def _free(p):
    """free() of memory libeht malloc'd for the caller."""
    free = ctypes.CDLL(None).free
    free.argtypes = [ctypes.c_void_p]
    free(p)
