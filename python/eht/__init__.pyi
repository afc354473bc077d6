# SPDX-License-Identifier: Apache-2.0
"""Type hints of the eht module's public API (the implementation: eht/__init__.py, over the binding in
eht/_native.py and the argument conversions in eht/_args.py)."""
import array
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

__version__: str
TIERS: Dict[int, str]
STRATEGIES: Mapping[str, int]  # as the loaded libeht lists them
FORMATS: Dict[str, int]
ENGRAM_ROW_BYTES: int

# ids: a torch int32/int64 tensor (CPU or CUDA), or a buffer of int32/int64 (array.array('i'/'q')).
# out: a torch tensor (CPU or CUDA) or a writable buffer (bytearray, memoryview, numpy array).
Buffer = Any
Device = Union[int, str, Any, None]  # an ordinal, "cuda:N", "cpu", a torch.device, or None

class EhtError(OSError):
    """A failed libeht call: errno plus libeht's message (naming file, tensor, offset or limit)."""

class IntRangeError(ValueError, OverflowError):
    """An int argument outside what its C parameter holds (names the argument and its limit)."""

def version() -> str:
    """libeht's version string (the loaded library's; __version__ is this package's)."""

def library_path() -> str:
    """The libeht.so file this module loaded."""

def status(key: Optional[str] = None) -> Union[Dict[str, Any], List[Dict[str, Any]]]:
    """What running servers of this user hold: key, checkpoint, tables, workers, readiness."""

class Lookup:
    """A lookup engine bound to one table: fixed buffers, asynchronous on a CUDA stream."""
    table: "Table"
    format: str
    def __init__(self, table: "Table", strategy: str = "auto", format: str = "raw", device: Device = None,
                 threads: int = 0, max_batch: int = 0, cpu_only: bool = False, gpu_dedup: bool = False,
                 sm_cap: int = 0, background: bool = False, spin_us: int = 0,
                 no_hotset: bool = False, push: Optional[bool] = None) -> None: ...
    @property
    def out_row_bytes(self) -> int:
        """Bytes per output row: 512 for bf16, the table's row_bytes for raw."""
    def run(self, ids: Buffer, out: Buffer, id_offset: int = 0, stream: Optional[Any] = None,
            strategy: Optional[str] = None, dead_is_error: bool = False,
            count_dead: Optional[bool] = None) -> Optional[int]:
        """Looks ids up into out; returns the number of dead ids (their rows are zeros) for host output,
        for GPU output only with count_dead=True (else None: read last_dead_count() later)."""
    def dequant(self, raw: Buffer, out: Buffer, stream: Optional[Any] = None) -> None:
        """Raw Engram rows (GPU memory) into bf16 rows (GPU memory) on the stream, one kernel over the GPU."""
    def set_hotset(self, rows: Union[Sequence[int], str, "os.PathLike[str]"]) -> None:
        """GPU hot-row cache: these rows (or an `eht hotset build` file) served from GPU memory."""
    def update_hotset(self, rows: Union[Sequence[int], str, "os.PathLike[str]"]) -> None:
        """Refreshes the hot set while serving; it goes in at the next run or at apply_hotset()."""
    def apply_hotset(self, stream: Optional[Any] = None) -> bool:
        """Applies a pending refresh on the stream; True if one was."""
    def adapt_hotset(self, period_ms: int = 1000) -> None:
        """Lets the traffic choose the hot set, rescored every period_ms (0 stops)."""
    @property
    def hotset_hit_rate(self) -> Optional[float]:
        """Sampled hit fraction of the last adapting period (None when not adapting)."""
    @property
    def hotset_refreshes(self) -> int:
        """Hot-set refreshes applied so far."""
    @property
    def hotset_rows(self) -> int:
        """Rows of the engine's hot set (0: none)."""
    def last_dead_count(self) -> int:
        """Dead ids of the last run (or graph replay), valid once the stream has passed it."""
    @property
    def background(self) -> bool:
        """True when the engine runs in the background mode (asked for, on a GPU with stream memory operations)."""
    @property
    def last_strategy(self) -> str:
        """The strategy the last run used ("direct", "sorted", "host")."""
    def close(self) -> None:
        """Frees the engine (also on garbage collection)."""
    def __enter__(self) -> "Lookup": ...
    def __exit__(self, *exc: Any) -> None: ...

