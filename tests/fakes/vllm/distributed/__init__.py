# SPDX-License-Identifier: Apache-2.0
"""A small fake of vLLM (the names eht.vllm touches, as ENGRAM.md lists them), for tests only."""
