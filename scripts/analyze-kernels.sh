#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# analyze-kernels.sh: the clang static analyzer (its default checkers) over the GPU kernels,
# src/gpu/kernels/*.cu, read as HIP device code by hipcc's clang for each architecture of the HIP build
# (wave64 gfx90a and wave32 gfx1030: the kernels' warp paths differ). nvcc has no analyzer; the HIP
# build compiles the same sources (gpu/kernels/compat.h), so this is how make analyze's rule (no
# finding) reaches the kernels. A control kernel with two known defects (tests/analyze/control.cu)
# must be flagged first, else the analyzer is not reading device code and the run fails. Needs hipcc
# (scripts/deps.sh hip; EHT_HIPCC names another). About 1 minute on 2 cores.
set -eu
cd "$(dirname "$0")/.."
HIPCC=${EHT_HIPCC:-$(command -v hipcc || echo /opt/rocm/bin/hipcc)}
ARCHS=${EHT_HIP_ARCHS:-gfx90a gfx1030}
[ -x "$HIPCC" ] || { echo "analyze-kernels: hipcc not found (scripts/deps.sh hip installs Debian's)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# analyze FILE ARCH: the analyzer's findings (warnings with a checker's name) and errors, on stdout;
# non-zero when the file did not compile.
analyze() {
	"$HIPCC" -x hip --offload-arch="$2" --offload-device-only -std=c++17 -Isrc -Wno-pass-failed --analyze \
		-Xanalyzer -analyzer-output=text -o "$tmp/out.plist" "$1" >"$tmp/log" 2>&1 || { cat "$tmp/log"; return 1; }
	grep -E "(warning: .*\[[a-z]+\.[A-Za-z.]+\]|error:)" "$tmp/log" || true
}
set -- $ARCHS
found=$(analyze tests/analyze/control.cu "$1") ||
	{ echo "analyze-kernels: the control kernel did not compile" >&2; exit 1; }
for checker in core.uninitialized.Assign core.NullDereference; do
	echo "$found" | grep -q "\[$checker\]" ||
		{ echo "analyze-kernels: the analyzer missed the control's $checker: it is not reading device code" >&2; exit 1; }
done
bad=0 n=0
for cu in src/gpu/kernels/*.cu; do
	for arch in $ARCHS; do
		if ! found=$(analyze "$cu" "$arch"); then
			echo "analyze-kernels: $cu ($arch) did not compile" >&2
			bad=1
		elif [ -n "$found" ]; then
			echo "$found"
			echo "analyze-kernels: findings in $cu ($arch)" >&2
			bad=1
		fi
		n=$((n + 1))
	done
done
[ "$bad" = 0 ] || exit 1
echo "analyze-kernels: no findings in $n kernel builds ($(ls src/gpu/kernels/*.cu | wc -l) files x $ARCHS)"
