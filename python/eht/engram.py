# SPDX-License-Identifier: Apache-2.0
"""eht.engram: the library's Engram n-gram hashing (CPU and CUDA, bit-exact), its layout, per-request
history across steps, and head-range sharding with vLLM's rule.

    lay = eht.engram.Layout.preset("v41")             # or Layout.from_config("config.json")
    rows = lay.hash(tokens)                           # one request: array('i') of [T][layers][24]
    rows = lay.hash(tok_gpu, starts=st_gpu)           # torch CUDA tensors: the CUDA kernel, current
                                                      # stream; a [T, layers, 24] int32 tensor
    vs, ve = lay.shard(0, tp=4, rank=1)               # rank 1's rows of layer index 0
    part = eht.engram.part(24, tp=4)                  # heads per rank; check_tp(24, 7) raises
"""
import array
import ctypes
import os

from . import _bind
from ._args import _stream_or_current, _torch
from ._ints import as_int
from ._native import _check

__all__ = ["Layout", "State", "part", "check_tp", "HIST_UNKNOWN", "HIST_BLOCK"]

HIST_UNKNOWN, HIST_BLOCK = -1, -2
_MAX_LAYERS = 16


class _Info(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("n_layers", ctypes.c_uint32), ("max_ngram", ctypes.c_uint32),
                ("n_heads", ctypes.c_uint32), ("cols", ctypes.c_uint32),
                ("layer_ids", ctypes.c_uint32 * _MAX_LAYERS), ("rows", ctypes.c_uint64 * _MAX_LAYERS),
                ("compressed_vocab", ctypes.c_uint64), ("pad_id", ctypes.c_int32),
                ("token_map_len", ctypes.c_uint32)]


class _Batch(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("n_tokens", ctypes.c_size_t),
                ("tokens", ctypes.c_void_p), ("dead", ctypes.c_void_p), ("n_requests", ctypes.c_size_t),
                ("starts", ctypes.c_void_p), ("history", ctypes.c_void_p)]


def _sigs():
    P, VP, I, U32, U64, SZ, CP = (ctypes.POINTER, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64,
                                  ctypes.c_size_t, ctypes.c_char_p)
    return [
        ("eht_engram_layout_preset", I, [CP, P(VP)]),
        ("eht_engram_layout_from_json", I, [CP, SZ, P(VP)]),
        ("eht_engram_layout_from_file", I, [CP, P(VP)]),
        ("eht_engram_layout_free", None, [VP]),
        ("eht_engram_layout_info", I, [VP, P(_Info)]),
        ("eht_engram_layout_column", I, [VP, U32, U32, P(U64), P(U64)]),
        ("eht_engram_layout_multipliers", I, [VP, U32, P(U64)]),
        ("eht_engram_layout_set_token_map", I, [VP, VP, SZ]),
        ("eht_engram_layout_load_token_map", I, [VP, CP]),
        ("eht_engram_hash", I, [VP, P(_Batch), VP]),
        ("eht_engram_hash_gpu", I, [VP, P(_Batch), VP, VP]),
        ("eht_engram_shard", I, [VP, U32, U32, U32, P(U64), P(U64)]),
        ("eht_engram_state_create", I, [VP, U32, P(VP)]),
        ("eht_engram_state_destroy", None, [VP]),
        ("eht_engram_state_add", I, [VP, U64]),
        ("eht_engram_state_drop", I, [VP, U64]),
        ("eht_engram_state_fork", I, [VP, U64, U64]),
        ("eht_engram_state_rollback", I, [VP, U64, U32]),
        ("eht_engram_state_step", I, [VP, VP, P(_Batch), VP]),
        ("eht_engram_state_history", I, [VP, U64, VP]),
    ]


_lib = _bind.lazy(_sigs)


