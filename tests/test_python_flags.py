#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_python_flags.py: every flag constant the Python module passes to libeht has the value eht.h
gives it. The module's _LOOKUP_BACKGROUND once said 0x8, which eht.h had given to NO_HOTSET when
that flag came: Lookup(background=True) turned the hot set off and left the background mode off.
Lookup.background says whether the mode is on (eht_lookup_background): never for a CPU-only engine,
asked for or not."""
import array
import os
import re
import sys
import unittest

import eht
import eht._native
import eht.group

SRC = os.environ.get("EHT_SOURCE_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# Python name prefix -> the C macro prefix it mirrors.
PREFIXES = (("_RUN_", "EHT_LOOKUP_RUN_"), ("_LOOKUP_", "EHT_LOOKUP_"), ("_ATTACH_", "EHT_ATTACH_"),
            ("_REGION_", "EHT_REGION_"), ("_SHARE_", "EHT_SHARE_"))


def header_macros():
    with open(os.path.join(SRC, "include", "eht.h")) as f:
        text = f.read()
    return {m.group(1): int(m.group(2), 16)
            for m in re.finditer(r"^#define (EHT_[A-Z0-9_]+) 0x([0-9a-fA-F]+)u?\b", text, re.M)}


class Flags(unittest.TestCase):
    def test_every_flag_matches_the_header(self):
        macros = header_macros()
        self.assertIn("EHT_LOOKUP_BACKGROUND", macros)
        checked = []
        for mod in (eht._native, eht, eht.group):  # (the binding's flags, those the package passes, group's)
            for name, value in vars(mod).items():
                for py, c in PREFIXES:
                    if name.startswith(py) and isinstance(value, int) and not isinstance(value, bool):
                        macro = c + name[len(py):]
                        self.assertIn(macro, macros, "%s.%s has no %s in eht.h" % (mod.__name__, name, macro))
                        self.assertEqual(value, macros[macro], "%s.%s = %#x, eht.h says %s = %#x"
                                         % (mod.__name__, name, value, macro, macros[macro]))
                        checked.append(name)
                        break
        # The flags the module is known to pass: none may stop being checked by a rename.
        for must in ("_LOOKUP_BACKGROUND", "_LOOKUP_BG_PUSH", "_LOOKUP_GPU_DEDUP", "_LOOKUP_CPU_ONLY", "_RUN_IDS_DEVICE",
                     "_ATTACH_WAIT", "_SHARE_PER_NUMA"):
            self.assertIn(must, checked)

    def test_background_property(self):
        table = bytearray(os.urandom(64 * 16))
        with eht.wrap(table, 16, 64) as t:
            for asked in (False, True):
                with t.lookup_engine(strategy="host", cpu_only=True, background=asked) as lk:
                    self.assertIs(lk.background, False)  # no GPU here: the mode cannot be had
                    out = bytearray(64)
                    self.assertEqual(lk.run(array.array("q", [3]), out), 0)
                    self.assertEqual(out, table[3 * 64:4 * 64])
            for push in (True, False):  # pushed (the default) or the stream's way: both take the flags
                with t.lookup_engine(strategy="host", cpu_only=True, background=True, push=push) as lk:
                    self.assertIs(lk.background, False)
                with self.assertRaisesRegex(ValueError, "background=True"):
                    t.lookup_engine(strategy="host", cpu_only=True, push=push)


if __name__ == "__main__":
    sys.exit(unittest.main())
