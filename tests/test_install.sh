#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test_install.sh: `cmake --install` into a temporary prefix gives libeht.so with its soname, eht.h,
# eht.pc, the CMake package, the tool, the man pages and ENVIRONMENT.md beside them (the page points to
# it); a program built with pkg-config runs.
# usage: test_install.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/eht-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_install: $*" >&2; exit 1; }
cmake --install "$build" --prefix "$tmp/p" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; fail "cmake --install failed"; }
p=$tmp/p
lib=$(find "$p" -name 'libeht.so.0' | head -n 1)
[ -n "$lib" ] || fail "no libeht.so.0 under $p"
libdir=$(dirname "$lib")
[ -L "$libdir/libeht.so" ] || fail "no libeht.so link in $libdir"
soname=$(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = libeht.so.0 ] || fail "soname is '$soname', want libeht.so.0"
for f in include/eht.h bin/eht share/man/man1/eht.1 share/man/man3/libeht.3 share/doc/eht/ENVIRONMENT.md; do
	[ -e "$p/$f" ] || fail "missing $f"
done
[ -e "$libdir/pkgconfig/eht.pc" ] || fail "missing eht.pc in $libdir/pkgconfig"
[ -e "$libdir/cmake/eht/ehtConfig.cmake" ] || fail "missing ehtConfig.cmake"
[ -e "$libdir/cmake/eht/ehtTargets.cmake" ] || fail "missing ehtTargets.cmake"
[ -e "$p/share/bash-completion/completions/eht" ] || fail "missing the bash completion"
if find "$p" -name 'libeht_internal*' | grep -q .; then fail "libeht_internal installed"; fi
"$p/bin/eht" --version >/dev/null || fail "installed eht --version failed"
# The private prefix first; a sysroot (set where jansson was unpacked into a folder) would be
# prepended to our own prefix too.
unset PKG_CONFIG_SYSROOT_DIR
export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
ver=$(pkg-config --modversion eht) || fail "pkg-config cannot read eht.pc"
cat >"$tmp/use.c" <<'C'
#include <eht.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
	if (strcmp(eht_version(), EHT_VERSION)) {
		fprintf(stderr, "header %s, library %s\n", EHT_VERSION, eht_version());
		return 1;
	}
	puts(eht_version());
	return 0;
}
C
cc -Wall -Werror -o "$tmp/use" "$tmp/use.c" $(pkg-config --cflags --libs eht) || fail "cannot build against eht.pc"
# the installed library first; the caller's path after it (where a dependency such as liburing was
# unpacked into a private prefix, as scripts/debs-env.sh does on the GPU machine)
out=$(LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/use") || fail "program against the installed library failed"
[ "$out" = "$ver" ] || fail "library says $out, eht.pc says $ver"
# libeht_mpi, where the build made it: the library, its header and eht_mpi.pc, and a program built
# with mpicc against them.
mpi=
if [ -e "$build/libeht_mpi.so" ]; then
	[ -e "$libdir/libeht_mpi.so.0" ] || fail "libeht_mpi was built but not installed"
	[ -e "$p/include/eht_mpi.h" ] || fail "missing include/eht_mpi.h"
	pkg-config --exists eht_mpi || fail "missing eht_mpi.pc"
	if command -v mpicc >/dev/null 2>&1; then
		cat >"$tmp/use_mpi.c" <<'C'
#include <eht_mpi.h>
#include <stdio.h>
int main(void)
{
	/* Linked, not run: running needs mpirun (tests/test_mpi_nodes.sh does). */
	int (*f)(MPI_Comm, const struct eht_mpi_opts *, eht_mpi_group **) = eht_mpi_group_create;
	printf("%d\n", f != NULL);
	return 0;
}
C
		mpicc -Wall -Werror -o "$tmp/use_mpi" "$tmp/use_mpi.c" $(pkg-config --cflags --libs eht_mpi) ||
			fail "cannot build against eht_mpi.pc with mpicc"
	fi
	mpi=", libeht_mpi"
fi
echo "test_install: ok ($p: libeht $ver$mpi)"
