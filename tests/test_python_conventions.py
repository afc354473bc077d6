#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_python_conventions.py: the module behaves as Python code expects. attach() of a key nobody
serves fails at once with ENOENT (it waited out the 60 s timeout), and waits only with wait=True
(then ETIMEDOUT); libeht's warnings arrive through logging (logger "eht"), not on stderr; every
handle (Client, Table, Lookup, Region, SharedTable, Group) is a context manager with a repr saying
whether it is closed; a served table says it is not writable and as_tensor() refuses it unless told
the tensor is only read (torch has no read-only tensors: a write would kill the process)."""
import errno
import logging
import os
import subprocess
import tempfile
import unittest

os.environ.pop("EHT_LOG", None)  # libeht's warnings are checked at its default level
import eht  # noqa: E402


class Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


class Conventions(unittest.TestCase):
    def test_attach_missing_key(self):
        key = "eht-test-nobody-%d" % os.getpid()
        with self.assertRaises(eht.EhtError) as cm:
            eht.attach(key, timeout=60)
        self.assertEqual(cm.exception.errno, errno.ENOENT)
        self.assertIn("no server holds key", str(cm.exception))
        self.assertIn("wait=True", str(cm.exception))
        with self.assertRaises(eht.EhtError) as cm:
            eht.attach(key, timeout=0.2, wait=True)
        self.assertEqual(cm.exception.errno, errno.ETIMEDOUT)

    def test_warnings_through_logging(self):
        cap = Capture()
        log = logging.getLogger("eht")
        log.addHandler(cap)
        try:
            # Pinning for a GPU that no node has (ordinal 4096): it fails with or without CUDA, so
            # libeht warns and the table stays CPU-only (device=0 pinned fine on a GPU machine).
            t = eht.wrap(bytearray(64 * 16), 16, 64, device=4096)
            t.close()
        finally:
            log.removeHandler(cap)
        msgs = [r.getMessage() for r in cap.records if r.levelno == logging.WARNING]
        self.assertTrue(any("cannot pin" in m for m in msgs), msgs)

    def test_context_managers(self):
        with eht.wrap(bytearray(64 * 16), 16, 64) as t:
            self.assertNotIn("closed", repr(t))
            self.assertTrue(t.writable)
            with t.lookup_engine(strategy="host", cpu_only=True) as lk:
                self.assertIn("eht.Lookup", repr(lk))
            self.assertIn("closed", repr(lk))
            with self.assertRaises(eht.EhtError):
                lk.run(bytes(8), bytearray(64))
        self.assertIn("closed", repr(t))
        with self.assertRaises(eht.EhtError):
            t.lookup(bytes(8), bytearray(64))
        name = "eht-test-conv-%d" % os.getpid()
        with tempfile.TemporaryDirectory() as d:
            os.environ["EHT_SHM_DIR"] = d
            eht._reload_settings()  # libeht reads its settings once
            try:
                with eht.Region(name, 4096) as r:
                    r.mark_ready()
                    self.assertIn(name, repr(r))
                self.assertIn("closed", repr(r))
            finally:
                del os.environ["EHT_SHM_DIR"]
                eht._reload_settings()
                try:
                    eht.Region.unlink(name, d)
                except eht.EhtError:
                    pass
        for cls in (eht.Client, eht.Table, eht.Lookup, eht.Region, eht.SharedTable, eht.Group):
            self.assertTrue(hasattr(cls, "__enter__") and hasattr(cls, "__exit__"), cls)

    def test_served_table_read_only(self):
        cli = os.environ.get("EHT_CLI")
        if not cli:
            self.skipTest("EHT_CLI not set")
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = os.path.join(tmp, "ckpt")
            subprocess.run([cli, "synth", ckpt, "--rows", "500"], check=True, stdout=subprocess.DEVNULL)
            key = "pyconv-%d" % os.getpid()
            ready = os.path.join(tmp, "ready")
            env = dict(os.environ, EHT_SHM_DIR=tmp)
            env.pop("LD_PRELOAD", None)
            srv = subprocess.Popen([cli, "serve", ckpt, "--key", key, "--tier", "region", "--ready-file", ready],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            try:
                with eht.attach(key, timeout=30, wait=True) as c:
                    self.assertIn(key, repr(c))
                    t = c.tables["layers.1.engram.embed"]
                    self.assertFalse(t.writable)
                    try:
                        import torch  # noqa: F401
                    except ImportError:
                        torch = None
                    if torch is not None:
                        with self.assertRaises(eht.EhtError) as cm:
                            t.as_tensor(device="cpu")
                        self.assertEqual(cm.exception.errno, errno.EROFS)
                        self.assertEqual(tuple(t.as_tensor(device="cpu", readonly=True).shape), (500, 264))
            finally:
                srv.terminate()
                srv.wait()


if __name__ == "__main__":
    unittest.main()
