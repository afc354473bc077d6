# SPDX-License-Identifier: Apache-2.0
"""Argument errors from Python: ValueError / TypeError naming the argument (never KeyError,
AttributeError or a silently cut string), negative timeouts refused, ints that a C parameter cannot
hold refused naming the argument and its limit (ctypes would wrap them: rank 2^32 as 0, -1 as
2^64 - 1), and EhtError text that belongs to the failing call."""
import array
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.environ.get("EHT_SOURCE_DIR", "."), "python"))
os.environ.setdefault("EHT_NO_CUDA", "1")
import eht  # noqa: E402


class TestArgs(unittest.TestCase):
    def test_attach_args(self):
        with self.assertRaisesRegex(ValueError, "NUL"):
            eht.attach("a\0b", timeout=0.1)
        with self.assertRaises(TypeError):
            eht.attach(123, timeout=0.1)
        for bad in (-1, -0.001, 0, 1e9):
            with self.assertRaisesRegex(ValueError, "timeout"):
                eht.attach("k", timeout=bad)
        with self.assertRaisesRegex(ValueError, "rank"):
            eht.attach("k", timeout=0.1, rank=2, nranks=2)

    def test_lookup_args(self):
        buf = bytearray(4 * 264)
        t = eht.wrap(buf, 4, 264)
        with self.assertRaisesRegex(ValueError, "strategy"):
            t.lookup_engine(strategy="fastest")
        with self.assertRaisesRegex(ValueError, "format"):
            t.lookup_engine(format="fp8")
        lk = t.lookup_engine(strategy="host", cpu_only=True)
        with self.assertRaisesRegex(ValueError, "strategy"):
            lk.run(array.array("q", [0]), bytearray(264), strategy="nope")
        with self.assertRaises(TypeError):
            lk.run(array.array("d", [0.0]), bytearray(264))
        # dequant: whole raw rows, room for the bf16 rows, GPU memory only
        with self.assertRaisesRegex(ValueError, "whole rows of 264"):
            lk.dequant(bytearray(265), bytearray(512))
        with self.assertRaisesRegex(ValueError, "2 rows need 1024"):
            lk.dequant(bytearray(528), bytearray(512))
        with self.assertRaisesRegex(ValueError, "GPU memory"):
            lk.dequant(bytearray(528), bytearray(1024))
        with self.assertRaises(TypeError):
            eht.Lookup("not a table")
        self.assertEqual(t.host_view()[3], 0)
        lk.close()
        t.close()

    def test_cuda_device_without_cuda(self):
        """device="cuda" where torch has no CUDA (a CPU build, or no GPU): 0, as without torch, not
        the AssertionError / RuntimeError that torch.cuda.current_device() raises there."""
        from eht import _args

        class _NoCuda:
            @staticmethod
            def is_available():
                return False

            @staticmethod
            def current_device():
                raise AssertionError("Torch not compiled with CUDA enabled")

        class _CpuTorch:
            cuda = _NoCuda
            device = type("device", (), {})

        saved = _args._torch_mod
        _args._torch_mod = _CpuTorch
        try:
            self.assertEqual(_args._device_index("cuda"), 0)
            self.assertEqual(_args._device_index("cuda:2"), 2)
            self.assertEqual(_args._device_index("cpu"), -1)
        finally:
            _args._torch_mod = saved

    def test_wrap_args(self):
        with self.assertRaisesRegex(ValueError, "NUL"):
            eht.wrap(bytearray(264), 1, 264, name="a\0b")
        with self.assertRaises(ValueError):
            eht.wrap(bytearray(264), 0, 264)

    def test_error_text_is_fresh(self):
        # A failing call's message is its own, not an earlier call's.
        with self.assertRaises(eht.EhtError) as cm:
            eht.attach("fresh-%d" % os.getpid(), timeout=0.05)
        self.assertIn("fresh-", str(cm.exception))
        self.assertNotIn("CUDA", str(cm.exception))

    def test_tiers_from_the_library(self):
        # eht.TIERS is the library's list (eht_tier_count), and share_table takes "auto" or a tier the
        # library shares (eht_tier_caps): another name is a ValueError naming those, never a KeyError.
        lib = eht._L()
        self.assertEqual(len(eht.TIERS), lib.eht_tier_count() + 1)
        self.assertEqual(eht.TIERS[lib.eht_tier_count()], lib.eht_tier_name(lib.eht_tier_count()).decode())

        class One:  # a coordinator of one rank
            rank, world_size = 0, 1

            def all_gather_object(self, obj):
                return [obj]

        g = eht.Group.from_coordinator(One(), timeout=5)
        try:
            shared = [n for t, n in eht.TIERS.items() if t and lib.eht_tier_caps(t) & 1]
            self.assertIn("region", shared)
            for bad in ("bogus", "disk", "memory", 3):
                with self.assertRaisesRegex(ValueError, "tier .*auto.*" + ", ".join(shared)):
                    g.share_table(264, tier=bad, row_bytes=264)
        finally:
            g.close()


