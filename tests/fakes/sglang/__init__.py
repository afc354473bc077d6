# SPDX-License-Identifier: Apache-2.0
"""A small fake of SGLang (the names eht.sglang touches, as sgl-project/sglang 4be612a4 has them), for tests only."""
