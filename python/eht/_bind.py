# SPDX-License-Identifier: Apache-2.0
"""Lazy ctypes signatures of a submodule (engram, group, disk): bound on the first call, once."""
from ._native import _L


def lazy(sigs):
    """A function returning libeht with sigs() -> [(name, restype, argtypes)] bound on its first call."""
    bound = []

    def lib():
        lib = _L()
        if not bound:
            for name, res, args in sigs():
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = res, args
            bound.append(True)
        return lib

    return lib
