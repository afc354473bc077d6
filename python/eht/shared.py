# SPDX-License-Identifier: Apache-2.0
"""eht.shared: the seed's calls with the seed's signatures, over eht's groups and regions.

    views = eht.share_host_table(num_bytes, group)   # (cpu, gpu) uint8 views on every rank, or None
    eht.fabric_host_memory_supported()               # host-NUMA cuMem exports FABRIC handles here
    region = eht.ECSharedRegion(engine_id, num_blocks, block_size_bytes)   # the encoder cache blocks

`group` is vLLM's GroupCoordinator (its gloo `cpu_group` through torch.distributed when that is
initialised; else its broadcast_object, of which only src=0 is used, as vLLM's TP groups allow), a
torch.distributed process group, any coordinator eht.Group.from_coordinator takes, or an eht.Group.
"""
import ctypes
import errno as _errno
import functools
import json as _json
import logging
import os
import threading
import weakref

from ._args import _torch
from ._native import _check, _L
from ._ints import as_int
from .group import Group, _lib

__all__ = ["share_host_table", "fabric_host_memory_supported", "as_group", "ECSharedRegion"]

_log = logging.getLogger("eht")


def _current_device(device):
    """device None: torch's current CUDA device (or -1 without torch / CUDA); else an ordinal."""
    if device is not None:
        from ._args import _device_index
        return _device_index(device)
    torch = _torch()
    if torch is not None and torch.cuda.is_available():
        return torch.cuda.current_device()
    return -1


def as_group(group, timeout=300.0):
    """(eht.Group, made_here) for any group share_host_table accepts."""
    if isinstance(group, Group):
        return group, False
    torch = _torch()
    dist = None
    if torch is not None:
        try:
            import torch.distributed as dist  # noqa: PLC0415 (optional dependency)
        except ImportError:
            dist = None
    if dist is not None and dist.is_available() and dist.is_initialized():
        pg = getattr(group, "cpu_group", None)
        if pg is not None:  # vLLM's GroupCoordinator: gather over its gloo group
            return Group.from_torch(pg, timeout=timeout), True
        if isinstance(group, dist.ProcessGroup):
            return Group.from_torch(group, timeout=timeout), True
    return Group.from_coordinator(group, timeout=timeout), True


def share_host_table(num_bytes, group, device=None, name="table"):
    """Maps one table on every rank of a node-local group, or returns None on all of them (then
    share through /dev/shm). Rank 0 creates it in host-NUMA cuMem on the GPU's NUMA node and the
    others import its handles (FABRIC where permitted, else POSIX fds). Returns (cpu, gpu) uint8
    views (torch tensors; without torch the cpu view is a memoryview and gpu None); either view keeps
    the mapping alive. device: None = torch's current CUDA device."""
    if isinstance(num_bytes, bool) or not isinstance(num_bytes, int):
        raise TypeError("num_bytes must be an int, not %s" % type(num_bytes).__name__)
    if num_bytes <= 0:
        raise ValueError("num_bytes must be > 0, not %d" % num_bytes)
    g, made = as_group(group)
    try:
        return g.share_host_table(num_bytes, device=_current_device(device), name=name)
    finally:
        if made:
            g.close()  # the table does not need the group once mapped


@functools.lru_cache(maxsize=None)
def _fabric(device):
    lib = _L()
    if not hasattr(lib, "eht_probe_json"):
        return False, "this libeht has no eht_probe_json"
    lib.eht_probe_json.restype = ctypes.c_int
    lib.eht_probe_json.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    out = ctypes.c_void_p()
    if lib.eht_probe_json(ctypes.byref(out)) < 0:
        return False, "eht_probe_json failed"
    try:
        probe = _json.loads(ctypes.string_at(out.value).decode())
    finally:
        free = ctypes.CDLL(None).free
        free.argtypes = [ctypes.c_void_p]
        free(out)
    for d in probe.get("devices", []):
        if d.get("ordinal") == device:
            return d.get("fabric_export") == "yes", d.get("fabric_why") or ""
    return False, probe.get("gpu_status") or "no CUDA device %d" % device


