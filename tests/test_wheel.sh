#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test_wheel.sh: the wheel of `make wheel` installs and runs where only glibc is: built as make wheel
# builds it (-DEHT_WHEEL=ON: liburing linked in, jansson carried beside libeht, RUNPATH $ORIGIN); every
# DT_NEEDED of its ELF files is glibc's or a file the wheel carries (which itself needs only glibc; no
# libstdc++, no CUDA driver); its manylinux_2_X tag is the newest GLIBC_2.X they need, at most 35
# (Ubuntu 22.04); then, in a fresh venv, `pip install` of it offline, `eht --version`, `python -m eht
# --version` and a CPU lookup, with libeht and jansson taken from the wheel, not the system.
# usage: test_wheel.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/eht-wheel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_wheel: $*" >&2; exit 1; }
py=$(command -v python3)
"$py" -c 'import venv, ensurepip' 2>/dev/null || { echo "SKIP: python3 has no venv/ensurepip" >&2; exit 77; }
command -v readelf >/dev/null || { echo "SKIP: no readelf" >&2; exit 77; }
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
w=$build/wheel-test
cmake -S "$src" -B "$w" -DCMAKE_BUILD_TYPE=Release -DEHT_WHEEL=ON -DEHT_CUDA=OFF >"$tmp/log" 2>&1 &&
	cmake --build "$w" -j2 --target eht eht_cli >>"$tmp/log" 2>&1 || { tail -30 "$tmp/log" >&2; fail "wheel build failed"; }
# The newest glibc the ELF files need (the build host's, at most): a bound below it is refused, naming it.
host_needs=$(for f in "$w/libeht.so.0" "$w/eht"; do readelf -V -W "$f" | sed -n 's/.*Name: GLIBC_2\.\([0-9]*\).*/\1/p'; done | sort -n | tail -n 1)
mkdir "$tmp/dist" "$tmp/no"
build_wheel() { # DIR [bound]
	(cd "$src" && EHT_WHEEL_MAX_GLIBC=${2:-} EHT_WHEEL_LIB="$w/libeht.so.0" EHT_WHEEL_CLI="$w/eht" "$py" -c \
		'import sys; sys.path.insert(0, "python"); import eht_build; print(eht_build.build_wheel(sys.argv[1]))' "$1")
}
build_wheel "$tmp/no" $((host_needs - 1)) >"$tmp/no.log" 2>&1 && fail "a wheel needing GLIBC_2.$host_needs built under a bound of 2.$((host_needs - 1))"
grep -q "GLIBC_2.$host_needs" "$tmp/no.log" || { cat "$tmp/no.log" >&2; fail "the refusal does not name GLIBC_2.$host_needs"; }
# This host's build within Ubuntu 22.04's 2.35 (Debian 12: 2.34), or, on a newer host, for its own glibc.
bound=
[ "$host_needs" -le 35 ] || { bound=$host_needs; echo "test_wheel: this host's build needs GLIBC_2.$host_needs: the wheel is for that glibc and newer" >&2; }
build_wheel "$tmp/dist" $bound >"$tmp/wheel.log" 2>&1 || { cat "$tmp/wheel.log" >&2; fail "building the wheel failed"; }
whl=$(ls "$tmp"/dist/eht-*.whl)
mkdir "$tmp/x" && (cd "$tmp/x" && "$py" -m zipfile -e "$whl" .) || fail "unzip"
glibc="libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1"
newest=0
for f in "$tmp"/x/eht/*; do
	head -c 4 "$f" | grep -q 'ELF' || continue
	for so in $(readelf -d -W "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		case " $glibc " in *" $so "*) continue ;; esac
		case "$so" in libstdc++* | libcuda* | libnvidia*) fail "$(basename "$f") needs $so" ;; esac
		[ -f "$tmp/x/eht/$so" ] || fail "$(basename "$f") needs $so, which is neither glibc's nor in the wheel"
	done
	v=$(readelf -V -W "$f" | sed -n 's/.*Name: GLIBC_2\.\([0-9]*\).*/\1/p' | sort -n | tail -n 1)
	[ -n "$v" ] && [ "$v" -gt "$newest" ] && newest=$v
done
case "$(basename "$whl")" in *-manylinux_2_"$newest"_*) ;; *) fail "$(basename "$whl"): not tagged manylinux_2_$newest" ;; esac
[ "$newest" -le "${bound:-35}" ] || fail "needs GLIBC_2.$newest, newer than 2.${bound:-35}"
readelf -d -W "$tmp/x/eht/libeht.so.0" | grep -q 'RUNPATH.*\[\$ORIGIN\]' || fail "libeht's RUNPATH is not \$ORIGIN"
readelf -d -W "$tmp/x/eht/libeht.so.0" | grep -q 'NEEDED.*liburing' && fail "libeht needs liburing's shared library"

"$py" -m venv "$tmp/v" >/dev/null 2>&1 || fail "venv"
"$tmp/v/bin/pip" install -q "$whl" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log" >&2; fail "pip install of the wheel failed"; }
run() { (cd "$tmp" && env -u EHT_LIB -u PYTHONPATH -u LD_LIBRARY_PATH PKG_CONFIG_PATH=/nonexistent EHT_PREFIX=/nonexistent "$@"); }
want=$(run "$tmp/v/bin/python" -c 'import eht; print(eht.version())') || fail "import eht"
[ "$(run "$tmp/v/bin/eht" --version)" = "eht $want" ] || [ -n "$(run "$tmp/v/bin/eht" --version | grep -F "$want")" ] ||
	fail "eht --version: $(run "$tmp/v/bin/eht" --version 2>&1)"
run "$tmp/v/bin/python" -m eht --version | grep -qF "$want" || fail "python -m eht --version"
run "$tmp/v/bin/python" - "$tmp/v" <<'PY' || fail "a CPU lookup from the wheel"
import array, os, subprocess, sys
import eht
lib = eht.library_path()
assert lib.startswith(sys.argv[1]), lib
ldd = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
jansson = [l for l in ldd.splitlines() if "libjansson" in l]
assert jansson and sys.argv[1] in jansson[0], ldd
assert "liburing" not in ldd, ldd
rows = bytearray(range(256)) * 4
t = eht.wrap(rows, 16, 64)
out = bytearray(2 * 64)
assert t.lookup(array.array("q", [3, 99]), out) == 1 and out[:64] == rows[192:256]
print("wheel: eht %s from %s, jansson from the wheel" % (eht.version(), lib))
PY
echo "test_wheel: $(basename "$whl") (GLIBC_2.$newest at most) installs and runs offline"
