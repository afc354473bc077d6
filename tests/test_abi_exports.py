#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_abi_exports.py: libeht.so exports exactly the functions the public headers (include/*.h)
declare EHT_API, each with a symbol version; every function declared there is EHT_API. A failure
names the function and the header.

A new public function needs only EHT_API in front of its declaration in its include/ header (eht.h
defines the macro; src/eht.map exports eht_* from the default-visibility symbols)."""
import os
import re
import glob
import subprocess
import sys

src = os.environ.get("EHT_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..")
lib = os.environ.get("EHT_LIB")
if not lib or not os.path.exists(lib):
    print("test_abi_exports: EHT_LIB not set or missing (%r)" % lib, file=sys.stderr)
    sys.exit(1)


def header_functions(text):
    """(declared, marked): function names declared at top level, and those declared EHT_API."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#.*?(?<!\\)$", " ", text, flags=re.M | re.S)
    text = text.replace('extern "C" {', " ")
    # drop brace bodies (struct and enum members, function pointers inside them)
    prev = None
    while prev != text:
        prev = text
        text = re.sub(r"\{[^{}]*\}", " ", text)
    declared, marked = set(), set()
    for stmt in text.split(";"):
        stmt = " ".join(stmt.split())
        if not stmt or stmt.startswith("typedef"):
            continue
        m = re.match(r"^(.*?)\b([A-Za-z_]\w*)\s*\((.*)\)$", stmt)
        if not m or "(*" in m.group(1):
            continue
        declared.add(m.group(2))
        if re.search(r"\bEHT_API\b", m.group(1)):
            marked.add(m.group(2))
    return declared, marked


def exports(path):
    """{name: version} of the defined dynamic symbols (functions and objects)."""
    out = subprocess.run(["nm", "-D", "--defined-only", "--with-symbol-versions", path],
                         check=True, capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] in ("A",):
            continue  # the version node itself
        name, _, ver = parts[2].partition("@")
        syms[name] = ver.lstrip("@")
    return syms


def main():
    declared, marked, where = set(), set(), {}
    headers = sorted(glob.glob(os.path.join(src, "include", "*.h")))
    for h in headers:
        with open(h) as f:
            d, m = header_functions(f.read())
        for name in d:
            where[name] = "include/" + os.path.basename(h)
        declared |= d
        marked |= m
    syms = exports(lib)
    fails = []
    for name in sorted(declared - marked):
        fails.append("%s is declared in %s without EHT_API: it is not exported "
                     "(write EHT_API in front of its declaration)" % (name, where[name]))
    for name in sorted(marked - set(syms)):
        fails.append("%s is declared EHT_API in %s but libeht.so does not export it "
                     "(not defined, or defined static)" % (name, where[name]))
    for name in sorted(set(syms) - marked):
        fails.append("libeht.so exports %s, which no header of include/ declares EHT_API "
                     "(internal symbols stay hidden: remove a visibility attribute, or declare it)" % name)
    for name, ver in sorted(syms.items()):
        if not name.startswith("eht_"):
            fails.append("libeht.so exports %s without the eht_ prefix" % name)
        if not re.match(r"^EHT_\d+\.\d+$", ver or ""):
            fails.append("libeht.so exports %s without a version node (got %r; see src/eht.map)" % (name, ver))
    if len(declared) < 50:
        fails.append("found only %d functions in include/*.h: the parser of this test broke" % len(declared))
    for msg in fails:
        print("test_abi_exports: FAIL: " + msg, file=sys.stderr)
    if fails:
        return 1
    print("test_abi_exports: %d functions of %s, all EHT_API, exported with versions %s"
          % (len(marked), ", ".join(os.path.basename(h) for h in headers), ", ".join(sorted(set(syms.values())))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
