# SPDX-License-Identifier: Apache-2.0
"""Type hints of eht.torch (the lookup as a torch op; needs torch >= 2.4)."""
from typing import Optional, Union

import torch

from . import Lookup

BACKGROUND_SUPPORTED: bool
Engine = Union[Lookup, int]

def engine_id(lookup: Engine) -> int:
    """The int that names the engine in torch.ops.eht.lookup_into (registered on first use)."""

def release(engine: Engine) -> None: ...

def check_args(engine: int, ids: torch.Tensor, out: torch.Tensor, head_start: int, part: int,
               vocab_start: int, vocab_end: int) -> Lookup: ...

def lookup_into(engine: Engine, ids: torch.Tensor, out: torch.Tensor, head_start: int = 0,
                part: Optional[int] = None, vocab_start: Optional[int] = None, vocab_end: Optional[int] = None,
                id_offset: Optional[int] = None) -> torch.Tensor:
    """ids [T, H] (int32/int64, any strides) -> out [T, part, 256] bf16 or [T, part, row_bytes] uint8."""

def lookup(engine: Engine, ids: torch.Tensor, head_start: int = 0, part: Optional[int] = None,
           vocab_start: Optional[int] = None, vocab_end: Optional[int] = None, id_offset: Optional[int] = None) -> torch.Tensor:
    """The functional form: a new [T, part, 256] bf16 (or [T, part, row_bytes] uint8) tensor."""

def dequant_into(engine: Engine, raw: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """raw [..., row_bytes] uint8 (a raw engine's rows, GPU) -> out [..., 256] bf16 on torch's current stream."""

def dequant(engine: Engine, raw: torch.Tensor) -> torch.Tensor:
    """The functional form: a new [..., 256] bf16 tensor."""


class EngramLayer:
    """One Engram layer's table as one rank looks it up: layer.lookup(indices, out, background=False)."""
    id: int
    table: object
    head_start: int
    part: int
    n_heads: int
    format: str
    row_len: int
    max_tokens: int
    dtype: torch.dtype
    def __init__(self, table: object, *, head_start: int = 0, part: Optional[int] = None, n_heads: int = 24,
                 vocab_start: Optional[int] = None, vocab_end: Optional[int] = None, format: str = "bf16",
                 device: object = None, max_tokens: int = 0, threads: int = 0, gpu_dedup: bool = False,
                 no_hotset: bool = False, push: Optional[bool] = None, id_shift: Optional[int] = None) -> None: ...
    def lookup(self, indices: torch.Tensor, out: torch.Tensor, background: bool = False) -> torch.Tensor:
        """indices [T, H] int32/int64 (any strides) -> out [T, part, 256] bf16 or [T, part, row_bytes] uint8."""
    def lookup_start(self, indices: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """The background way's first half: the rows are in out after lookup_wait(out) on this stream."""
    def lookup_wait(self, out: torch.Tensor) -> torch.Tensor:
        """Ends lookup_start on torch's current stream (a no-op where nothing was started)."""
    def engine(self, background: bool = False) -> int: ...
    def close(self) -> None: ...
    def __enter__(self) -> "EngramLayer": ...
    def __exit__(self, *exc: object) -> None: ...
