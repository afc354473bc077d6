#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test_python_install.sh: `pip install --no-index --no-build-isolation ./python` into a fresh venv
# (Debian's python3-venv, python3-pip, python3-setuptools, python3-wheel: no package index needed),
# then, from outside the source tree and without $EHT_LIB, `import eht` finds libeht installed under a
# private prefix through pkg-config, and a lookup works.
# usage: test_python_install.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
if ! "$py" -c 'import venv, setuptools, wheel' 2>/dev/null; then
	echo "SKIP: $py lacks venv, setuptools or wheel (scripts/deps.sh installs python3-venv python3-setuptools python3-wheel)" >&2
	exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/eht-pyinst.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_python_install: $*" >&2; exit 1; }
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; fail "cmake --install failed"; }
"$py" -m venv --system-site-packages --without-pip "$tmp/venv" || fail "python3 -m venv failed"
# pip of the system site-packages, run by the venv's interpreter, installs into the venv.
cp -r "$src/python" "$tmp/pysrc" # a copy: the build must not write egg-info into the source tree
"$tmp/venv/bin/python" -m pip install --no-index --no-build-isolation --no-cache-dir -q "$tmp/pysrc" \
	>"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log" >&2; fail "pip install --no-index --no-build-isolation failed"; }
libdir=$(dirname "$(find "$tmp/prefix" -name 'libeht.so.0' | head -n 1)")
cd "$tmp"
env -u EHT_LIB -u PYTHONPATH -u PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" "$tmp/venv/bin/python" - "$tmp" <<'PY' || fail "the installed module does not work"
import array, os, sys
import eht
tmp = sys.argv[1]
assert eht.__file__.startswith(os.path.join(tmp, "venv")), eht.__file__
assert eht.library_path().startswith(os.path.join(tmp, "prefix")), eht.library_path()
assert eht.__version__ == eht.version(), (eht.__version__, eht.version())
rows = bytearray(range(256)) * 4  # 16 rows of 64 bytes
t = eht.wrap(rows, 16, 64)
out = bytearray(3 * 64)
dead = t.lookup(array.array("q", [2, 99, 15]), out)
assert dead == 1 and out[:64] == rows[128:192] and out[64:128] == bytes(64) and out[128:] == rows[960:1024]
t.close()
print("test_python_install: eht %s from %s" % (eht.__version__, eht.library_path()))
PY
