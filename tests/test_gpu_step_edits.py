# SPDX-License-Identifier: Apache-2.0
"""test_gpu_step_edits.py: the experiment steps of scripts/gpu-step.sh (negctl: the split's join
without its poll; unjoined: the join's grid below the SM count) edit the sources with sed before they
build on a GPU machine, and a source that moved on leaves an edit that changes nothing: the device's
time is then spent on the tree as it is. `gpu-step.sh check-edits` says so without a GPU; here it must
pass on this tree and fail on a copy whose poll was rewritten. Runs anywhere (bash, sed)."""
import os
import shutil
import subprocess
import sys
import tempfile

import pyutil

check = pyutil.Checks()
src = os.environ.get("EHT_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
EDITED = ("src/gpu/kernels/lookup/expand.cu", "src/gpu/gpu_lookup.c")


def check_edits(root, out):
    """(exit code, output) of gpu-step.sh check-edits run in root (its sources), logs under out."""
    p = subprocess.run(["bash", os.path.join(root, "scripts", "gpu-step.sh"), "check-edits"], cwd=root,
                       env=dict(os.environ, OUT=out), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=60)
    return p.returncode, p.stdout


with tempfile.TemporaryDirectory() as tmp:
    rc, text = check_edits(src, os.path.join(tmp, "out"))
    check(rc == 0 and text.count("edit applies") == 2, "check-edits on this tree (rc %d):\n%s" % (rc, text))
    # a copy of the scripts and the edited files, the join's poll written another way: the negctl
    # step's edit no longer applies, and check-edits says which
    tree = os.path.join(tmp, "tree")
    shutil.copytree(os.path.join(src, "scripts"), os.path.join(tree, "scripts"))
    for rel in EDITED:
        os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
        shutil.copy(os.path.join(src, rel), os.path.join(tree, rel))
    k = os.path.join(tree, EDITED[0])
    with open(k) as f:
        code = f.read()
    moved = code.replace("while (*(const volatile unsigned *)done != 1u)", "while (*(volatile const unsigned *)done != 1u)")
    check(moved != code, "the poll gpu-step.sh's negctl edits is in %s" % EDITED[0])
    with open(k, "w") as f:
        f.write(moved)
    rc, text = check_edits(tree, os.path.join(tmp, "out2"))
    check(rc != 0 and "NEGCTL step's edit no longer changes" in text and "UNJOINED step's edit applies" in text,
          "check-edits on a moved source (rc %d):\n%s" % (rc, text))
print("PASS" if check.failures == 0 else "FAIL: %d" % check.failures)
sys.exit(1 if check.failures else 0)
