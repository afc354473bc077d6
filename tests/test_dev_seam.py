#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_dev_seam.py: the device layer is the only way to the GPU driver. No file outside src/gpu/cuda
(the CUDA backend; the rest of src/gpu is backend-neutral) names the CUDA driver (eht_cu.*, EHT_CU_*, CU* types and constants, CUDA_* results, cuda/ headers),
except the ABI check of src/gpu/cuda/cu_types.h; no file outside src/gpu/cuda includes a src/gpu/cuda header; and every
driver entry point the loader resolves is called somewhere (an unused one would be a symbol the
loader demands for nothing); the same for the HIP backend (src/gpu/hip, its fake runtime tests/fake_hip).
A failure names the file, line and token. Runs without a GPU."""
import os
import re
import sys

src = os.environ.get("EHT_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..")
DRIVER = re.compile(r"\beht_cu[._]\w+|\bEHT_CU_(?!HIDE\b)\w+|\bCU(?:result|device|deviceptr|stream|event|graph|graphExec|"
                    r"module|function|context|hostFn|mem\w+)\b|\bCU_[A-Z0-9_]+\b|\bCUDA_(?:SUCCESS|ERROR_\w+)\b|"
                    r'#include\s+"(?:gpu/)?cuda/')
ABI_CHECK = ("tests/cu_abi_eht.c", "tests/test_cu_abi.c", "tests/cu_abi_list.h")


def sources():
    for top in ("src", "tools", "tests", "mpi", "adapters", "examples", "python"):
        for dirpath, _, files in os.walk(os.path.join(src, top)):
            for f in files:
                if f.endswith((".c", ".h", ".cu", ".cuh")):
                    p = os.path.join(dirpath, f)
                    yield os.path.relpath(p, src), p


def code_lines(text):
    """(line number, code) with comments blanked out, so prose may name the driver."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    for i, line in enumerate(text.split("\n"), 1):
        yield i, re.sub(r"//.*", "", line)


bad = 0
for rel, path in sources():
    if rel.startswith("src/gpu/cuda/") or rel in ABI_CHECK:
        continue
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for n, line in code_lines(text):
        m = DRIVER.search(line)
        if not m:
            continue
        print("%s:%d: names the CUDA driver (%s): call src/gpu/dev.h instead" % (rel, n, m.group(0)), file=sys.stderr)
        bad += 1

# src/gpu/cuda headers stay inside the backend.
for rel, path in sources():
    if rel.startswith("src/gpu/cuda/") or rel in ABI_CHECK:
        continue
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if re.search(r'#include\s+"gpu/cuda/', line):
                print("%s:%d: includes a CUDA backend header" % (rel, n), file=sys.stderr)
                bad += 1

# Every entry point in the loader's table is called through it.
with open(os.path.join(src, "src/gpu/cuda/cu_driver.h")) as f:
    table = f.read()
names = re.findall(r"X\((cu\w+),\s*([A-Z_]+),", table)
if len(names) < 40:
    print("cu_driver.h: could not read the entry point table (%d found)" % len(names), file=sys.stderr)
    bad += 1
users = ""
for rel, path in sources():
    if rel != "src/gpu/cuda/cu_driver.h" and (rel.startswith("src/") or rel.startswith("tests/")):
        with open(path, encoding="utf-8", errors="replace") as f:
            users += "\n".join(line for _, line in code_lines(f.read()))
for name, feature in names:
    if not re.search(r"\b%s\b" % name, users):
        print("cu_driver.h: %s (%s) is resolved but never called" % (name, feature), file=sys.stderr)
        bad += 1
print("%d entry points, %d optional" % (len(names), sum(1 for _, f in names if f != "CORE")), file=sys.stderr)

# The same for the HIP backend (src/gpu/hip): its runtime's names stay inside it and the fake runtime
# of its tests (tests/fake_hip), and every entry point it loads is called by the backend.
HIP = re.compile(r"\beht_hip[._]\w+|\bEHT_HIP[56]_\w+|\bhip[A-Z]\w+|\bHIP_POINTER_\w+|"
                 r'#include\s+"(?:gpu/)?hip/')
for rel, path in sources():
    if rel.startswith("src/gpu/hip/") or rel.startswith("tests/fake_hip/"):
        continue
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for n, line in code_lines(text):
        m = HIP.search(line)
        if m:
            print("%s:%d: names the HIP runtime (%s): call src/gpu/dev.h instead" % (rel, n, m.group(0)),
                  file=sys.stderr)
            bad += 1
with open(os.path.join(src, "src/gpu/hip/hip_rt.h")) as f:
    hip_names = re.findall(r"X\((hip\w+),\s*([A-Z_]+),", f.read())
if len(hip_names) < 40:
    print("hip_rt.h: could not read the entry point table (%d found)" % len(hip_names), file=sys.stderr)
    bad += 1
hip_users = ""
for rel, path in sources():
    if rel.startswith("src/gpu/hip/") and rel != "src/gpu/hip/hip_rt.h":
        with open(path, encoding="utf-8", errors="replace") as f:
            hip_users += "\n".join(line for _, line in code_lines(f.read()))
for name, feature in hip_names:
    if not re.search(r"\b%s\b" % name, hip_users):
        print("hip_rt.h: %s (%s) is resolved but never called" % (name, feature), file=sys.stderr)
        bad += 1
print("HIP: %d entry points, %d optional" % (len(hip_names), sum(1 for _, f in hip_names if f != "CORE")),
      file=sys.stderr)
sys.exit(1 if bad else 0)
