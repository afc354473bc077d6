# SPDX-License-Identifier: Apache-2.0
"""test_python_split.py: eht.wrap(..., layout="split") over an engine's own storage (weights [rows, 256]
then scales [rows, 8]; one buffer, or a (weights, scales) pair) looks up the same bytes as the packed
table of the same rows (CPU, HOST strategy; with device=, where no GPU is, the same through the CPU
fallback); its argument errors. Runs without torch or a GPU (test_gpu_lookup_split reads split tables
on one)."""
import array
import random
import sys

import pyutil

eht = pyutil.import_eht_cpu()
if eht is None:
    sys.exit(77)
check = pyutil.Checks()
ROWS, RB = 3000, 264
rnd = random.Random(5)
packed = bytearray(rnd.getrandbits(8) for _ in range(ROWS * RB))
weights = bytearray(b"".join(packed[r * RB:r * RB + 256] for r in range(ROWS)))
scales = bytearray(b"".join(packed[r * RB + 256:(r + 1) * RB] for r in range(ROWS)))
one = weights + scales

tp = eht.wrap(packed, ROWS, RB, name="packed")
ids = array.array("q", [rnd.randrange(-1, ROWS + 2) for _ in range(2000)])
want = bytearray(len(ids) * RB)
tp.lookup(ids, want, strategy="host")
for what, buf in (("one buffer", one), ("two buffers", (weights, scales))):
    ts = eht.wrap(buf, ROWS, RB, layout="split", name="split")
    check(ts.row_bytes == RB and ts.rows == ROWS, "%s: rows and row bytes" % what)
    got = bytearray(len(ids) * RB)
    ts.lookup(ids, got, strategy="host")
    check(got == want, "%s: the split table's rows equal the packed table's" % what)
    ts.close()
    # device=: the GPU reads it in place where there is one; here (EHT_NO_CUDA=1) one warning and the
    # CPU serves it, as a packed wrap with a device
    ts = eht.wrap(buf, ROWS, RB, layout="split", device=0, name="split-dev")
    check(ts.device_ptr == 0, "%s, device=0: no packed rows to point at" % what)
    got = bytearray(len(ids) * RB)
    ts.lookup(ids, got)
    check(got == want, "%s, device=0: the split table's rows equal the packed table's" % what)
    ts.close()


raises = check.raises


raises(ValueError, "layout", lambda: eht.wrap(packed, ROWS, RB, layout="columns"))
raises(ValueError, "row_bytes > 256", lambda: eht.wrap(one, ROWS, 200, layout="split"))
raises(ValueError, "need more", lambda: eht.wrap(one[:100], ROWS, RB, layout="split"))
raises(ValueError, "scales", lambda: eht.wrap((weights, scales[:10]), ROWS, RB, layout="split"))
raises(ValueError, "device", lambda: eht.wrap(one, ROWS, RB, layout="split", device=-3))
print("PASS" if check.failures == 0 else "FAIL: %d" % check.failures)
sys.exit(1 if check.failures else 0)
