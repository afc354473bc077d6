# SPDX-License-Identifier: Apache-2.0
"""The Python module with the standard library only: wrap + lookup, serve + attach + lookup,
errors as EhtError, and a served table failing once its server is gone."""
import array
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.environ.get("EHT_SOURCE_DIR", "."), "python"))
os.environ.setdefault("EHT_NO_CUDA", "1")
import eht  # noqa: E402

CLI = os.environ.get("EHT_CLI")


def read_tensor(path, name):
    """A tensor's bytes, straight from a safetensors file (reference for the checks)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        begin, end = header[name]["data_offsets"]
        f.seek(8 + n + begin)
        return f.read(end - begin)


def find_file(ckpt, name):
    index = os.path.join(ckpt, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            return os.path.join(ckpt, json.load(f)["weight_map"][name])
    return os.path.join(ckpt, "model.safetensors")


class TestEht(unittest.TestCase):
    def test_version(self):
        self.assertRegex(eht.version(), r"^\d+\.\d+\.\d+$")

    def test_wrap_lookup(self):
        rows, rb = 1000, 24
        buf = bytearray(os.urandom(rows * rb))
        t = eht.wrap(buf, rows, rb, name="py")
        self.assertEqual((t.rows, t.row_bytes, t.tier), (rows, rb, "memory"))
        self.assertGreaterEqual(t.cpu_page_size(), 4096)  # the buffer is resident: smaps knows its pages
        lk = t.lookup_engine(strategy="host", cpu_only=True)
        ids = array.array("q", [5, 999, -1, 5, 1000, 0])
        out = bytearray(b"\xab" * (len(ids) * rb))
        dead = lk.run(ids, out)
        self.assertEqual(dead, 2)
        for i, r in enumerate(ids):
            want = buf[r * rb:(r + 1) * rb] if 0 <= r < rows else bytes(rb)
            self.assertEqual(out[i * rb:(i + 1) * rb], want)
        ids32 = array.array("i", [1, 2])
        out2 = bytearray(2 * rb)
        self.assertEqual(lk.run(ids32, out2, id_offset=10), 0)
        self.assertEqual(out2[:rb], buf[11 * rb:12 * rb])
        with self.assertRaises(eht.EhtError) as cm:
            lk.run(array.array("q", [rows]), bytearray(rb), dead_is_error=True)
        self.assertEqual(cm.exception.errno, 34)  # ERANGE
        with self.assertRaises(ValueError):
            lk.run(ids, bytearray(rb))  # output too small
        lk.close()
        t.close()

    @unittest.skipIf(not CLI, "EHT_CLI not set")
    def test_serve_attach(self):
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = os.path.join(tmp, "ckpt")
            subprocess.run([CLI, "synth", ckpt, "--rows", "2000", "--shards", "2"], check=True,
                           stdout=subprocess.DEVNULL)
            env = dict(os.environ, EHT_SHM_DIR=tmp)
            key = "pytest-%d" % os.getpid()
            srv = subprocess.Popen([CLI, "serve", ckpt, "--key", key], stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, env=env, text=True)
            try:
                for line in srv.stdout:
                    if "serving under key" in line:
                        break
                with eht.attach(key, timeout=10) as c:
                    name = "layers.1.engram.embed"
                    self.assertIn(name, c.tables)
                    t = c.tables[name]
                    self.assertEqual(t.row_bytes, 264)
                    w = read_tensor(find_file(ckpt, name + ".weight"), name + ".weight")
                    s = read_tensor(find_file(ckpt, name + ".scale"), name + ".scale")
                    lk = t.lookup_engine(strategy="host", cpu_only=True)
                    ids = array.array("q", [0, 1999, 7, 7, -5])
                    out = bytearray(len(ids) * 264)
                    self.assertEqual(lk.run(ids, out), 1)
                    for i, r in enumerate(ids):
                        want = w[r * 256:(r + 1) * 256] + s[r * 8:(r + 1) * 8] if r >= 0 else bytes(264)
                        self.assertEqual(out[i * 264:(i + 1) * 264], want)
                    self.assertEqual(bytes(t.host_view()[:256]), w[:256])
                    out2 = bytearray(len(ids) * 264)
                    self.assertEqual(t.lookup(ids, out2, strategy="host"), 1)  # the convenience call
                    self.assertEqual(out2, out)
                    c.check()
                    srv.send_signal(signal.SIGKILL)
                    srv.wait()
                    with self.assertRaises(eht.EhtError) as cm:
                        lk.run(ids, out)
                    self.assertIn("gone", str(cm.exception))
                    lk.close()
            finally:
                if srv.poll() is None:
                    srv.kill()
                    srv.wait()
                srv.stdout.close()

    def test_attach_timeout(self):
        with self.assertRaises(eht.EhtError) as cm:
            eht.attach("no-such-key-%d" % os.getpid(), timeout=0.2, wait=True)
        self.assertEqual(cm.exception.errno, 110)  # ETIMEDOUT: waited for a server (else ENOENT at once)


if __name__ == "__main__":
    unittest.main()
