# SPDX-License-Identifier: Apache-2.0
"""test_python_metrics.py: eht.metrics() follows the process's lookups (calls, ids, the CPU path, dead
ids) and eht.metrics_prometheus() writes them in the text exposition format (HELP, TYPE, one sample
each, parseable). Runs without torch or a GPU."""
import array
import re
import sys

import pyutil

eht = pyutil.import_eht_cpu()
if eht is None:
    sys.exit(77)
check = pyutil.Checks()
rows = bytearray(range(256)) * (264 * 500 // 256 + 1)
t = eht.wrap(rows, 500, 264)
m0 = eht.metrics()
ids = array.array("q", [i if i % 5 else -1 for i in range(200)])
out = bytearray(200 * 264)
for _ in range(2):
    t.lookup(ids, out, strategy="host")
m1 = eht.metrics()
check(m1["calls"] - m0["calls"] == 2, "two calls counted: %s" % (m1["calls"] - m0["calls"]))
check(m1["ids"] - m0["ids"] == 400, "their ids counted")
check(m1["calls_cpu"] - m0["calls_cpu"] == 2, "on the CPU path")
check(m1["dead_cpu"] - m0["dead_cpu"] == 80, "their dead ids counted")
text = eht.metrics_prometheus()
samples = {}
for line in text.splitlines():
    if line.startswith("#"):
        check(re.match(r"^# (HELP|TYPE) eht_lookup_\w+_total .+$", line) is not None, "comment line %r" % line)
        continue
    mm = re.match(r"^(eht_lookup_\w+_total) (\d+)$", line)
    check(mm is not None, "sample line %r" % line)
    if mm:
        samples[mm.group(1)] = int(mm.group(2))
check(set(samples) == {"eht_lookup_%s_total" % n for n in m1}, "one sample per counter")
check(samples.get("eht_lookup_calls_total", 0) >= m1["calls"], "the samples are current")
print("PASS" if check.failures == 0 else "FAIL: %d" % check.failures)
sys.exit(1 if check.failures else 0)