class Table:
    """One table: rows x row_bytes in a tier, readable by the CPU and/or a GPU."""
    name: str
    tier: str
    rows: int
    row_bytes: int
    first_row: int
    local_rows: int
    host_ptr: int
    device_ptr: int
    device: int
    numa_node: int
    copy: Dict[str, Any]
    page_size: int
    def host_view(self) -> memoryview:
        """A read-only memoryview of the table's bytes (tiers with a host pointer)."""
    @property
    def writable(self) -> bool:
        """Whether this process may write the table's memory (False for served tables)."""
    def as_tensor(self, device: Device = None, readonly: bool = False) -> Any:
        """The table as a zero-copy torch uint8 tensor [rows, row_bytes]; a read-only table needs
        readonly=True (torch has no read-only tensors: a write would kill the process)."""
    def cpu_page_size(self) -> int:
        """The CPU page size the rows are mapped with now (eht_table_page_size; 0: unknown)."""
    def hotset(self) -> Optional["array.array[int]"]:
        """The hot set its server handed over with the table (`eht serve --hotset`), or None."""
    def lookup_engine(self, **kw: Any) -> Lookup:
        """A Lookup bound to this table (keyword arguments as Lookup)."""
    def lookup(self, ids: Buffer, out: Buffer, strategy: str = "auto", format: str = "raw", device: Device = None,
               **kw: Any) -> Optional[int]:
        """Looks ids up into out with a kept engine per (strategy, format); returns the dead ids."""
    def close(self) -> None:
        """Releases the table (and its engines)."""
    def __enter__(self) -> "Table": ...
    def __exit__(self, *exc: Any) -> None: ...

class Client:
    """An attachment to the tables `eht serve` hosts under a key."""
    key: str
    tables: Dict[str, Table]
    def __init__(self, key: str, device: int = -1, timeout: float = 60.0, rank: int = 0, nranks: int = 1,
                 disk_rows: Optional[Callable[[str, int], Optional[Tuple[int, int]]]] = None,
                 head_range: Optional[Tuple[Any, int, int]] = None, wait: bool = False) -> None: ...
    def check(self) -> None:
        """Raises EhtError when the server is gone."""
    def close(self) -> None:
        """Detaches (every table of the client becomes unusable)."""
    def __enter__(self) -> "Client": ...
    def __exit__(self, *exc: Any) -> None: ...

def metrics() -> Dict[str, int]:
    """The process's lookup counters since it started (eht_metrics_read)."""
def metrics_prometheus(prefix: str = "eht") -> str:
    """metrics() in the Prometheus text exposition format."""

def wrap(buffer: Union[Buffer, Tuple[Buffer, Buffer]], rows: int, row_bytes: int, device: Device = -1, name: str = "memory",
         layout: str = "packed") -> Table:
    """A table over caller-owned host memory, never copied (a read-only mmap included); pinned for
    `device` when device >= 0. layout="split":
    vLLM's weights-then-scales storage (one buffer or a (weights, scales) pair) without a copy, read in
    place by `device` too (every strategy, raw and bf16) when device >= 0."""

def attach(key: str, device: Device = -1, timeout: float = 60.0, rank: int = 0, nranks: int = 1,
           disk_rows: Optional[Callable[[str, int], Optional[Tuple[int, int]]]] = None,
           head_range: Optional[Tuple[Any, int, int]] = None, wait: bool = False) -> Client:
    """Attaches to the tables served under `key`; no server of key: EhtError (ENOENT) at once unless
    wait=True (then up to timeout). See Client."""

class HotsetError(EhtError, ValueError):
    """A file that is not a valid hot set (read_hotset)."""

def read_hotset(path: Union[str, "os.PathLike[str]"]) -> List[int]:
    """Row ids of a hot-set file of `eht hotset build`, read by libeht (HotsetError: not a hot set)."""

from . import disk as disk, engram as engram
from .group import Group as Group, Region as Region, SharedTable as SharedTable, node_id as node_id
from .shared import (ECSharedRegion as ECSharedRegion, fabric_host_memory_supported as fabric_host_memory_supported,
                     share_host_table as share_host_table)
