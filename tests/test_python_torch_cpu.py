#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_python_torch_cpu.py: torch tensors on the CPU alone (no GPU needed): Lookup.run takes
multi-dimensional ids as a view of their own memory and checks the rows against the table, and
refuses non-contiguous ones with a message saying why (a flattened copy made inside run would be
freed when it returns, while the stream or a captured graph still reads it). Exits 77 without
PyTorch."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.environ.get("EHT_SOURCE_DIR", "."), "python"))
try:
    import torch
except ImportError:
    print("SKIP: PyTorch is not installed", file=sys.stderr)
    sys.exit(77)
import eht  # noqa: E402

ROWS, RB = 1000, 64


class TorchCpu(unittest.TestCase):
    def setUp(self):
        self.table_bytes = bytearray(os.urandom(ROWS * RB))
        self.t = eht.wrap(self.table_bytes, ROWS, RB)
        self.lk = self.t.lookup_engine(strategy="host", cpu_only=True)

    def tearDown(self):
        self.lk.close()
        self.t.close()

    def rows(self, ids):
        return b"".join(bytes(self.table_bytes[i * RB:(i + 1) * RB]) for i in ids)

    def test_multi_dim_ids_are_a_view(self):
        ids = torch.randint(0, ROWS, (4, 6), dtype=torch.int64)
        out = torch.zeros(24 * RB, dtype=torch.uint8)
        self.assertEqual(self.lk.run(ids, out), 0)
        self.assertEqual(bytes(out.numpy()), self.rows(ids.reshape(-1).tolist()))

    def test_non_contiguous_ids_refused(self):
        ids = torch.randint(0, ROWS, (6, 4), dtype=torch.int64).t()  # a transposed view
        self.assertFalse(ids.is_contiguous())
        out = torch.zeros(24 * RB, dtype=torch.uint8)
        with self.assertRaises(ValueError) as cm:
            self.lk.run(ids, out)
        self.assertIn("contiguous", str(cm.exception))
        self.assertIn("freed", str(cm.exception))
        self.assertEqual(self.lk.run(ids.contiguous(), out), 0)  # the caller's copy, kept alive here
        self.assertEqual(bytes(out.numpy()), self.rows(ids.reshape(-1).tolist()))


if __name__ == "__main__":
    unittest.main()