def fabric_host_memory_supported(device=None):
    """Whether host-NUMA cuMem allocations can export FABRIC handles here (a real one-granule
    create + export, cached per device). device: None = torch's current CUDA device, else 0."""
    dev = _current_device(device)
    ok, why = _fabric(dev if dev >= 0 else 0)
    if not ok:
        _log.info("eht: host-NUMA cuMem FABRIC handles are unavailable (%s)", why)
    return ok


class ECSharedRegion:
    """A flat shared region of num_blocks x block_size_bytes for encoder-cache blocks, mapped by every
    TP worker (and by a scheduler process that is no torch.distributed rank): the seed's class over
    an eht region ("vllm_ec_<engine_id>" in /dev/shm, or dir).

    The first process creates it, populates its pages (MADV_POPULATE_WRITE on several threads; where
    the kernel refuses it, fallocate and touched pages) and marks it ready; the others wait (timeout
    seconds) for it to be complete and map the same bytes. A file under the name that another user
    owns, or that others may write, is refused (EhtError, naming its owner and mode), never mapped.
    .blocks: an int8 tensor [num_blocks, block_size_bytes] over the mapping (a memoryview of that
    shape without torch); writable by every process. The seed's attributes stay: _mmap_path (the
    region's file, there until the creator's cleanup), _is_creator, _is_pinned, _blocks_ptr,
    _blocks_nbytes. pin_memory() registers this process's mapping for DMA (per process; a no-op
    without a GPU).

    cleanup() removes the file, only in the process that created it (a forked child's object never
    does) and only while the name is still its file (a region made again under the name after a
    restart is left alone); it then drops this object's mapping. Every step tolerates errors, and a
    view still alive keeps the mapping (never a dangling view). The creator's cleanup also runs when
    the object is collected and, at the latest, when the interpreter exits normally (a finalizer
    registered at creation), so a creator that never calls it leaves nothing behind."""

    def __init__(self, engine_id, num_blocks, block_size_bytes, timeout=60.0, dir=None):
        for n, v in (("num_blocks", num_blocks), ("block_size_bytes", block_size_bytes)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError("%s must be an int, not %s" % (n, type(v).__name__))
            if v <= 0:
                raise ValueError("%s must be > 0, not %d" % (n, v))
        nbytes = as_int("num_blocks x block_size_bytes", num_blocks * block_size_bytes, ctypes.c_uint64, hi=1 << 50)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout <= 86400:
            raise ValueError("timeout=%r: give seconds in (0, 86400]" % (timeout,))
        self.engine_id, self.num_blocks, self.block_size_bytes = str(engine_id), num_blocks, block_size_bytes
        self.name = "vllm_ec_%s" % self.engine_id
        if "\0" in self.name or (dir is not None and "\0" in str(dir)):
            raise ValueError("engine_id and dir must not contain NUL characters")
        self.dir = dir
        self._mu = threading.Lock()
        self._pinned = False
        from .group import _RegionOpts  # noqa: PLC0415
        lib = _lib()
        opts = _RegionOpts(size=ctypes.sizeof(_RegionOpts), flags=0x1,  # EHT_REGION_KEEP: the creator unlinks
                           dir=os.fsencode(dir) if dir else None, rows=num_blocks, row_bytes=block_size_bytes,
                           numa_node=-1, device=-1, timeout_s=float(timeout))
        h = ctypes.c_void_p()
        _check(lib.eht_region_open(self.name.encode(), nbytes, ctypes.byref(opts), ctypes.byref(h)),
               "ECSharedRegion(%s)" % self.name)
        m = _Mapping(h)  # every view holds it: the mapping goes with the last of them
        st = _RegionState(m, self.name, bool(lib.eht_region_is_creator(h)))
        self._mmap_path = lib.eht_region_path(h).decode(errors="surrogateescape")
        # Registered now, while every module is whole: the creator's cleanup runs when this object
        # goes or at interpreter exit (weakref.finalize's atexit), with nothing left to import.
        self._fin = weakref.finalize(self, _teardown, st, lib, os.getpid, _log)
        self._st = st
        try:
            if st.creator:
                _check(lib.eht_region_mark_ready(h), "ECSharedRegion(%s): mark ready" % self.name)
                _log.info("eht: created EC region %s (%.2f MiB)", self.name, nbytes / (1 << 20))
            else:
                _log.info("eht: opened EC region %s", self.name)
        except BaseException:
            self.cleanup()
            raise
        self.blocks = self._view()
        self._blocks_ptr = m.data
        self._blocks_nbytes = nbytes

    def _view(self):
        m = self._st.map
        arr = (ctypes.c_int8 * (self.num_blocks * self.block_size_bytes)).from_address(m.data)
        arr._eht_owner = m
        torch = _torch()
        if torch is not None:
            return torch.frombuffer(arr, dtype=torch.int8).view(self.num_blocks, self.block_size_bytes)
        return memoryview(arr).cast("B").cast("b", (self.num_blocks, self.block_size_bytes))

    @property
    def is_creator(self):
        """True in the process that created the region, until its cleanup (never in a forked child)."""
        st = self._st
        return st.creator and st.pid == os.getpid()

    _is_creator = is_creator  # the seed's name

    @property
    def _is_pinned(self):
        return self._pinned and self._st.map is not None

    def pin_memory(self, device=None):
        """Registers this process's mapping for DMA to the GPU (torch's current device unless given).
        No-op when already pinned or without a GPU; a failure is logged and leaves it unpinned."""
        with self._mu:
            m = self._st.map
            if self._pinned or m is None:
                return
            dev = _current_device(device)
            if dev < 0:
                torch = _torch()
                if torch is None or not torch.cuda.is_available():
                    return
                dev = 0
            rc = _lib().eht_region_pin(m.h, as_int("device", dev, ctypes.c_int))
            if rc < 0:
                _log.warning("eht: pinning EC region %s failed (%s): transfers still work, unpinned",
                             self.name, _L().eht_last_error().decode(errors="replace"))
                return
            self._pinned = True

    def cleanup(self):
        """Tears down: removes the file (the creating process only, and only while the name is still
        its file), unpins and unmaps once no view is left. Never raises; safe to call twice."""
        self._fin()
        self.__dict__.pop("blocks", None)
        self._pinned = False


class _RegionState:
    """What the creator's cleanup needs, apart from the ECSharedRegion (its finalizer must not hold
    the object): the mapping, the name, and the pid of the process that created it."""

    def __init__(self, m, name, creator):
        self.map, self.name, self.creator, self.pid = m, name, creator, os.getpid()


def _teardown(st, lib, getpid, log):
    """The one cleanup of an ECSharedRegion (weakref.finalize runs it once: cleanup(), collection or
    interpreter exit). Uses only what it was given: at exit no import may run. Logs one line, never
    a traceback, never raises."""
    m, st.map = st.map, None
    creator, st.creator = st.creator and st.pid == getpid(), False
    try:
        if creator and m is not None:
            rc = lib.eht_region_unlink_if_same(m.h)
            if rc == 0:
                log.info("eht: removed EC region %s", st.name)
            elif rc == -_errno.ESTALE:  # removed already, or another process's region now
                log.debug("eht: EC cleanup: %s", lib.eht_last_error().decode(errors="replace"))
            else:
                log.warning("eht: EC cleanup: %s", lib.eht_last_error().decode(errors="replace"))
    except Exception as exc:  # noqa: BLE001 (teardown tolerates every error, in one line)
        log.warning("eht: EC region %s: cleanup: %s", st.name, exc)
    # m goes here: the mapping (and pin) with it once no view holds it


class _Mapping:
    """One process's eht region mapping; closed (unpinned, unmapped) when the last holder goes."""

    def __init__(self, h):
        self.h = h
        self.data = _lib().eht_region_data(h)
        self._close = _lib().eht_region_close  # bound now: __del__ may run at interpreter exit

    def __del__(self):
        h, self.h = self.h, None
        if h:
            try:
                self._close(ctypes.byref(h))
            except Exception:  # noqa: BLE001 (interpreter shutdown)
                pass