def fixture(name):
    d = os.environ.get("EHT_FIXTURES") or os.path.join(os.environ.get("EHT_SOURCE_DIR", "."), "tests", "fixtures")
    return os.path.join(d, "safetensors", name)


class TestIntRanges(unittest.TestCase):
    W = "model.layers.1.engram.embedding.weight"

    def refused(self, fn, arg, limit):
        """fn() raises eht.IntRangeError (a ValueError and an OverflowError) naming arg and limit."""
        with self.assertRaises(eht.IntRangeError) as cm:
            fn()
        self.assertIsInstance(cm.exception, ValueError)
        self.assertIsInstance(cm.exception, OverflowError)
        self.assertIn(arg, str(cm.exception))
        self.assertIn(limit, str(cm.exception))

    def test_disk_open(self):
        ck = fixture("engram_single.safetensors")
        opn = eht.disk.open
        self.refused(lambda: opn(ck, weight=self.W, rank=2 ** 32, nranks=2), "rank", "at most 1")
        self.refused(lambda: opn(ck, weight=self.W, nranks=2 ** 32), "nranks", "4294967295")
        self.refused(lambda: opn(ck, weight=self.W, prefetch_slots=2 ** 32 + 1), "prefetch_slots", "4294967295")
        self.refused(lambda: opn(ck, weight=self.W, io_threads=-1), "io_threads", "at least 0")
        self.refused(lambda: opn(ck, weight=self.W, cache_bytes=-1), "cache_bytes", "at least 0")
        self.refused(lambda: opn(ck, weight=self.W, cache_bytes=2 ** 64 - 1), "cache_bytes", str(2 ** 64 - 2))
        self.refused(lambda: opn(ck, weight=self.W, prefetch_rows=2 ** 64), "prefetch_rows", str(2 ** 64 - 1))
        self.refused(lambda: opn(ck, weight=self.W, rows=(0, 2 ** 70)), "rows[1]", str(2 ** 64 - 1))
        with self.assertRaisesRegex(ValueError, "NUL"):
            opn(ck, weight=self.W + "\0x")
        t = opn(ck, weight=self.W, cache_bytes=0)  # 0: no cache (still allowed)
        self.refused(lambda: eht.disk.prefetch(t, array.array("q", [1]), id_offset=2 ** 63), "id_offset",
                     str(2 ** 63 - 1))
        t.close()

    def test_engram(self):
        lay = eht.engram.Layout.preset("v41-small")
        self.refused(lambda: eht.engram.State(lay, keep=2 ** 40), "keep", "4294967295")
        st = eht.engram.State(lay, keep=4)
        self.refused(lambda: st.drop(-1), "req", "at least 0")
        self.refused(lambda: st.rollback(1, 2 ** 32), "n", "4294967295")
        self.refused(lambda: st.fork(2 ** 64, 1), "parent", str(2 ** 64 - 1))
        self.refused(lambda: st.step([2 ** 64], [1, 2]), "reqs[0]", str(2 ** 64 - 1))
        self.refused(lambda: lay.column(0, 2 ** 32), "col", "4294967295")
        with self.assertRaisesRegex(ValueError, "NUL"):
            eht.engram.Layout.preset("v41\0-small")

    def test_tables_and_regions(self):
        self.refused(lambda: eht.wrap(bytearray(264), 2 ** 64, 264), "rows", str(2 ** 64 - 1))
        self.refused(lambda: eht.wrap(bytearray(264), 1, 0), "row_bytes", "at least 1")
        t = eht.wrap(bytearray(4 * 264), 4, 264)
        for arg, big in (("threads", 2 ** 32), ("sm_cap", 2 ** 32), ("spin_us", -1), ("max_batch", 2 ** 64)):
            self.refused(lambda: t.lookup_engine(cpu_only=True, **{arg: big}), arg, "")
        self.refused(lambda: t.lookup_engine(device=2 ** 31), "device", "2147483647")
        lk = t.lookup_engine(strategy="host", cpu_only=True)
        self.refused(lambda: lk.run(array.array("q", [0]), bytearray(264), id_offset=-2 ** 63 - 1), "id_offset",
                     str(-2 ** 63))
        self.refused(lambda: lk.run(array.array("q", [0]), bytearray(264), stream=2 ** 64), "stream", "")
        with self.assertRaisesRegex(OverflowError, "hot set row"):
            lk.set_hotset([2 ** 63])
        self.refused(lambda: eht.attach("k", timeout=0.1, rank=2 ** 32, nranks=2 ** 32 + 1), "nranks", "4294967295")
        self.refused(lambda: eht.Region("r%d" % os.getpid(), -1), "nbytes", "at least 0")
        self.refused(lambda: eht.Region("r%d" % os.getpid(), 4096, expected_peers=2 ** 32), "expected_peers",
                     "4294967295")
        self.refused(lambda: eht.ECSharedRegion("x", 2 ** 40, 2 ** 20), "num_blocks x block_size_bytes",
                     str(2 ** 50))
        with self.assertRaisesRegex(ValueError, "NUL"):
            eht.ECSharedRegion("a\0b", 1, 4096)
        lk.close()
        t.close()


if __name__ == "__main__":
    unittest.main()