def part(cols, tp):
    """Heads per rank, vLLM's: ceil(cols / tp), after check_tp."""
    check_tp(cols, tp)
    return -(-cols // tp)


def check_tp(cols, tp):
    """Raises ValueError for a tp vLLM refuses: (tp - 1) * ceil(cols / tp) >= cols (a rank would own no
    head; for 24 columns 7, 9, 10, 11 and above 12)."""
    if isinstance(tp, bool) or not isinstance(tp, int):
        raise TypeError("tp must be an int, not %s" % type(tp).__name__)
    if tp < 1:
        raise ValueError("tp must be >= 1, not %d" % tp)
    p = -(-cols // tp)
    if (tp - 1) * p >= cols:
        raise ValueError("tp=%d: with ceil(%d / %d) = %d heads per rank, rank %d would own no head "
                         "(vLLM refuses this tp)" % (tp, cols, tp, p, tp - 1))


def _ints(name, seq, code):
    """(keep-alive, address, count) of a sequence of ints as a C array of `code` ('i', 'I', 'B')."""
    if isinstance(seq, array.array) and seq.typecode == code:
        arr = seq
    else:
        try:
            arr = array.array(code, seq)
        except (TypeError, OverflowError) as exc:
            raise TypeError("%s must be a sequence of %s ints (%s)" % (name, {"i": "int32", "I": "uint32",
                                                                                "B": "uint8"}[code], exc))
    if not len(arr):
        return arr, None, 0
    addr, _ = arr.buffer_info()
    return arr, addr, len(arr)


class Layout:
    """An Engram layout (eht_engram_layout): per layer and column the prime modulus and row offset, the
    multipliers, the pad id, optionally a token map. Attributes: n_layers, layer_ids, max_ngram,
    n_heads, cols, rows (per layer), compressed_vocab, pad_id, token_map_len."""

    def __init__(self, handle):
        self._h = handle
        self._refresh()

    def _refresh(self):
        info = _Info(size=ctypes.sizeof(_Info))
        _check(_lib().eht_engram_layout_info(self._h, ctypes.byref(info)), "eht_engram_layout_info")
        self.n_layers, self.max_ngram, self.n_heads, self.cols = info.n_layers, info.max_ngram, info.n_heads, info.cols
        self.layer_ids = list(info.layer_ids[:info.n_layers])
        self.rows = list(info.rows[:info.n_layers])
        self.compressed_vocab, self.pad_id, self.token_map_len = info.compressed_vocab, info.pad_id, info.token_map_len

    @classmethod
    def preset(cls, name="v41"):
        """"v41" (DeepSeek-V4.1) or "v41-small" (the same structure with small primes)."""
        if not isinstance(name, str):
            raise TypeError("name must be a str, not %s" % type(name).__name__)
        if "\0" in name:
            raise ValueError("name=%r: a preset name holds no NUL character" % (name,))
        h = ctypes.c_void_p()
        _check(_lib().eht_engram_layout_preset(name.encode(), ctypes.byref(h)), "eht_engram_layout_preset(%s)" % name)
        return cls(h)

    @classmethod
    def from_config(cls, config):
        """From config.json: a path, or its text / dict (its text_config's engram keys)."""
        lib = _lib()
        h = ctypes.c_void_p()
        if isinstance(config, dict):
            import json  # noqa: PLC0415
            config = json.dumps(config)
        if isinstance(config, (str, os.PathLike)) and os.path.exists(config):
            _check(lib.eht_engram_layout_from_file(os.fsencode(config), ctypes.byref(h)),
                   "eht_engram_layout_from_file(%s)" % config)
        elif isinstance(config, str):
            b = config.encode()
            _check(lib.eht_engram_layout_from_json(b, len(b), ctypes.byref(h)), "eht_engram_layout_from_json")
        else:
            raise TypeError("config must be a path, JSON text or a dict, not %s" % type(config).__name__)
        return cls(h)

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            try:
                _lib().eht_engram_layout_free(h)
            except Exception:  # noqa: BLE001 (interpreter shutdown)
                pass

    def __repr__(self):
        return "<eht.engram.Layout layers %s, %d columns, rows %s>" % (self.layer_ids, self.cols, self.rows)

    def _li(self, li):
        if isinstance(li, bool) or not isinstance(li, int):
            raise TypeError("li (layer index) must be an int, not %s" % type(li).__name__)
        if not 0 <= li < self.n_layers:
            raise ValueError("li (layer index) must be in [0, %d), not %d" % (self.n_layers, li))
        return li

    def column(self, li, col):
        """(modulus, row offset) of column col of layer index li."""
        m, o = ctypes.c_uint64(), ctypes.c_uint64()
        col = as_int("col", col, ctypes.c_uint32)
        _check(_lib().eht_engram_layout_column(self._h, self._li(li), col, ctypes.byref(m), ctypes.byref(o)),
               "eht_engram_layout_column")
        return m.value, o.value

    def offsets(self, li):
        """Row offsets of layer index li's columns, plus its rows at the end (cols + 1 entries)."""
        return [self.column(li, c)[1] for c in range(self.cols)] + [self.rows[self._li(li)]]

    def multipliers(self, li):
        out = (ctypes.c_uint64 * self.max_ngram)()
        _check(_lib().eht_engram_layout_multipliers(self._h, self._li(li), out), "eht_engram_layout_multipliers")
        return list(out)

    def set_token_map(self, token_map):
        """Tokenizer id -> compressed id: a sequence of ints, or the path of an int32 LE file."""
        lib = _lib()
        if isinstance(token_map, (str, os.PathLike)):
            _check(lib.eht_engram_layout_load_token_map(self._h, os.fsencode(token_map)), "load_token_map")
        else:
            keep, addr, n = _ints("token_map", token_map, "i")
            _check(lib.eht_engram_layout_set_token_map(self._h, addr, n), "eht_engram_layout_set_token_map")
        self._refresh()

    def shard(self, li, tp, rank):
        """Rank's rows [vocab_start, vocab_end) of layer index li with vLLM's head-range rule; ValueError
        for a tp vLLM refuses or a rank outside [0, tp)."""
        check_tp(self.cols, tp)
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < tp:
            raise ValueError("rank must be an int in [0, %d), not %r" % (tp, rank))
        a, e = ctypes.c_uint64(), ctypes.c_uint64()
        _check(_lib().eht_engram_shard(self._h, self._li(li), tp, rank, ctypes.byref(a), ctypes.byref(e)),
               "eht_engram_shard")
        return a.value, e.value

    def head_range(self, tp, rank):
        """(head_start, part) of rank: the op's arguments (columns >= cols are padded heads)."""
        p = part(self.cols, tp)
        return rank * p, p

    def hash(self, tokens, starts=None, dead=None, history=None, stream=None):
        """Row ids of a flattened batch: request r owns tokens [starts[r], starts[r+1]) (None: one
        request); dead: per token nonzero for an image token; history: per request max_ngram - 1
        entries, newest first (compressed ids or HIST_*; None: every request starts here).
        torch CUDA tensors: the CUDA kernel on the stream (default torch's current), a new
        [T, n_layers, cols] int32 tensor. A torch CPU tensor: the same shape on the CPU. Else an
        array('i') of T * n_layers * cols."""
        torch = _torch()
        if torch is not None and isinstance(tokens, torch.Tensor):
            return self._hash_torch(torch, tokens, starts, dead, history, stream)
        lib = _lib()
        kt, at, n = _ints("tokens", tokens, "i")
        ks, as_, nr = _ints("starts", [0, n] if starts is None else starts, "I")
        kd, ad, nd = _ints("dead", dead, "B") if dead is not None else (None, None, 0)
        kh, ah, nh = _ints("history", history, "i") if history is not None else (None, None, 0)
        self._check_batch(n, nr, nd if dead is not None else None, nh if history is not None else None)
        out = array.array("i", bytes(4 * max(1, n * self.n_layers * self.cols)))
        b = _Batch(size=ctypes.sizeof(_Batch), n_tokens=n, tokens=at, dead=ad, n_requests=nr - 1, starts=as_,
                   history=ah)
        _check(lib.eht_engram_hash(self._h, ctypes.byref(b), out.buffer_info()[0]), "eht_engram_hash")
        return out[:n * self.n_layers * self.cols]

    def _check_batch(self, n, nstarts, ndead, nhist):
        if nstarts < 2:
            raise ValueError("starts must hold n_requests + 1 >= 2 entries, not %d" % nstarts)
        if ndead is not None and ndead != n:
            raise ValueError("dead must hold one entry per token (%d), not %d" % (n, ndead))
        if nhist is not None and nhist != (nstarts - 1) * (self.max_ngram - 1):
            raise ValueError("history must hold n_requests x %d = %d entries, not %d"
                             % (self.max_ngram - 1, (nstarts - 1) * (self.max_ngram - 1), nhist))

    def _hash_torch(self, torch, tokens, starts, dead, history, stream):
        if tokens.dtype != torch.int32 or tokens.dim() != 1:
            raise TypeError("tokens must be a 1-D torch.int32 tensor, not %s %s" % (tokens.dtype, tuple(tokens.shape)))
        dev = tokens.device
        n = tokens.shape[0]
        if starts is None:
            starts = torch.tensor([0, n], dtype=torch.int32, device=dev)
        dead_t = dead
        for name, t, dt in (("starts", starts, (torch.int32,)), ("dead", dead, (torch.uint8, torch.bool)),
                            ("history", history, (torch.int32,))):
            if t is None:
                continue
            if not isinstance(t, torch.Tensor) or t.dtype not in dt or t.device != dev:
                raise TypeError("%s must be a %s tensor on %s" % (name, " or ".join(map(str, dt)), dev))
        self._check_batch(n, starts.shape[0], None if dead is None else dead.numel(),
                          None if history is None else history.numel())
        tokens, starts = tokens.contiguous(), starts.contiguous()
        if dead_t is not None:
            dead_t = dead_t.contiguous().view(torch.uint8)
        if history is not None:
            history = history.contiguous()
        out = torch.empty((n, self.n_layers, self.cols), dtype=torch.int32, device=dev)
        b = _Batch(size=ctypes.sizeof(_Batch), n_tokens=n, tokens=tokens.data_ptr(),
                   dead=dead_t.data_ptr() if dead_t is not None else None, n_requests=starts.shape[0] - 1,
                   starts=starts.data_ptr(), history=history.data_ptr() if history is not None else None)
        if dev.type == "cuda":
            h = _stream_or_current(stream, dev)
            with torch.cuda.device(dev):
                _check(_lib().eht_engram_hash_gpu(self._h, ctypes.byref(b), out.data_ptr(), h or None),
                       "eht_engram_hash_gpu")
        else:
            _check(_lib().eht_engram_hash(self._h, ctypes.byref(b), out.data_ptr()), "eht_engram_hash")
        return out


class State:
    """Per-request history across steps (eht_engram_state): decoding one token at a time gives the rows
    prefilling the whole sequence gives. Requests are named by ints (64-bit)."""

    def __init__(self, layout, keep=0):
        if not isinstance(layout, Layout):
            raise TypeError("layout must be an eht.engram.Layout, not %s" % type(layout).__name__)
        self.layout = layout
        keep = as_int("keep", keep, ctypes.c_uint32)
        h = ctypes.c_void_p()
        _check(_lib().eht_engram_state_create(layout._h, keep, ctypes.byref(h)), "eht_engram_state_create")
        self._h = h

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            try:
                _lib().eht_engram_state_destroy(h)
            except Exception:  # noqa: BLE001
                pass

    def step(self, reqs, tokens, starts=None, dead=None):
        """Hashes one step (chunk r of the batch belongs to request reqs[r]) and appends it to the
        requests' histories. Returns array('i') as Layout.hash."""
        lay = self.layout
        kt, at, n = _ints("tokens", tokens, "i")
        ks, as_, nr = _ints("starts", [0, n] if starts is None else starts, "I")
        kd, ad, nd = _ints("dead", dead, "B") if dead is not None else (None, None, 0)
        lay._check_batch(n, nr, nd if dead is not None else None, None)
        if len(reqs) != nr - 1:
            raise ValueError("reqs must name one request per chunk (%d), not %d" % (nr - 1, len(reqs)))
        kr = (ctypes.c_uint64 * max(1, len(reqs)))(*[as_int("reqs[%d]" % i, r) for i, r in enumerate(reqs)])
        out = array.array("i", bytes(4 * max(1, n * lay.n_layers * lay.cols)))
        b = _Batch(size=ctypes.sizeof(_Batch), n_tokens=n, tokens=at, dead=ad, n_requests=nr - 1, starts=as_)
        _check(_lib().eht_engram_state_step(self._h, kr, ctypes.byref(b), out.buffer_info()[0]),
               "eht_engram_state_step")
        return out[:n * lay.n_layers * lay.cols]

    def fork(self, parent, child):
        _check(_lib().eht_engram_state_fork(self._h, as_int("parent", parent), as_int("child", child)),
               "eht_engram_state_fork")

    def rollback(self, req, n):
        _check(_lib().eht_engram_state_rollback(self._h, as_int("req", req), as_int("n", n, ctypes.c_uint32)),
               "eht_engram_state_rollback")

    def drop(self, req):
        _check(_lib().eht_engram_state_drop(self._h, as_int("req", req)), "eht_engram_state_drop")

    def history(self, req):
        out = (ctypes.c_int32 * max(1, self.layout.max_ngram - 1))()
        _check(_lib().eht_engram_state_history(self._h, as_int("req", req), out), "eht_engram_state_history")
        return list(out[:self.layout.max_ngram - 1])
