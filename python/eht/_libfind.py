# SPDX-License-Identifier: Apache-2.0
"""Where libeht.so is: $EHT_LIB, the source checkout's build tree, pkg-config, install prefixes, then
the system's library path (ldconfig)."""
import ctypes.util
import glob
import os
import subprocess
import sys
from typing import List, Optional

_NAMES = ("libeht.so.0", "libeht.so")


def _in_dir(d: str) -> Optional[str]:
    for name in _NAMES:
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return None


def _prefix_libdirs(prefix: str) -> List[str]:
    dirs = [os.path.join(prefix, "lib"), os.path.join(prefix, "lib64")]
    dirs += sorted(glob.glob(os.path.join(prefix, "lib", "*-linux-gnu")))
    return dirs


def _pkg_config_libdir() -> Optional[str]:
    try:
        out = subprocess.run(["pkg-config", "--variable=libdir", "eht"], capture_output=True, text=True,
                             timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    d = out.stdout.strip()
    return d if out.returncode == 0 and d else None


def candidates() -> List[str]:
    """Every place looked at, in order (for error messages)."""
    here = os.path.dirname(os.path.abspath(__file__))
    places = [os.path.join(here, "..", "..", "build"), here]
    d = _pkg_config_libdir()
    if d:
        places.append(d)
    for prefix in (os.environ.get("EHT_PREFIX"), sys.prefix, "/usr/local"):
        if prefix:
            places += _prefix_libdirs(prefix)
    return places


def find_library() -> Optional[str]:
    """The path of libeht.so to load, or None."""
    env = os.environ.get("EHT_LIB")
    if env:
        return env
    for d in candidates():
        p = _in_dir(d)
        if p:
            return os.path.abspath(p)
    return ctypes.util.find_library("eht")
