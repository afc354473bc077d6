# SPDX-License-Identifier: Apache-2.0
"""Python objects after close: a Table, Lookup or view used after its Client.close() raises
EhtError or still reads valid memory (the view keeps the mapping alive), never crashes; the
mapping goes once the last view and engine go. Run under ASan by `make asan` (LD_PRELOAD)."""
import array
import gc
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.environ.get("EHT_SOURCE_DIR", "."), "python"))
os.environ.setdefault("EHT_NO_CUDA", "1")
import eht  # noqa: E402

CLI = os.environ.get("EHT_CLI")


def mapped(path):
    with open("/proc/self/maps") as f:
        return sum(path in line for line in f)


@unittest.skipUnless(CLI, "EHT_CLI not set")
class TestLifetime(unittest.TestCase):
    def test_use_after_close(self):
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = os.path.join(tmp, "ckpt")
            shm = os.path.join(tmp, "shm")
            os.mkdir(shm)
            subprocess.run([CLI, "synth", ckpt, "--rows", "2000"], check=True, stdout=subprocess.DEVNULL)
            env = dict(os.environ, EHT_SHM_DIR=shm)
            env.pop("LD_PRELOAD", None)  # the server need not run under ASan
            key = "pylife-%d" % os.getpid()
            srv = subprocess.Popen([CLI, "serve", ckpt, "--key", key, "--tier", "region"],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
            try:
                for line in srv.stdout:
                    if "serving under key" in line:
                        break
                c = eht.attach(key, timeout=10)
                t = c.tables["layers.1.engram.embed"]
                lk = t.lookup_engine(strategy="host", cpu_only=True)
                view = t.host_view()
                first = bytes(view[:264])
                self.assertEqual(view[0], first[0])  # indexing works
                ids = array.array("q", [0, 5])
                out = bytearray(2 * 264)
                lk.run(ids, out)
                self.assertGreater(mapped(shm), 0)
                c.close()
                c.close()  # twice is fine
                for call in (t.host_view, lambda: lk.run(ids, out), lambda: t.lookup(ids, out),
                             t.lookup_engine, c.check, lambda: lk.last_strategy):
                    with self.assertRaises(eht.EhtError):
                        call()
                # The view taken before close still reads the rows: it holds the mapping.
                self.assertEqual(bytes(view[:264]), first)
                del view, lk, t
                gc.collect()
                self.assertEqual(mapped(shm), 0, "the mapping outlived every user")
            finally:
                srv.kill()
                srv.wait()
                srv.stdout.close()

    def test_wrap_close(self):
        buf = bytearray(4 * 264)
        t = eht.wrap(buf, 4, 264)
        lk = t.lookup_engine(strategy="host", cpu_only=True)
        t.close()
        with self.assertRaises(eht.EhtError):
            lk.run(array.array("q", [1]), bytearray(264))
        with self.assertRaises(eht.EhtError):
            t.host_view()


if __name__ == "__main__":
    unittest.main()
