# SPDX-License-Identifier: Apache-2.0
"""eht.group: node-local groups from a job-wide coordinator, and tables shared once per node.

    g = eht.Group.from_torch()                  # torch.distributed default group (gloo or nccl)
    g = eht.Group.from_coordinator(coord)       # any object with all_gather_object(obj) -> list, or
                                                # broadcast_object(obj, src=0) (vLLM's GroupCoordinator:
                                                # its cpu_group when torch.distributed is up)
    st = g.share_table(nbytes)                  # host-NUMA -> pinned region -> region, or None
    cpu, gpu = st.cpu, st.gpu                   # uint8 views (gpu None unless GPU-readable)
    views = g.share_host_table(nbytes)          # host-NUMA only: (cpu, gpu) views, or None

The coordinator is used once: every rank gathers (node identity, a fresh key); ranks with the same
identity (eht_node_id: $EHT_NODE_ID, else host name and boot id) form a node, whose first rank's key
names the node's eht group. From then on eht's own Unix-socket group carries every node collective
and passes descriptors, with its deadline (timeout) and prompt failure when a peer dies. Nothing
crosses nodes after that first gather: each node decides its tier and makes its own copy.
"""
import ctypes
import errno as _errno
import logging
import secrets

from . import TIERS, Table, _bind
from ._args import _torch
from ._native import EhtError, _check, _closed, _Closing, _L, _Native
from ._ints import as_int, struct

__all__ = ["Group", "SharedTable", "Region", "node_id"]

_log = logging.getLogger("eht")

_TIER_CAP_SHARE = 0x1  # EHT_TIER_CAP_SHARE


def _share_tier(tier):
    """eht_share_opts.tier of a name: 0 for "auto", else a tier the library shares (by its registry:
    eht_tier_caps), never a list of our own."""
    names = {TIERS[t]: t for t in TIERS if t and _L().eht_tier_caps(t) & _TIER_CAP_SHARE}
    if tier == "auto":
        return 0
    if not isinstance(tier, str) or tier not in names:
        raise ValueError("tier %r: \"auto\" or one of %s" % (tier, ", ".join(names)))
    return names[tier]


_GROUP_BROKEN = (_errno.ECONNRESET, _errno.ETIMEDOUT, _errno.EPROTO)
_REGION_UNLINK_WHEN_MAPPED, _REGION_OPEN_ONLY, _REGION_NUMA_DEVICE = 0x2, 0x4, 0x40


class _GroupOpts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("timeout_ms", ctypes.c_uint32),
                ("allowed_gid", ctypes.c_uint32), ("adapter", ctypes.c_void_p)]


class _ShareOpts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("tier", ctypes.c_int),
                ("device", ctypes.c_int), ("row_bytes", ctypes.c_uint64), ("chunk_bytes", ctypes.c_uint64),
                ("reserve_bytes", ctypes.c_uint64), ("name", ctypes.c_char_p), ("cancel", ctypes.c_void_p),
                ("numa_node", ctypes.c_int)]


_SHARE_PER_NUMA = 0x10


class _RegionOpts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("dir", ctypes.c_char_p),
                ("rows", ctypes.c_uint64), ("row_bytes", ctypes.c_uint64), ("numa_node", ctypes.c_int),
                ("device", ctypes.c_int), ("populate_threads", ctypes.c_uint), ("timeout_s", ctypes.c_double),
                ("gid", ctypes.c_uint32), ("expected_peers", ctypes.c_uint)]


def _sigs():
    P, VP, I, U64, SZ, CP = ctypes.POINTER, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_char_p
    return [
        ("eht_node_id", I, [CP, SZ]),
        ("eht_group_create", I, [CP, I, I, P(_GroupOpts), P(VP)]),
        ("eht_group_destroy", None, [VP]),
        ("eht_group_rank", I, [VP]), ("eht_group_size", I, [VP]),
        ("eht_group_barrier", I, [VP]),
        ("eht_group_broadcast", I, [VP, VP, SZ]),
        ("eht_group_allgather", I, [VP, VP, SZ, VP]),
        ("eht_table_share", I, [U64, VP, P(_ShareOpts), P(VP)]),
        ("eht_host_table_share", I, [U64, VP, P(_ShareOpts), P(VP)]),
        ("eht_region_open", I, [CP, U64, P(_RegionOpts), P(VP)]),
        ("eht_region_mark_ready", I, [VP]),
        ("eht_region_pin", I, [VP, I]),
        ("eht_region_data", VP, [VP]), ("eht_region_bytes", U64, [VP]),
        ("eht_region_device_ptr", U64, [VP]), ("eht_region_is_pinned", ctypes.c_bool, [VP]),
        ("eht_region_is_creator", ctypes.c_bool, [VP]),
        ("eht_region_close", I, [P(VP)]),
        ("eht_region_unlink", I, [CP, CP]),
        ("eht_region_unlink_if_same", I, [VP]),
        ("eht_region_path", CP, [VP]),
    ]


