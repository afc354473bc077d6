#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_python_names.py: every Python file of the repository (the module, its tests and fakes, the
scripts, the examples) passes pyflakes: no undefined name, unused import or redefined name. Much of
that Python runs only with torch and a GPU (the step and lookup benches, the torch op, the engine
plug-ins), which CI has not: this is what catches a name that a change left dangling there. A file
with an undefined name, written for the purpose, must be reported, so the check cannot pass by
checking nothing. Skips (77) where no interpreter imports pyflakes (Debian: python3-pyflakes, which
`make test` installs)."""
import os
import subprocess
import sys
import tempfile

import pyutil

SRC = os.environ.get("EHT_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
check = pyutil.Checks()


def pyflakes_python():
    """An interpreter that imports pyflakes: this one, else Debian's (pyflakes is pure Python)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(exe) and subprocess.run([exe, "-c", "import pyflakes"], capture_output=True).returncode == 0:
            return exe
    return None


def is_python(path):
    if path.endswith(".py"):
        return True
    try:
        with open(path, "rb") as f:
            first = f.readline()
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def repo_python():
    """The repository's Python files (extensionless scripts by their #! line), build output left out."""
    files = []
    for top in ("python", "tests", "scripts", "examples"):
        for root, dirs, names in os.walk(os.path.join(SRC, top)):
            dirs[:] = [d for d in dirs if d not in ("__pycache__", "fixtures")]
            files += [os.path.join(root, n) for n in names if is_python(os.path.join(root, n))]
    return sorted(files)


def pyflakes(exe, paths):
    r = subprocess.run([exe, "-m", "pyflakes"] + paths, capture_output=True, text=True, timeout=300)
    return r.returncode, (r.stdout + r.stderr).strip()


def main():
    exe = pyflakes_python()
    if exe is None:
        print("SKIP: no interpreter imports pyflakes (apt-get install python3-pyflakes)")
        return 77
    files = repo_python()
    names = {os.path.relpath(f, SRC) for f in files}
    for must in ("python/eht/__init__.py", "python/eht/bench_step_time.py", "tests/test_python_names.py",
                 "scripts/plot-bench"):
        check(must in names, "%s is among the files checked" % must)
    rc, out = pyflakes(exe, files)
    check(rc == 0 and not out, "pyflakes over %d files:\n%s" % (len(files), out))
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "dangling.py")
        with open(bad, "w") as f:
            f.write("def f():\n    return moved_away()\n")
        rc, out = pyflakes(exe, [bad])
        check(rc != 0 and "undefined name 'moved_away'" in out, "a dangling name is reported: %r" % out)
    print("%s: %d files" % ("PASS" if check.failures == 0 else "FAIL", len(files)))
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
