#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Lines per C/CUDA function (ctags start..end), longest first: scripts/fn-sizes.sh [MIN] [PATH...]
min=${1:-0}; [ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- src tools adapters
find "$@" \( -name '*.c' -o -name '*.cu' -o -name '*.h' \) 2>/dev/null | sort |
  ctags --language-force=C --c-kinds=f --fields=+ne -o - -L - 2>/dev/null |
  awk -F'\t' -v min="$min" '{ s = e = 0
    for (i = 4; i <= NF; i++) { if ($i ~ /^line:/) s = substr($i, 6); if ($i ~ /^end:/) e = substr($i, 5) }
    n = e - s + 1; if (e && n > min) printf "%5d %s:%s %s\n", n, $2, s, $1 }' | sort -rn
