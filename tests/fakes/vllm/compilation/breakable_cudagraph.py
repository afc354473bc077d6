# SPDX-License-Identifier: Apache-2.0
"""Fake vllm.compilation.breakable_cudagraph: whether a breakable (PIECEWISE) capture is recording,
as the test sets it (ACTIVE[0])."""
ACTIVE = [False]


class BreakableCUDAGraphCapture:
    @staticmethod
    def is_active():
        return ACTIVE[0]
