# SPDX-License-Identifier: Apache-2.0
"""Argument errors from Python: ValueError / TypeError naming the argument (never KeyError,
AttributeError or a silently cut string), negative timeouts refused, and EhtError text that
belongs to the failing call."""
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


if __name__ == "__main__":
    unittest.main()
