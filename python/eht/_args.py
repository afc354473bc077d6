# SPDX-License-Identifier: Apache-2.0
"""The arguments the package's calls take, made into what libeht's take: torch tensors or buffers as
addresses, ids' integer type, devices as CUDA ordinals, streams as CUstream handles, and names chosen
from a table. torch is optional: looked for once, on first use."""
import ctypes

from ._ints import as_int as _as_int

_torch_mod = False  # not looked for yet; None: not installed


def _torch():
    """torch where installed, else None: looked for once (a failed import costs hundreds of
    microseconds, and the CPU path asks on every call)."""
    global _torch_mod
    if _torch_mod is False:
        try:
            import torch  # noqa: PLC0415 (optional dependency)
            _torch_mod = torch
        except ImportError:
            _torch_mod = None
    return _torch_mod


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
        # ctypes takes no address of read-only memory but by a copy, and a copy of a read-only mmap
        # wrapped as a table is the whole table: the buffer protocol gives the address itself.
        export = _ReadOnlyExport(mv)
        return export.address, mv.nbytes, False, (mv, export)
    arr = (ctypes.c_char * mv.nbytes).from_buffer(mv)
    return ctypes.addressof(arr), mv.nbytes, False, (mv, arr)


class _PyBuffer(ctypes.Structure):
    """CPython's Py_buffer (stable ABI since 3.11, the same layout since 3.3)."""
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


class _ReadOnlyExport:
    """A contiguous read-only buffer held exported (PyObject_GetBuffer) while this lives: its address
    stays valid, and an mmap under it refuses to close or resize (BufferError) until it is gone."""

    _get = _release = None

    def __init__(self, mv):
        cls = _ReadOnlyExport
        if cls._get is None:  # the C API's signatures, declared once
            api = ctypes.pythonapi
            api.PyObject_GetBuffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
            api.PyObject_GetBuffer.restype = ctypes.c_int
            api.PyBuffer_Release.argtypes = [ctypes.POINTER(_PyBuffer)]
            api.PyBuffer_Release.restype = None
            cls._get, cls._release = api.PyObject_GetBuffer, api.PyBuffer_Release
        self._view = _PyBuffer()
        if cls._get(mv, ctypes.byref(self._view), 0) != 0:  # PyBUF_SIMPLE: contiguous bytes
            raise ValueError("buffer must be contiguous")
        self.address = self._view.buf

    def __del__(self):
        view = getattr(self, "_view", None)
        if view is not None and view.obj:
            _ReadOnlyExport._release(ctypes.byref(view))


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


def _device_index(device):
    """None, an int, "cuda", "cuda:N", "cpu" or a torch.device -> CUDA ordinal or -1 (CPU)."""
    if device is None:
        return -1
    if isinstance(device, bool):
        raise TypeError("device must be an int, a string like 'cuda:0' or a torch.device, not bool")
    if isinstance(device, int):
        if device < -1:
            raise ValueError("device must be a CUDA ordinal >= 0 (or -1 for none), not %d" % device)
        return _as_int("device", device, ctypes.c_int)
    torch = _torch()
    if torch is not None and isinstance(device, torch.device):
        device = str(device)
    if isinstance(device, str):
        if device == "cpu":
            return -1
        if device == "cuda":
            # torch's current device where torch has CUDA and a GPU; else 0, as without torch (a torch
            # built without CUDA raises in current_device: the library names a missing GPU itself)
            return torch.cuda.current_device() if torch is not None and torch.cuda.is_available() else 0
        if device.startswith("cuda:") and device[5:].isdigit():
            return _as_int("device", int(device[5:]), ctypes.c_int)
        raise ValueError("device must look like 'cuda', 'cuda:0' or 'cpu', not %r" % device)
    raise TypeError("device must be an int, a string like 'cuda:0' or a torch.device, not %s"
                    % type(device).__name__)


def _stream_handle(stream):
    """A CUstream as an int: None (0), an int handle, or a torch.cuda.Stream / ExternalStream."""
    if stream is None:
        return 0
    if isinstance(stream, bool):
        raise TypeError("stream must be a torch.cuda.Stream or an int CUstream handle, not bool")
    if isinstance(stream, int):
        return _as_int("stream", stream, ctypes.c_uint64)
    handle = getattr(stream, "cuda_stream", None)
    if isinstance(handle, int):
        return handle
    raise TypeError("stream must be a torch.cuda.Stream or an int CUstream handle, not %s"
                    % type(stream).__name__)


def _stream_or_current(stream, device=None):
    """stream as a CUstream int (_stream_handle); None: torch's current stream of device (of the
    current device when None, where torch has CUDA), 0 without torch."""
    if stream is not None:
        return _stream_handle(stream)
    torch = _torch()
    if torch is None or (device is None and not torch.cuda.is_available()):
        return 0
    return torch.cuda.current_stream(device).cuda_stream


def _choice(name, value, table):
    if not isinstance(value, str):
        raise TypeError("%s must be a string (%s), not %s" % (name, ", ".join(table), type(value).__name__))
    if value not in table:
        raise ValueError("unknown %s %r (one of: %s)" % (name, value, ", ".join(table)))
    return table[value]
