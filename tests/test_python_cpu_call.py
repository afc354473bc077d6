# SPDX-License-Identifier: Apache-2.0
"""test_python_cpu_call.py: a CPU lookup from Python without torch asks for torch once per process, not
once a call (a failed import cost 500-700 us a call), so the call stays close to the C call. Counted with
an import hook, not timed. Runs without a GPU; skips where torch is installed (nothing to fail)."""
import array
import builtins
import importlib
import sys

import pyutil

eht = pyutil.import_eht_cpu()
if eht is None:
    sys.exit(77)
try:
    importlib.import_module("torch")
    print("SKIP: torch is installed")
    sys.exit(77)
except ImportError:
    pass
check = pyutil.Checks()
asked = [0]
real_import = builtins.__import__


def counting_import(name, *a, **kw):
    if name == "torch":
        asked[0] += 1
    return real_import(name, *a, **kw)


rows = bytearray(64 * 100)
t = eht.wrap(rows, 100, 64)
lk = t.lookup_engine(strategy="host", cpu_only=True)
ids, out = array.array("q", [1, 2, 3]), bytearray(3 * 64)
lk.run(ids, out)  # the first call may look for torch
builtins.__import__ = counting_import
try:
    for _ in range(200):
        lk.run(ids, out)
finally:
    builtins.__import__ = real_import
check(asked[0] == 0, "torch looked for %d times in 200 calls after the first" % asked[0])
print("PASS" if check.failures == 0 else "FAIL: %d" % check.failures)
sys.exit(1 if check.failures else 0)
