# SPDX-License-Identifier: Apache-2.0
"""Python objects after close: a Table, Lookup or view used after its Client.close() raises
EhtError or still reads valid memory (the view keeps the mapping alive), never crashes; the
mapping goes once the last view and engine go. A close from another thread while a lookup runs
waits for it (the call finishes or raises EhtError); a Region's views outlive its close(); a disk
prefetch ticket after its table's close raises EhtError (wait, release once) or goes quietly
(collection), also while another thread waits on it; a FIFO given as a hot-set file is an error, not
a hang. Run under ASan by `make asan` (LD_PRELOAD)."""
import array
import gc
import mmap
import os
import signal
import sys
import tempfile
import threading
import time
import unittest

import pyutil

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
        key = "pylife-%d" % os.getpid()
        with pyutil.serve_synth(CLI, key, 2000):
            c = eht.attach(key, timeout=10)
            t = c.tables["layers.1.engram.embed"]
            lk = t.lookup_engine(strategy="host", cpu_only=True)
            view = t.host_view()
            first = bytes(view[:264])
            self.assertEqual(view[0], first[0])  # indexing works
            ids = array.array("q", [0, 5])
            out = bytearray(2 * 264)
            lk.run(ids, out)
            # eht serve's region tables are sealed memfds (no file in the directory).
            self.assertGreater(mapped("/memfd:layers."), 0)
            c.close()
            c.close()  # twice is fine
            for call in (t.host_view, lambda: lk.run(ids, out), lambda: t.lookup(ids, out),
                         t.lookup_engine, c.check, lambda: lk.last_strategy):
                with self.assertRaises(eht.EhtError):
                    call()
            # The view taken before close still reads the rows: it holds the mapping.
            self.assertEqual(bytes(view[:264]), first)
            view = lk = t = None  # (rebound, not deleted: the lambdas above still name them)
            gc.collect()
            self.assertEqual(mapped("/memfd:layers."), 0, "the mapping outlived every user")

    def test_wrap_close(self):
        buf = bytearray(4 * 264)
        t = eht.wrap(buf, 4, 264)
        lk = t.lookup_engine(strategy="host", cpu_only=True)
        t.close()
        with self.assertRaises(eht.EhtError):
            lk.run(array.array("q", [1]), bytearray(264))
        with self.assertRaises(eht.EhtError):
            t.host_view()

    def test_wrap_readonly_mmap(self):
        """A read-only mmap is wrapped in place, not copied (ctypes copies read-only buffers), and
        stays mapped (mmap.close refuses) while the table lives."""
        rows = 8
        with tempfile.TemporaryFile() as f:
            f.write(bytes(range(256)) * (rows * 264 // 256) + bytes(rows * 264 % 256))
            f.flush()
            ro = mmap.mmap(f.fileno(), rows * 264, access=mmap.ACCESS_READ)
            t = eht.wrap(ro, rows, 264)
            lk = t.lookup_engine(strategy="host", cpu_only=True)
            rw = mmap.mmap(f.fileno(), rows * 264, access=mmap.ACCESS_WRITE)
            rw[2 * 264:3 * 264] = b"\xab" * 264  # the same file pages, seen through the wrapped mapping
            out = bytearray(264)
            lk.run(array.array("q", [2]), out)
            self.assertEqual(bytes(out), b"\xab" * 264, "the table reads a copy, not the mapping")
            with self.assertRaises(BufferError):
                ro.close()
            t.close()
            t = lk = None
            gc.collect()
            ro.close()  # the table's hold on it is gone
            rw.close()


ROWS, RB = 4096, 264


def run_while_closing(test, lk_of, close, ids_n=1 << 20):
    """Thread A runs lookups on lk_of() in a loop; once one is under way, close() runs on this
    thread. A's calls must return the rows or raise EhtError; none may touch freed memory (ASan,
    or a crash without it). Returns how many of A's calls finished after the close."""
    ids = array.array("q", [(i * 7919) % ROWS for i in range(ids_n)])
    out = bytearray(ids_n * RB)
    started, stop = threading.Event(), threading.Event()
    result = {"ok": 0, "closed": 0, "other": None}

    def worker():
        lk = lk_of()
        while not stop.is_set():
            started.set()
            try:
                lk.run(ids, out)
                result["ok"] += 1
            except eht.EhtError:
                result["closed"] += 1
                return
            except Exception as e:  # noqa: BLE001
                result["other"] = e
                return
        lk = None

    th = threading.Thread(target=worker)
    th.start()
    started.wait(30)
    time.sleep(0.005)  # inside a call (~10 ms each): the close lands in the middle of it
    close()
    stop.set()
    th.join(60)
    test.assertFalse(th.is_alive())
    test.assertIsNone(result["other"])
    test.assertTrue(result["ok"] or result["closed"])
    return result


class TestCloseDuringRun(unittest.TestCase):
    def table(self):
        buf = bytearray(os.urandom(ROWS * RB))
        return eht.wrap(buf, ROWS, RB)

    def test_lookup_close(self):
        for _ in range(3):
            t = self.table()
            lk = t.lookup_engine(strategy="host", cpu_only=True)
            run_while_closing(self, lambda: lk, lk.close)
            with self.assertRaises(eht.EhtError):
                lk.run(array.array("q", [1]), bytearray(RB))
            lk = t = None
            gc.collect()

    def test_table_close(self):
        for _ in range(3):
            t = self.table()
            out = bytearray(RB)
            t.lookup(array.array("q", [0]), out)  # makes the table's kept engine
            eng = next(iter(t._engines.values()))
            run_while_closing(self, lambda: eng, t.close)
            with self.assertRaises(eht.EhtError):
                t.lookup(array.array("q", [1]), out)
            eng = t = None
            gc.collect()

    @unittest.skipUnless(CLI, "EHT_CLI not set")
    def test_client_close(self):
        key = "pyclose-%d" % os.getpid()
        with pyutil.serve_synth(CLI, key, ROWS):
            for _ in range(3):
                c = eht.attach(key, timeout=10)
                t = c.tables["layers.1.engram.embed"]
                t.lookup(array.array("q", [0]), bytearray(RB))  # the table's kept engine
                lk = next(iter(t._engines.values()))
                run_while_closing(self, lambda: lk, c.close)  # closes the table and its engines
                with self.assertRaises(eht.EhtError):
                    lk.run(array.array("q", [1]), bytearray(RB))
                lk = t = c = None
                gc.collect()


class TestRegionViews(unittest.TestCase):
    def test_view_outlives_close(self):
        from eht.group import Region
        with tempfile.TemporaryDirectory() as tmp:
            old = os.environ.get("EHT_SHM_DIR")
            os.environ["EHT_SHM_DIR"] = tmp
            eht._reload_settings()  # libeht reads its settings once
            try:
                r = Region("pyview-%d" % os.getpid(), 1 << 20)
                r.mark_ready()
                v = r.view()
                v[0], v[(1 << 20) - 1] = 7, 9
                r.close()
                r.close()
                with self.assertRaises(eht.EhtError):
                    r.view()
                with self.assertRaises(eht.EhtError):
                    r.mark_ready()
                self.assertFalse(r.pinned)
                # The view still maps the region: reading and writing it is fine.
                self.assertEqual((v[0], v[(1 << 20) - 1]), (7, 9))
                v[1] = 3
                self.assertGreater(mapped(tmp), 0)
                del v
                gc.collect()
                self.assertEqual(mapped(tmp), 0, "the region outlived its last view")
                Region.unlink("pyview-%d" % os.getpid())
            finally:
                if old is None:
                    del os.environ["EHT_SHM_DIR"]
                else:
                    os.environ["EHT_SHM_DIR"] = old
                eht._reload_settings()


def fixture(name):
    d = os.environ.get("EHT_FIXTURES") or os.path.join(os.environ.get("EHT_SOURCE_DIR", "."), "tests", "fixtures")
    return os.path.join(d, "safetensors", name)


class TestDiskTicket(unittest.TestCase):
    W, S = "model.layers.1.engram.embedding.weight", "model.layers.1.engram.embedding.scale"

    def table(self):
        return eht.disk.open(fixture("engram_single.safetensors"), weight=self.W, scale=self.S, io_threads=2,
                             prefetch_rows=1024, prefetch_slots=2)

    def ids(self):
        return array.array("q", [(i * 7919) % 4099 for i in range(2000)])

    def test_after_close(self):
        for way in ("wait", "release", "collect", "rows", "with"):
            t = self.table()
            tk = eht.disk.prefetch(t, self.ids())
            if way == "wait":
                tk.wait()  # done before the close, or not: the same afterwards
            t.close()
            gc.collect()  # nothing else holds the table: its native close has run
            if way == "wait":
                with self.assertRaisesRegex(eht.EhtError, "closed"):
                    tk.wait()
                with self.assertRaises(eht.EhtError):
                    tk.wait()
                tk.release()  # the failing wait released it: nothing left to do
            elif way == "release":
                with self.assertRaisesRegex(eht.EhtError, "closed"):
                    tk.release()
                tk.release()  # once
                with self.assertRaises(eht.EhtError):
                    tk.wait()
            elif way == "rows":
                self.assertEqual(tk.rows, 0)
                del tk
            elif way == "with":
                with self.assertRaises(eht.EhtError):
                    with tk:
                        pass
            else:
                del tk  # its finalizer releases it quietly
            gc.collect()

    def test_close_while_waited(self):
        for _ in range(5):
            t = self.table()
            tk = eht.disk.prefetch(t, self.ids())
            result = {}

            def waiter():
                try:
                    tk.wait()
                    result["rc"] = "ok"
                except eht.EhtError:
                    result["rc"] = "closed"
                except Exception as e:  # noqa: BLE001
                    result["rc"] = e

            th = threading.Thread(target=waiter)
            th.start()
            t.close()
            gc.collect()
            th.join(60)
            self.assertFalse(th.is_alive())
            self.assertIn(result.get("rc"), ("ok", "closed"))
            try:
                tk.release()
            except eht.EhtError:
                pass
            tk = None


class TestHotsetFifo(unittest.TestCase):
    def test_fifo_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "hot")
            os.mkfifo(fifo)
            signal.alarm(20)  # a reader that blocks on the FIFO dies here (the test fails)
            try:
                with self.assertRaises(ValueError) as cm:
                    eht.read_hotset(fifo)
                self.assertIn("FIFO", str(cm.exception))
            finally:
                signal.alarm(0)


if __name__ == "__main__":
    unittest.main()
