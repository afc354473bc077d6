#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_python_api.py: the Python module's operator-facing API: __version__ matches the library,
library_path, status() of a running server (and ENOENT for a key nobody serves), torch-style device
arguments."""
import errno
import os
import subprocess
import sys
import tempfile
import time

import eht


def main():
    fails = []
    if eht.__version__ != eht.version():
        fails.append("__version__ %s != libeht %s" % (eht.__version__, eht.version()))
    if not os.path.exists(eht.library_path()):
        fails.append("library_path %r does not exist" % eht.library_path())
    d = eht._device_index
    for arg, want in ((None, -1), (2, 2), ("cpu", -1), ("cuda", 0), ("cuda:3", 3)):
        if d(arg) != want:
            fails.append("device %r gave %r, want %r" % (arg, d(arg), want))
    for bad in ("tpu:0", True):
        try:
            d(bad)
            fails.append("device %r accepted" % (bad,))
        except (ValueError, TypeError):
            pass
    try:
        eht.status("eht-test-nobody-%d" % os.getpid())
        fails.append("status of an unserved key did not raise")
    except eht.EhtError as e:
        if e.errno != errno.ENOENT:
            fails.append("status of an unserved key: errno %s" % e.errno)
    cli = os.environ.get("EHT_CLI")
    if cli:
        with tempfile.TemporaryDirectory() as tmp:
            ck = os.path.join(tmp, "ck")
            subprocess.run([cli, "synth", ck, "--rows", "500"], check=True, stdout=subprocess.DEVNULL)
            key = "eht-test-pyapi-%d" % os.getpid()
            ready = os.path.join(tmp, "ready")
            srv = subprocess.Popen([cli, "serve", ck, "--key", key, "--tier", "region", "--ready-file", ready],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                for _ in range(300):
                    if os.path.exists(ready):
                        break
                    time.sleep(0.05)
                st = eht.status(key)
                if not (st.get("ready") is True and len(st.get("tables", [])) == 2 and st.get("pid") == srv.pid):
                    fails.append("status(%s) = %r" % (key, st))
                if key not in [s.get("key") for s in eht.status()]:
                    fails.append("status() does not list %s" % key)
            finally:
                srv.terminate()
                srv.wait(30)
    else:
        fails.append("EHT_CLI not set: the server part was not run")
    for f in fails:
        print("FAIL: " + f, file=sys.stderr)
    print("test_python_api: %s" % ("ok" if not fails else "%d failure(s)" % len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