_lib = _bind.lazy(_sigs)


def node_id():
    """This process's node identity (eht_node_id): "sim.<EHT_NODE_ID>" or "host.<name>.<boot id>"."""
    buf = ctypes.create_string_buffer(128)
    _check(_lib().eht_node_id(buf, len(buf)), "eht_node_id")
    return buf.value.decode()


def _region_close(h):
    _lib().eht_region_close(ctypes.byref(h))


def _cpu_view(addr, nbytes, owner):
    """A writable uint8 view of nbytes at addr: a torch tensor when torch is installed, else a
    memoryview. The view keeps owner (what keeps the memory mapped) alive."""
    arr = (ctypes.c_uint8 * nbytes).from_address(addr)
    arr._eht_owner = owner
    torch = _torch()
    if torch is not None:
        return torch.frombuffer(arr, dtype=torch.uint8)
    return memoryview(arr).cast("B")


def _gpu_view(device_ptr, nbytes, device, owner):
    torch = _torch()
    if torch is None or not device_ptr:
        return None
    holder = type("EhtCudaArray", (), {})()
    holder.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (device_ptr, False),
                                       "version": 3}
    holder.owner = owner  # torch keeps the holder, the holder keeps the table mapped
    # Name the device: an index-less "cuda" would make torch copy the table.
    return torch.as_tensor(holder, device=torch.device("cuda", device))


class SharedTable(_Closing):
    """A table shared by a node's ranks: .table (eht.Table), .tier, .cpu (writable uint8 view: torch
    tensor, or memoryview without torch), .gpu (torch CUDA view of the same bytes, None when the tier
    is not GPU-readable or torch is missing). Either view keeps the table
    mapped: this rank's mapping goes when the SharedTable and every view are gone."""

    def __init__(self, table, nbytes):
        self.table, self.tier, self.nbytes = table, table.tier, nbytes
        self.cpu = _cpu_view(table.host_ptr, nbytes, table) if table.host_ptr else None
        self.gpu = _gpu_view(table.device_ptr, nbytes, table.device, table)

    def close(self):
        """Drops this object's references; the mapping stays while a view returned earlier lives."""
        self.cpu = self.gpu = self.table = None

    def __repr__(self):
        return "<eht.SharedTable %d bytes %s>" % (self.nbytes, self.tier)


