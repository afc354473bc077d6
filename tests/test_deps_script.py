# SPDX-License-Identifier: Apache-2.0
"""test_deps_script.py: scripts/deps.sh asks apt nothing when nothing is missing, installs only the set
a target needs (build: no fuzzer, no MPI; test: those too), and remembers an optional package apt cannot
install instead of running apt-get update at every make. Driven with stand-ins for dpkg-query, apt-get
and id on PATH (nothing is installed). Runs anywhere."""
import os
import pathlib
import subprocess
import sys
import tempfile

import pyutil

check = pyutil.Checks()
src = os.environ.get("EHT_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
script = os.path.join(src, "scripts", "deps.sh")


def run(tmp, installed, broken=(), set_name="build"):
    """deps.sh SET as root with these packages installed; apt-get installs all but `broken`.
    Returns (exit code, the apt-get calls)."""
    bin_dir = os.path.join(tmp, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    state = os.path.join(tmp, "installed")
    with open(state, "w") as f:
        f.write("\n".join(installed) + "\n")
    log = os.path.join(tmp, "apt.log")
    stubs = {
        "dpkg-query": '#!/bin/sh\nfor p; do :; done\ngrep -qx "$p" %s && printf "install ok installed"\nexit 0\n' % state,
        "apt-get": '#!/bin/sh\necho "$*" >> %s\ncase "$1" in update) exit 0;; esac\n'
                   'for p; do case " %s " in *" $p "*) exit 100;; esac; done\n'
                   'for p; do case "$p" in -*|install) ;; *) echo "$p" >> %s;; esac; done\nexit 0\n'
                   % (log, " ".join(broken), state),
        "id": '#!/bin/sh\necho 0\n',
    }
    for name, body in stubs.items():
        with open(os.path.join(bin_dir, name), "w") as f:
            f.write(body)
        os.chmod(os.path.join(bin_dir, name), 0o755)
    env = dict(os.environ, PATH=bin_dir + ":" + os.environ["PATH"],
               EHT_DEPS_UNAVAILABLE=os.path.join(tmp, "unavailable"))
    r = subprocess.run(["bash", script, set_name], env=env, capture_output=True, text=True, timeout=60)
    calls = pathlib.Path(log).read_text().splitlines() if os.path.exists(log) else []
    os.remove(log) if os.path.exists(log) else None
    return r.returncode, calls


required = ["gcc", "make", "cmake", "pkg-config", "libjansson-dev", "python3"]
test_opt = ["liburing-dev", "clang", "libclang-rt-14-dev", "clang-tools", "python3-venv", "python3-pip", "python3-pyflakes",
            "libopenmpi-dev", "openmpi-bin"]
with tempfile.TemporaryDirectory() as tmp:
    rc, calls = run(tmp, required + test_opt, set_name="test")
    check(rc == 0 and calls == [], "nothing missing: no apt-get at all (%r)" % calls)
with tempfile.TemporaryDirectory() as tmp:
    rc, calls = run(tmp, required, set_name="build")
    installs = [c for c in calls if c.startswith("install")]
    check(rc == 0 and any("liburing-dev" in c for c in installs), "build: liburing installed: %r" % calls)
    check(not any("clang" in c or "openmpi" in c for c in calls), "build: no fuzzer or MPI packages: %r" % calls)
    check(not any(c.startswith("update") for c in calls), "installs that work need no apt-get update: %r" % calls)
with tempfile.TemporaryDirectory() as tmp:
    rc, calls = run(tmp, required, broken=("libclang-rt-14-dev",), set_name="test")
    check(rc == 0 and any("openmpi-bin" in c for c in calls), "test: MPI installed too: %r" % calls)
    check(sum(c.startswith("update") for c in calls) == 1, "one update after a failed install: %r" % calls)
    rc, calls = run(tmp, required + [p for p in test_opt if p != "libclang-rt-14-dev"], broken=("libclang-rt-14-dev",),
                    set_name="test")
    check(rc == 0 and calls == [], "an unavailable optional package is not asked for again: %r" % calls)
with tempfile.TemporaryDirectory() as tmp:
    rc, calls = run(tmp, [], broken=("cmake",))
    check(rc != 0, "a required package apt cannot install fails the set-up")
print("PASS" if check.failures == 0 else "FAIL: %d" % check.failures)
sys.exit(1 if check.failures else 0)
