# SPDX-License-Identifier: Apache-2.0
"""Ranged int conversion for every integer handed to libeht through ctypes.

ctypes wraps out-of-range ints silently (2**32 in a uint32 field is 0, -1 in a uint64 is 2**64 - 1),
in Structure fields, in arrays and in arguments alike. So every int from a caller goes through
as_int (or struct, for an options Structure) first: its C type's range, narrowed where the call
allows less, and an error that names the argument and the limit."""
import ctypes
import operator

__all__ = ["IntRangeError", "as_int", "struct"]


class IntRangeError(ValueError, OverflowError):
    """An int argument outside what its C parameter holds: both a ValueError and an OverflowError."""


def _bounds(ctype):
    bits = 8 * ctypes.sizeof(ctype)
    if ctype(-1).value < 0:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


_C_NAMES = {ctypes.c_int8: "int8", ctypes.c_uint8: "uint8", ctypes.c_int16: "int16", ctypes.c_uint16: "uint16",
            ctypes.c_int32: "int32", ctypes.c_uint32: "uint32", ctypes.c_int64: "int64", ctypes.c_uint64: "uint64"}


def as_int(name, value, ctype=ctypes.c_uint64, lo=None, hi=None):
    """value as an int for a C parameter of ctype (ctypes.c_uint32, c_int, ...), within the type's range
    narrowed to [lo, hi] where given. Takes ints and objects with __index__ (numpy's), not bool or float:
    TypeError naming the argument; IntRangeError (a ValueError and an OverflowError) naming the argument,
    the value and the limit it passed."""
    if isinstance(value, bool):
        raise TypeError("%s must be an int, not bool" % name)
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an int, not %s" % (name, type(value).__name__)) from None
    tlo, thi = _bounds(ctype)
    lo = tlo if lo is None else max(lo, tlo)
    hi = thi if hi is None else min(hi, thi)
    if v < lo or v > hi:
        ctn = _C_NAMES.get(ctype) or "%sint%d" % ("" if tlo < 0 else "u", 8 * ctypes.sizeof(ctype))
        limit = ("at least %d" % lo) if v < lo else ("at most %d" % hi)
        raise IntRangeError("%s=%d is out of range: %s (%s, a C %s)" % (name, v, limit,
                                                                     "[%d, %d]" % (lo, hi), ctn))
    return v


def struct(cls, names=None, **values):
    """cls(**values) with every int value checked against its field's C type (as_int). names maps a
    field to the caller's argument name for the messages (default: the field's own name)."""
    types = dict(cls._fields_)
    for field, v in values.items():
        t = types.get(field)
        if v is not None and t in _C_INT_TYPES and not isinstance(v, ctypes._SimpleCData):
            values[field] = as_int((names or {}).get(field, field), v, t)
    return cls(**values)


_C_INT_TYPES = frozenset((ctypes.c_int8, ctypes.c_uint8, ctypes.c_int16, ctypes.c_uint16, ctypes.c_int32,
                          ctypes.c_uint32, ctypes.c_int64, ctypes.c_uint64, ctypes.c_int, ctypes.c_uint,
                          ctypes.c_long, ctypes.c_ulong, ctypes.c_longlong, ctypes.c_ulonglong, ctypes.c_size_t,
                          ctypes.c_ssize_t, ctypes.c_short, ctypes.c_ushort))
