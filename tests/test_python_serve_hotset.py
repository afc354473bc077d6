# SPDX-License-Identifier: Apache-2.0
"""test_python_serve_hotset.py: Table.hotset() gives the rows `eht serve --hotset` handed over, bit-exact
(None for a table served without one), and `eht worker --json` says which hot set its engines used
(none on the CPU; --no-hotset and --hotset together are a usage error)."""
import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("EHT_SOURCE_DIR", "."), "python"))
os.environ.setdefault("EHT_NO_CUDA", "1")
import eht  # noqa: E402

CLI = os.environ.get("EHT_CLI")


def main():
    if not CLI:
        print("SKIP: EHT_CLI not set")
        return 77
    fails = 0
    rows = [2999, 0, 17, 1234, 5, 6]
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "ckpt")
        subprocess.run([CLI, "synth", ckpt, "--rows", "3000", "--tables", "2"], check=True,
                       stdout=subprocess.DEVNULL)
        hot = os.path.join(tmp, "h.hot")
        with open(hot, "wb") as f:
            f.write(b"EHTHOT1\n" + struct.pack("<Q", len(rows)) + struct.pack("<%dq" % len(rows), *rows))
        shm = os.path.join(tmp, "shm")
        os.mkdir(shm)
        env = dict(os.environ, EHT_SHM_DIR=shm)
        key = "pyhot-%d" % os.getpid()
        srv = subprocess.Popen([CLI, "serve", ckpt, "--key", key, "--hotset", "layers.14.engram.embed=" + hot],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
        try:
            said = ""
            for line in srv.stdout:
                said += line
                if "serving under key" in line:
                    break
            if "hot set %s: 6 rows of table layers.14.engram.embed" % hot not in said:
                print("eht serve did not list the hot set:\n" + said); fails += 1
            with eht.attach(key, timeout=10) as c:
                got = c.tables["layers.14.engram.embed"].hotset()
                if got is None or list(got) != rows or got.itemsize != 8:
                    print("hotset(): %r, want %r" % (got, rows)); fails += 1
                if c.tables["layers.1.engram.embed"].hotset() is not None:
                    print("a table served without a hot set has one"); fails += 1
            out = subprocess.run([CLI, "worker", key, "--check", ckpt, "--ids", "500", "--reps", "1", "--json"],
                                 capture_output=True, text=True, env=env)
            doc = json.loads(out.stdout) if out.returncode == 0 else {}
            res = doc.get("results", [])
            if not res or any(r.get("hotset") != "none" or r.get("hotset_rows") != 0 for r in res):
                print("eht worker (CPU) hot set report: rc %d %s %s" % (out.returncode, out.stdout, out.stderr))
                fails += 1
            bad = subprocess.run([CLI, "worker", key, "--check", ckpt, "--hotset", hot, "--no-hotset"],
                                 capture_output=True, text=True, env=env)
            if bad.returncode != 2:
                print("--hotset with --no-hotset: rc %d" % bad.returncode); fails += 1
        finally:
            srv.terminate()
            srv.wait()
            srv.stdout.close()
        if os.listdir(shm):
            print("left in the shm directory: %s" % os.listdir(shm)); fails += 1
    print("PASS" if not fails else "FAIL")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
