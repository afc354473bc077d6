# SPDX-License-Identifier: Apache-2.0
"""test_status_foreign.py: `eht status KEY` of a server whose answer lacks fields or gives them other
types (a server of another eht version: fields come and go between releases). A stand-in server binds
the status name `eht serve` would and answers such JSON; every form of the command exits 0, prints
"?" (or an empty label) for what is missing and never "(null)", the text C's printf makes of a NULL
string, which is undefined behaviour. Runs without a GPU."""
import json
import os
import socket
import struct
import subprocess
import sys
import threading

import pyutil

cli = pyutil.cli_or_skip()
check = pyutil.Checks()
key = "foreign-%d" % os.getpid()
# Strings missing, numbers where strings go, objects where numbers go: what a mismatched version sends.
ANSWER = {
    "key": 7,
    "pid": "one",
    "state": None,
    "ready": False,
    "tables": [{"name": None, "tier": 3, "rows": 10, "row_bytes": 264}, {}],
    "workers": [{"copy": 0}, {}],
    "copies": [{}],
    "copies_note": 5,
    "cpu_budget": {},
}
text = json.dumps(ANSWER).encode()

srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind("\0eht.status.%d.%s" % (os.getuid(), key))  # serve_status.c's abstract name
srv.listen(8)
stop = threading.Event()


def serve():
    while not stop.is_set():
        try:
            c, _ = srv.accept()
        except OSError:
            return
        with c:
            c.sendall(struct.pack("=I", len(text)) + text)


th = threading.Thread(target=serve, daemon=True)
th.start()
try:
    for args in ([], ["--json"], ["--metrics"]):
        r = subprocess.run([cli, "status", key] + args, capture_output=True, text=True, timeout=60)
        what = "eht status %s %s" % (key, " ".join(args))
        check(r.returncode == 0, "%s: exit %d: %s" % (what, r.returncode, r.stderr))
        check("(null)" not in r.stdout, "%s printed a NULL string:\n%s" % (what, r.stdout))
        if not args:
            check("key ?" in r.stdout and "checkpoint ?" in r.stdout,
                  "%s: missing strings read '?':\n%s" % (what, r.stdout))
        if args == ["--json"]:
            got = json.loads(r.stdout)["servers"] if r.returncode == 0 else []
            check(got == [ANSWER], "%s: the answer passed through as sent: %r" % (what, got))
        if args == ["--metrics"]:
            check('eht_table_rows{key="",table="",tier=""} 10' in r.stdout,
                  "%s: missing labels are empty:\n%s" % (what, r.stdout))
finally:
    stop.set()
    srv.shutdown(socket.SHUT_RDWR)
    srv.close()
    th.join(5)
sys.exit(1 if check.failures else 0)
