# SPDX-License-Identifier: Apache-2.0
"""Type hints of eht.shared (the seed's calls)."""
from typing import Any, Optional, Tuple, Union

from .group import Group

Device = Union[int, str, Any, None]

def as_group(group: Any, timeout: float = 300.0) -> Tuple[Group, bool]:
    """(eht.Group, made here) for a GroupCoordinator, a torch.distributed group, a coordinator or a Group."""

def share_host_table(num_bytes: int, group: Any, device: Device = None,
                     name: str = "table") -> Optional[Tuple[Any, Any]]:
    """(cpu, gpu) uint8 views of one host-NUMA table on every rank of the group, or None on every rank."""

def fabric_host_memory_supported(device: Device = None) -> bool:
    """Whether host-NUMA cuMem allocations can export FABRIC handles here (cached per device)."""

class ECSharedRegion:
    """num_blocks x block_size_bytes shared by TP workers (and the scheduler) for encoder-cache blocks."""
    dir: Optional[str]
    engine_id: str
    num_blocks: int
    block_size_bytes: int
    name: str
    blocks: Any  # int8 tensor [num_blocks, block_size_bytes], or a memoryview of that shape without torch
    _mmap_path: str  # the region's file (the seed's attribute), there until the creator's cleanup
    _blocks_ptr: int
    _blocks_nbytes: int
    def __init__(self, engine_id: Any, num_blocks: int, block_size_bytes: int, timeout: float = 60.0,
                 dir: Optional[str] = None) -> None: ...
    @property
    def is_creator(self) -> bool: ...
    @property
    def _is_creator(self) -> bool: ...
    @property
    def _is_pinned(self) -> bool: ...
    def pin_memory(self, device: Device = None) -> None: ...
    def cleanup(self) -> None: ...
