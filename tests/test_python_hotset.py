# SPDX-License-Identifier: Apache-2.0
# test_python_hotset.py: eht.read_hotset reads what `eht hotset build`'s format holds and refuses bad
# files; Lookup.set_hotset on a CPU-only engine is a clear EhtError (the GPU side is in
# tests/test_gpu_lookup_hot.c).
import json
import os
import struct
import sys
import tempfile

import eht


def refused(what, call, text):
    """1 (a failure) unless call raises an EhtError whose message holds text."""
    try:
        call()
    except eht.EhtError as e:
        if text in str(e):
            return 0
        print("%s: unclear error: %s" % (what, e))
        return 1
    print("%s did not fail" % what)
    return 1


def bad_files(p, contents, what):
    """Failures: each of contents written to p that eht.read_hotset does not refuse with a ValueError."""
    n = 0
    for bad in contents:
        with open(p, "wb") as f:
            f.write(bad)
        try:
            eht.read_hotset(p)
            print(what)
            n += 1
        except ValueError:
            pass
    return n


def main():
    fails = 0
    d = tempfile.mkdtemp(prefix="eht-pyhot-")
    p = os.path.join(d, "h.hot")
    with open(p, "wb") as f:
        f.write(b"EHTHOT1\n" + struct.pack("<Q", 3) + struct.pack("<3q", 5, 1, 7))
    if eht.read_hotset(p) != [5, 1, 7]:
        print("read_hotset: wrong rows"); fails += 1
    fails += bad_files(p, (b"EHTHOT1\n" + struct.pack("<Q", 3) + struct.pack("<2q", 5, 1),
                           b"XHTHOT1\n" + struct.pack("<Q", 1) + struct.pack("<q", 5),
                           b"EHTHOT1\n" + struct.pack("<Q", 1) + struct.pack("<q", -5)),
                       "read_hotset accepted a bad file")
    # The format `eht hotset build` writes: safetensors, one I64 tensor.
    cli, fx = os.environ.get("EHT_CLI"), os.environ.get("EHT_FIXTURES", "")
    wl = os.path.join(fx, "..", "workloads", "text_500k.compressed.u32")
    if cli and os.path.exists(wl):
        import subprocess
        subprocess.run([cli, "hotset", "build", "--workload", "text:" + wl, "--rows", "50", "-o", p],
                       check=True, stdout=subprocess.DEVNULL)
        with open(p, "rb") as f:
            (hlen,) = struct.unpack("<Q", f.read(8))
            hdr = json.loads(f.read(hlen))
        got = eht.read_hotset(p)
        if hdr.get("hotset", {}).get("dtype") != "I64" or len(got) != 50 or len(set(got)) != 50:
            print("eht hotset build's file: header %s, %d rows" % (hdr, len(got))); fails += 1
    def st(dtype, rows, extra=None):
        hdr = {"__metadata__": {"format": "eht-hotset-1"},
               "hotset": {"dtype": dtype, "shape": [len(rows)], "data_offsets": [0, 8 * len(rows)]}}
        hdr.update(extra or {})
        h = json.dumps(hdr).encode()
        return struct.pack("<Q", len(h)) + h + struct.pack("<%dq" % len(rows), *rows)
    with open(p, "wb") as f:
        f.write(st("I64", [9, 3, 4]))
    if eht.read_hotset(p) != [9, 3, 4]:
        print("read_hotset of a safetensors hot set: wrong rows"); fails += 1
    fails += bad_files(p, (st("I32", [1, 2]), st("I64", [1, -2]),
                           st("I64", [1], {"x": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}}),
                           st("I64", [1, 2])[:-4], b"\x05\x00"),
                       "read_hotset accepted a bad safetensors file")
    os.remove(p)
    os.rmdir(d)
    rows, rb = 64, 16
    data = bytearray(os.urandom(rows * rb))
    t = eht.wrap(data, rows, rb, name="pyhot")
    lk = eht.Lookup(t, strategy="host", cpu_only=True)
    fails += refused("set_hotset on a CPU-only engine", lambda: lk.set_hotset([1, 2]), "GPU")
    if lk.hotset_rows != 0:
        print("hotset_rows != 0"); fails += 1
    # A refresh or adapting needs a hot set; apply without one does nothing.
    fails += refused("update_hotset without a hot set", lambda: lk.update_hotset([1, 2]), "no hot set")
    fails += refused("adapt_hotset without a hot set", lambda: lk.adapt_hotset(100), "no hot set")
    if lk.hotset_hit_rate is not None or lk.hotset_refreshes != 0:
        print("hit rate / refreshes of an engine that does not adapt"); fails += 1
    if lk.apply_hotset(stream=0) is not False:
        print("apply_hotset without a hot set applied something"); fails += 1
    fails += refused("gpu_dedup with cpu_only",
                     lambda: eht.Lookup(t, strategy="host", cpu_only=True, gpu_dedup=True), "GPU_DEDUP")
    print("PASS" if not fails else "FAIL")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