class Region(_Closing):
    """A shared /dev/shm region (eht_region): made by one process, opened by others by name.

    Region(name, nbytes) creates it, or opens it when it exists (waiting until it is ready);
    open_only=True never creates. Without expected_peers the file is kept for later opens (until
    remove() by its creator, Region.unlink(name) or `eht regions gc` once unused and half-built);
    with expected_peers it is unlinked once that many processes mapped it, so nothing outlives them.
    A file under the name that another user owns, or that others may write, is refused (EhtError
    naming its owner and mode), never mapped. .view() is a writable uint8 view; .pin(device)
    registers it for GPU DMA; .close() lets go of it: the mapping goes (and a region never marked
    ready is removed, by its creating process only) once no view of it is left, so a view never
    outlives its memory. .path: its file."""

    def __init__(self, name, nbytes, open_only=False, expected_peers=0, timeout=60.0, device=-1):
        lib = _lib()
        if not isinstance(name, str) or "\0" in name:
            raise ValueError("name=%r: a str without NUL characters" % (name,))
        nbytes = as_int("nbytes", nbytes, ctypes.c_uint64)
        device = as_int("device", device, ctypes.c_int, lo=-1)
        flags = _REGION_OPEN_ONLY if open_only else 0
        flags |= _REGION_UNLINK_WHEN_MAPPED if expected_peers else 0x1  # else EHT_REGION_KEEP
        if device >= 0:
            flags |= _REGION_NUMA_DEVICE
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout <= 86400:
            raise ValueError("timeout=%r: give seconds in (0, 86400]" % (timeout,))
        opts = struct(_RegionOpts, size=ctypes.sizeof(_RegionOpts), flags=flags, device=max(device, 0),
                      timeout_s=float(timeout), expected_peers=expected_peers)
        h = ctypes.c_void_p()
        _check(lib.eht_region_open(name.encode(), nbytes, ctypes.byref(opts), ctypes.byref(h)),
               "eht_region_open(%s)" % name)
        self.name = name
        self.path = lib.eht_region_path(h).decode(errors="surrogateescape")
        # Unmapped by the last holder: this object, a view (each keeps the _Native), or a call.
        self._n = _Native(h, _region_close)
        self._h = h
        self.creator = bool(lib.eht_region_is_creator(h))
        self.nbytes = lib.eht_region_bytes(h)

    def _use(self):
        n = getattr(self, "_n", None)  # one read: close() on another thread may clear it any time
        if n is None or not n.h:
            raise _closed("region %s" % getattr(self, "name", "?"))
        return n

    def mark_ready(self):
        """Creator: the contents are complete; openers waiting in Region() proceed."""
        n = self._use()
        _check(_lib().eht_region_mark_ready(n.h), "eht_region_mark_ready(%s)" % self.name)

    def pin(self, device=0):
        """Registers the region for DMA to GPU device; returns True when pinned, False when it stays
        usable unpinned (no GPU, not enough lockable memory)."""
        n = self._use()
        return _lib().eht_region_pin(n.h, as_int("device", device, ctypes.c_int, lo=0)) == 0

    @property
    def pinned(self):
        n = getattr(self, "_n", None)
        return bool(n is not None and n.h and _lib().eht_region_is_pinned(n.h))

    def view(self):
        """A writable uint8 view of the region; it keeps the mapping alive, also after close()."""
        n = self._use()
        return _cpu_view(_lib().eht_region_data(n.h), self.nbytes, n)

    def remove(self):
        """Creator: removes the file now, if its name is still this region's file (another process's
        region made under the name since is left alone; eht_region_unlink_if_same); the mapping
        stays. Returns True when removed, False when the name names another file or none. EhtError
        (EPERM) in a process that did not create it, a forked child of the creator included."""
        n = self._use()
        rc = _lib().eht_region_unlink_if_same(n.h)
        if rc == -_errno.ESTALE:
            return False
        _check(rc, "Region(%s).remove" % self.name)
        return True

    def close(self):
        """Lets go of the region; EhtError from its methods from now on. Views taken earlier stay
        valid: the region is unmapped (and removed when never marked ready) when the last one goes."""
        self._h = None
        self._n = None

    def __repr__(self):
        return "<eht.Region %s %d bytes%s%s>" % (self.name, self.nbytes, " creator" if self.creator else "",
                                                "" if getattr(self, "_h", None) else " closed")

    @staticmethod
    def unlink(name, directory=None):
        """Removes a kept region's file by name, whoever made it (eht_region_unlink)."""
        if not isinstance(name, str) or "\0" in name:
            raise ValueError("name=%r: a str without NUL characters" % (name,))
        _check(_lib().eht_region_unlink(name.encode(), directory.encode() if directory else None),
               "eht_region_unlink(%s)" % name)


class _TorchCoordinator:
    """all_gather_object over a torch.distributed process group (gloo: CPU, no GPU needed)."""

    def __init__(self, pg):
        import torch.distributed as dist  # noqa: PLC0415 (optional dependency)
        self._dist, self._pg = dist, pg
        self.rank_in_group = dist.get_rank(pg)
        self.world_size = dist.get_world_size(pg)

    def all_gather_object(self, obj):
        out = [None] * self.world_size
        self._dist.all_gather_object(out, obj, group=self._pg)
        return out


def _gather(coord, obj, size):
    """Every rank's obj, in rank order, through all_gather_object; None when the coordinator offers
    only broadcast_object (vLLM's TP groups: src=0 only, so no gather can be built from it)."""
    if hasattr(coord, "all_gather_object"):
        return list(coord.all_gather_object(obj))
    if hasattr(coord, "broadcast_object"):
        return None
    raise TypeError("coordinator needs all_gather_object(obj) or broadcast_object(obj, src=0)")


def _torch_cpu_group(coord):
    """vLLM's GroupCoordinator carries its gloo group as cpu_group: gathered over with
    torch.distributed when that is initialised (else None)."""
    pg = getattr(coord, "cpu_group", None)
    if pg is None or hasattr(coord, "all_gather_object"):
        return None
    torch = _torch()
    if torch is None:
        return None
    try:
        import torch.distributed as dist  # noqa: PLC0415 (optional dependency)
    except ImportError:
        return None
    if not (dist.is_available() and dist.is_initialized()):
        return None
    return _TorchCoordinator(pg)


def _coord_rank_size(coord):
    rank = getattr(coord, "rank_in_group", getattr(coord, "rank", None))
    size = getattr(coord, "world_size", None)
    rank = rank() if callable(rank) else rank
    size = size() if callable(size) else size
    if rank is None or size is None:
        raise TypeError("coordinator needs rank_in_group (or rank) and world_size")
    return int(rank), int(size)


