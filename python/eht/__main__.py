# SPDX-License-Identifier: Apache-2.0
"""`python -m eht ARGS` and the `eht` console script: the eht tool the wheel carries (beside libeht in
this folder), with the same arguments and exit status."""
import os
import sys


def tool():
    """The path of the eht tool this install carries, or None."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eht")
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    path = tool()
    if path is None:
        sys.stderr.write("eht: this install of the Python module carries no eht tool (the wheel of `make wheel` "
                         "does; or `make install` puts one on PATH)\n")
        return 127
    os.execv(path, [path] + list(argv))
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
