# SPDX-License-Identifier: Apache-2.0
"""Type hints of eht.vllm_baseline (vLLM's Engram lookup algorithm in Triton, the benchmarks' baseline)."""
from typing import Any, Optional, Tuple

ROWS_PER_PROGRAM: int
DIM: int
SCALES: int

def split_views(host: Any, rows: int) -> Tuple[Any, Any]: ...
def grid_size(n: int, background: bool, device: Optional[Any] = None) -> int: ...
def lookup(weights: Any, scales: Any, indices: Any, out: Any, head_start: int, part: int, vocab_start: int,
           vocab_end: int, background: bool = False, n_heads: int = 24) -> Any: ...