class Group(_Closing):
    """The ranks of this node, split from a job-wide coordinator (see the module doc).

    .rank, .size: within the node; .node_index, .node_count: nodes numbered by their first rank;
    .world_rank, .world_size: the coordinator's; .node_id: this node's identity."""

    def __init__(self, coordinator, timeout=300.0):
        lib = _lib()
        self.world_rank, self.world_size = _coord_rank_size(coordinator)
        self.node_id = node_id()
        mine = (self.node_id, "eht-" + secrets.token_hex(8))
        entries = _gather(coordinator, mine, self.world_size)
        if entries is None:
            # broadcast_object(obj, src=0) only: rank 0's identity and key, and every rank must be on
            # rank 0's node (a gather, hence a split into nodes, needs all_gather_object or cpu_group).
            first = coordinator.broadcast_object(mine if self.world_rank == 0 else None, src=0)
            if not isinstance(first, (tuple, list)) or len(first) != 2:
                raise EhtError(_errno.EPROTO, "coordinator's broadcast_object(obj, src=0) returned %r" % (first,))
            if tuple(first)[0] != self.node_id:
                raise EhtError(_errno.EPROTO, "rank %d is on node %s, rank 0 on %s: a coordinator with only "
                               "broadcast_object(src=0) cannot split ranks into nodes (give one with "
                               "all_gather_object, or its gloo cpu_group with torch.distributed)"
                               % (self.world_rank, self.node_id, tuple(first)[0]))
            entries = [tuple(first)] * self.world_size
            entries[self.world_rank] = (self.node_id, first[1])
        members = [i for i, e in enumerate(entries) if e[0] == self.node_id]
        if self.world_rank not in members:
            raise EhtError(_errno.EPROTO, "coordinator's gather lacks this rank %d" % self.world_rank)
        leaders = sorted({min(i for i, e in enumerate(entries) if e[0] == nid) for nid, _ in entries})
        self.node_index, self.node_count = leaders.index(members[0]), len(leaders)
        self.rank, self.size = members.index(self.world_rank), len(members)
        self.key = entries[members[0]][1]
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout <= 86400:
            raise ValueError("timeout=%r: give seconds in (0, 86400]" % (timeout,))
        opts = _GroupOpts(size=ctypes.sizeof(_GroupOpts), timeout_ms=int(timeout * 1000))
        h = ctypes.c_void_p()
        _check(lib.eht_group_create(self.key.encode(), self.rank, self.size, ctypes.byref(opts),
                                    ctypes.byref(h)),
               "eht_group_create(node %s, rank %d of %d)" % (self.node_id, self.rank, self.size))
        self._h = h

    @classmethod
    def from_coordinator(cls, coordinator, timeout=300.0):
        """From an object with rank_in_group (or rank), world_size and all_gather_object(obj) -> list
        or broadcast_object(obj, src=0) -> obj. vLLM's GroupCoordinator (no all_gather_object; on TP
        groups broadcast_object takes only src=0): through its gloo cpu_group when torch.distributed
        is initialised, else through broadcast_object(src=0), which needs every rank on one node."""
        return cls(_torch_cpu_group(coordinator) or coordinator, timeout=timeout)

    @classmethod
    def from_torch(cls, process_group=None, timeout=300.0):
        """From a torch.distributed process group (None: the default group), already initialised."""
        return cls(_TorchCoordinator(process_group), timeout=timeout)

    def __repr__(self):
        return "<eht.Group node %d/%d (%s) rank %d/%d>" % (self.node_index, self.node_count, self.node_id,
                                                           self.rank, self.size)

    # ---- node collectives (eht's group: deadlines, prompt failure when a peer dies) ----

    def barrier(self):
        _check(_lib().eht_group_barrier(self._h), "eht_group_barrier")

    def broadcast(self, data=b""):
        """Node rank 0's bytes on every rank of the node (each rank passes a buffer of the same length)."""
        buf = ctypes.create_string_buffer(bytes(data), len(data))
        _check(_lib().eht_group_broadcast(self._h, buf, len(data)), "eht_group_broadcast")
        return buf.raw

    def allgather(self, data):
        """Every node rank's bytes (equal lengths), in node-rank order."""
        n = len(data)
        src = ctypes.create_string_buffer(bytes(data), n)
        out = ctypes.create_string_buffer(n * self.size)
        _check(_lib().eht_group_allgather(self._h, src, n, out), "eht_group_allgather")
        return [out.raw[i * n:(i + 1) * n] for i in range(self.size)]

    # ---- sharing ----

    def _share(self, fn, what, nbytes, tier, row_bytes, name, device, per_numa=False):
        nbytes = as_int("nbytes", nbytes, ctypes.c_uint64)
        row_bytes = as_int("row_bytes", row_bytes, ctypes.c_uint64, lo=1)
        if nbytes <= 0 or nbytes % row_bytes:
            raise ValueError("nbytes %d must be a positive multiple of row_bytes %d" % (nbytes, row_bytes))
        if not isinstance(name, str) or "\0" in name:
            raise ValueError("name=%r: a str without NUL characters" % (name,))
        opts = struct(_ShareOpts, size=ctypes.sizeof(_ShareOpts), tier=_share_tier(tier),
                      device=as_int("device", device, ctypes.c_int, lo=-1), row_bytes=row_bytes,
                      name=name.encode(), flags=_SHARE_PER_NUMA if per_numa else 0)
        h = ctypes.c_void_p()
        rc = fn(nbytes, self._h, ctypes.byref(opts), ctypes.byref(h))
        if rc == 0:
            return SharedTable(Table(h), nbytes)
        msg = _L().eht_last_error().decode(errors="replace")
        if -rc in _GROUP_BROKEN:
            raise EhtError(-rc, "%s: node group failed: %s" % (what, msg))
        if self.rank == 0:
            _log.warning("eht: %s of %d bytes on node %s: no tier could be shared (%s)", what, nbytes,
                         self.node_id, msg)
        return None

    def share_table(self, nbytes, tier="auto", row_bytes=1, name="table", device=-1, per_numa=False):
        """Collective over the node: one table of nbytes, host-NUMA, else a pinned region, else a
        region (or only `tier`), the same tier on every rank; "auto" tries the pinned region first on
        a GPU node whose huge page pool has room for the table (2 MiB CPU pages). Returns a SharedTable, or None on every
        rank of the node when no tier works (rank 0 logs why). Raises EhtError when the group itself
        fails (a rank died: ECONNRESET; stalled past the timeout: ETIMEDOUT).
        per_numa=True: one copy per NUMA node of the ranks (each rank's GPU's node), each rank
        mapping its node's copy; one copy (with a warning) when they do not fit. st.table.copy says
        which, and "writer" is True on the one rank that must fill it (rank 0 with one copy)."""
        return self._share(_lib().eht_table_share, "share_table", nbytes, tier, row_bytes, name, device, per_numa)

    def share_host_table(self, nbytes, device=-1, name="table"):
        """Host-NUMA only: (cpu, gpu) uint8 views of one table on every rank of
        the node, or None on every rank (then share through a region: share_table)."""
        st = self._share(_lib().eht_host_table_share, "share_host_table", nbytes, "host-numa", 1, name, device)
        return None if st is None else (st.cpu, st.gpu)

    def share_region(self, name, nbytes, fill=None, pin_device=None, timeout=60.0):
        """Collective: node rank 0 creates the region "<name>.<node key>" (so that simulated nodes on
        one machine never meet), calls fill(view) and marks it ready; the others open it; each rank
        pins it for pin_device when given. The file is unlinked once every rank mapped it. Returns
        the Region on every rank, or None on every rank when any rank failed (rank 0 logs why)."""
        full = "%s.%s" % (name, self.key)
        region, err = None, ""
        if self.rank == 0:
            try:
                region = Region(full, nbytes, expected_peers=self.size, timeout=timeout)
                if fill is not None:
                    fill(region.view())
                region.mark_ready()
            except Exception as exc:  # noqa: BLE001 (any failure is reported to every rank)
                err = str(exc) or type(exc).__name__
        status = self.broadcast(err.encode()[:400].ljust(400, b"\0")).rstrip(b"\0").decode(errors="replace")
        if self.rank != 0 and not status:
            try:
                region = Region(full, nbytes, open_only=True, expected_peers=self.size, timeout=timeout)
            except Exception as exc:  # noqa: BLE001
                err = str(exc) or type(exc).__name__
        if pin_device is not None and region is not None:
            region.pin(pin_device)
        errs = [e.rstrip(b"\0").decode(errors="replace")
                for e in self.allgather(err.encode()[:400].ljust(400, b"\0"))]
        bad = next(((i, e) for i, e in enumerate(errs) if e), None) or ((0, status) if status else None)
        if bad:
            if region is not None:
                region.close()
            if self.rank == 0:
                _log.warning("eht: share_region %s on node %s: rank %d: %s", full, self.node_id, *bad)
            return None
        return region

    def close(self):
        if getattr(self, "_h", None):
            _lib().eht_group_destroy(self._h)
            self._h = None

    __del__ = close
