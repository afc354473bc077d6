#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test_python_install.sh: the README's install command, literally, offline (PIP_NO_INDEX: there is no
# package index, so pip's build isolation must have nothing to download):
#   python3 -m venv .venv && .venv/bin/pip install ./python
# in a plain venv of every python3 found (pyenv's first on PATH, then Debian's /usr/bin/python3), then
# from outside the source tree and without $EHT_LIB `import eht` finds libeht under a private prefix
# through pkg-config, and a lookup works. Also: Debian's system pip (externally managed) installs with
# --target, and the wheel of `make wheel` (libeht inside) works with no libeht installed at all.
# usage: test_python_install.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
cmd='python3 -m venv .venv && .venv/bin/pip install ./python'
grep -qF "$cmd" "$src/README.md" || { echo "test_python_install: README.md no longer shows: $cmd" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/eht-pyinst.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_python_install: $*" >&2; exit 1; }
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; fail "cmake --install failed"; }
libdir=$(dirname "$(find "$tmp/prefix" -name 'libeht.so.0' | head -n 1)")
# The checkout as a user has it, minus build outputs: the build must not write into it either.
mkdir "$tmp/co"
cp -r "$src/python" "$src/README.md" "$src/LICENSE" "$tmp/co/"
rm -rf "$tmp/co/python/__pycache__" "$tmp/co/python/eht/__pycache__"

# check PYTHON LIBPREFIX [PYTHONPATH]: the installed module works from outside the tree, its libeht
# under LIBPREFIX.
check() {
	(cd "$tmp" && env -u EHT_LIB -u PYTHONPATH -u PKG_CONFIG_SYSROOT_DIR ${3:+PYTHONPATH=$3} \
		PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" "$1" - "$2" <<'PY'
import array, sys
import eht
assert eht.library_path().startswith(sys.argv[1]), (eht.library_path(), sys.argv[1])
assert eht.__version__ == eht.version(), (eht.__version__, eht.version())
rows = bytearray(range(256)) * 4  # 16 rows of 64 bytes
t = eht.wrap(rows, 16, 64)
out = bytearray(3 * 64)
dead = t.lookup(array.array("q", [2, 99, 15]), out)
t.close()
assert dead == 1 and out[:64] == rows[128:192] and out[64:128] == bytes(64) and out[128:] == rows[960:1024]
print("eht %s from %s" % (eht.__version__, eht.library_path()))
PY
	)
}

ran=0
seen=
for py in "$(command -v python3)" /usr/bin/python3; do
	[ -x "$py" ] || continue
	real=$(readlink -f "$("$py" -c 'import sys; print(sys.executable)')")
	case " $seen " in *" $real "*) continue ;; esac
	seen="$seen $real"
	if ! "$py" -c 'import venv, ensurepip' 2>/dev/null; then
		echo "test_python_install: $py has no venv/ensurepip (Debian: python3-venv); not tried" >&2
		continue
	fi
	d="$tmp/try$ran"
	cp -r "$tmp/co" "$d"
	# The README's command, with $py as python3.
	(cd "$d" && eval "$(echo "$cmd" | sed "s#^python3 #\"$py\" #")") >"$d.log" 2>&1 ||
		{ cat "$d.log" >&2; fail "with $py: $cmd"; }
	check "$d/.venv/bin/python" "$tmp/prefix" || fail "with $py: the installed module does not work"
	[ -z "$(cd "$d" && find python -name '*.egg-info' -o -name build -type d)" ] || fail "pip wrote build outputs into the checkout"
	ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || { echo "SKIP: no python3 with venv" >&2; exit 77; }

# Debian's pip outside a venv refuses (PEP 668) unless told where: --target works without
# --break-system-packages.
if /usr/bin/python3 -m pip --version >/dev/null 2>&1; then
	/usr/bin/python3 -m pip install -q --target "$tmp/target" "$tmp/co/python" >"$tmp/sys.log" 2>&1 ||
		{ cat "$tmp/sys.log" >&2; fail "system pip --target failed"; }
	check /usr/bin/python3 "$tmp/prefix" "$tmp/target" >/dev/null || fail "system pip --target: the module does not work"
fi

# `make wheel`'s wheel carries libeht: with nothing installed and no pkg-config, it still works.
py=$(command -v python3)
mkdir "$tmp/dist"
(cd "$tmp/co" && EHT_WHEEL_MAX_GLIBC=99 EHT_WHEEL_LIB="$build/libeht.so.0" "$py" -c \
	'import sys; sys.path.insert(0, "python"); import eht_build; print(eht_build.build_wheel(sys.argv[1]))' \
	"$tmp/dist") >"$tmp/wheel.log" 2>&1 || { cat "$tmp/wheel.log" >&2; fail "building the wheel with libeht failed"; }
"$py" -m venv "$tmp/wv" >/dev/null 2>&1 || fail "venv for the wheel"
"$tmp/wv/bin/pip" install -q "$tmp"/dist/eht-*.whl >"$tmp/wi.log" 2>&1 || { cat "$tmp/wi.log" >&2; fail "pip install of the wheel failed"; }
(cd "$tmp" && env -u EHT_LIB -u PYTHONPATH PKG_CONFIG_PATH=/nonexistent EHT_PREFIX=/nonexistent "$tmp/wv/bin/python" -c '
import sys, eht
assert eht.library_path().startswith(sys.argv[1]), eht.library_path()
print("wheel: eht %s from %s" % (eht.__version__, eht.library_path()))' "$tmp/wv") || fail "the wheel does not find its own libeht"
echo "test_python_install: $ran venv(s), system pip --target and the wheel with libeht all work offline"
