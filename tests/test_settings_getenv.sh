#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_settings_getenv.sh: libeht reads EHT_* names only through its table of settings
# (src/util/settings.c): no other file of src/ calls getenv on an EHT_ name or on a name it is
# handed. usage: test_settings_getenv.sh SRCDIR
set -u
src=${1:?usage: test_settings_getenv.sh SRCDIR}
allowed=(src/util/settings.c)

cd "$src" || exit 1
fails=0
while IFS= read -r f; do
	skip=0
	for a in "${allowed[@]}"; do [ "$f" = "$a" ] && skip=1; done
	[ $skip = 1 ] && continue
	# getenv / secure_getenv of anything but a literal name outside EHT_*
	if grep -nP '\b(secure_)?getenv\s*\(\s*(?!"(?!EHT_))' "$f"; then
		echo "FAIL: $f reads the environment itself: add a row to src/util/settings.c and use eht_setting_*()" >&2
		fails=$((fails + 1))
	fi
done < <(find src -name '*.[ch]' -o -name '*.cu' | sort)
[ $fails = 0 ] && echo "ok: no file of src/ but ${allowed[*]} reads EHT_* names itself"
exit $((fails > 0))
