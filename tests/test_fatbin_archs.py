#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_fatbin_archs.py: libeht.so embeds machine code for every GPU architecture the build asks for
(EHT_CUDA_ARCHS, by default sm_80, sm_90, sm_100 and sm_120: A100, H100/H200, B200/GB200, RTX
Blackwell) that its nvcc can build, plus PTX of the last, in each kernel image: without sm_100 a
B200 would JIT-compile PTX at first load. Read from the library's bytes (the fatbin headers), so
it checks what ships. Skips (77) in a CPU-only build."""
import os
import re
import struct
import subprocess
import sys

MAGIC = struct.pack("<I", 0xBA55ED50)


def images(blob):
    """[(kind, arch)] per fatbin found in blob: kind 1 PTX, 2 ELF (SASS)."""
    out, pos = [], 0
    while True:
        pos = blob.find(MAGIC, pos)
        if pos < 0:
            return out
        _, _, hsize, fsize = struct.unpack_from("<IHHQ", blob, pos)
        entries, off, end = [], pos + hsize, pos + hsize + fsize
        while off + 32 <= end:
            kind, _, ehsize, size = struct.unpack_from("<HHIQ", blob, off)
            arch = struct.unpack_from("<I", blob, off + 28)[0]
            if kind not in (1, 2) or ehsize == 0:
                break
            entries.append((kind, arch))
            off += ehsize + size
        if entries:
            out.append(entries)
        pos = max(end, pos + 4)


def main():
    lib = os.environ.get("EHT_LIB")
    if not lib:
        print("SKIP: EHT_LIB not set")
        return 77
    build = os.path.dirname(os.path.realpath(lib))
    cache = {}
    try:
        with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8") as f:
            for line in f:
                m = re.match(r"^([A-Za-z_0-9]+):[A-Z]+=(.*)$", line.strip())
                if m:
                    cache[m.group(1)] = m.group(2)
    except OSError:
        print("SKIP: no CMakeCache.txt next to %s" % lib)
        return 77
    with open(os.path.realpath(lib), "rb") as f:
        fatbins = images(f.read())
    if not fatbins:
        print("SKIP: a CPU-only build (no kernel images in %s)" % lib)
        return 77
    nvcc = cache.get("EHT_NVCC", "")
    try:
        codes = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        codes = ""
    # The default unless the build was told otherwise (-DEHT_CUDA_ARCHS=90 for a quick build).
    want = [int(a) for a in cache.get("EHT_CUDA_ARCHS", "80;90;100;120").split(";") if a.isdigit()]
    want = [a for a in want if not codes or re.search(r"\bsm_%d\b" % a, codes)]
    fails = []
    for i, entries in enumerate(fatbins):
        sass = sorted(a for k, a in entries if k == 2)
        ptx = sorted(a for k, a in entries if k == 1)
        for a in want:
            if a not in sass:
                fails.append("kernel image %d has no sm_%d code (it has %s)" % (i, a, sass))
        if want and want[-1] not in ptx:
            fails.append("kernel image %d has no compute_%d PTX (it has %s)" % (i, want[-1], ptx))
    for f in fails:
        print("FAIL:", f)
    if fails:
        return 1
    print("test_fatbin_archs: %d kernel images, each with sm_%s and PTX"
          % (len(fatbins), ", sm_".join(str(a) for a in want)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
