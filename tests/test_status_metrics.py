# SPDX-License-Identifier: Apache-2.0
"""test_status_metrics.py: `eht status KEY --metrics` of a running `eht serve` in the Prometheus text
exposition format: every family has HELP and TYPE before its samples, every sample line parses (name,
labels with escaped values, a number), the values agree with `eht status --json` (tables, rows, bytes,
workers, readiness); --json with --metrics is a usage error. Runs without a GPU."""
import json
import os
import re
import subprocess
import sys

import pyutil

cli = pyutil.cli_or_skip()
check = pyutil.Checks()
key = "metrics-%d" % os.getpid()
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*)\} (-?[0-9.eE+]+)$')
with pyutil.serve_synth(cli, key, 2000) as srv:
    env = dict(os.environ)
    r = subprocess.run([cli, "status", key, "--metrics"], capture_output=True, text=True, env=env, timeout=60)
    j = subprocess.run([cli, "status", key, "--json"], capture_output=True, text=True, env=env, timeout=60)
    both = subprocess.run([cli, "status", key, "--json", "--metrics"], capture_output=True, text=True, env=env, timeout=60)
check(r.returncode == 0, "status --metrics exit %d: %s" % (r.returncode, r.stderr))
check(both.returncode == 2, "--json with --metrics is a usage error (exit %d)" % both.returncode)
server = json.loads(j.stdout)["servers"][0] if j.returncode == 0 else {}
seen, typed, values = set(), set(), {}
for line in r.stdout.splitlines():
    if line.startswith("# HELP ") or line.startswith("# TYPE "):
        parts = line.split(" ", 3)
        check(len(parts) == 4 and parts[3], "comment line %r" % line)
        (typed if parts[1] == "TYPE" else seen).add(parts[2])
        continue
    m = SAMPLE.match(line)
    check(m is not None, "sample line %r" % line)
    if not m:
        continue
    check(m.group(1) in seen and m.group(1) in typed, "%s: HELP and TYPE before its samples" % m.group(1))
    labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2)))
    values.setdefault(m.group(1), []).append((labels, float(m.group(3))))
check(values.get("eht_server_ready") == [({"key": key}, 1.0)], "ready: %r" % values.get("eht_server_ready"))
tables = server.get("tables", [])
check(len(values.get("eht_table_rows", [])) == len(tables) > 0, "one rows sample per table")
for t in tables:
    rows = [v for lab, v in values.get("eht_table_rows", []) if lab.get("table") == t["name"] and lab.get("tier") == t["tier"]]
    byts = [v for lab, v in values.get("eht_table_bytes", []) if lab.get("table") == t["name"]]
    check(rows == [float(t["rows"])] and byts == [float(t["bytes"])], "table %s: rows %r bytes %r" % (t["name"], rows, byts))
check(values.get("eht_server_bytes", [({}, -1)])[0][1] == float(server.get("bytes", -2)), "server bytes")
check(values.get("eht_server_workers", [({}, -1)])[0][1] == float(len(server.get("workers", []))), "workers")
print("PASS" if check.failures == 0 else "FAIL: %d" % check.failures)
sys.exit(1 if check.failures else 0)
