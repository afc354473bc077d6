#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_settings_getenv.sh: libeht reads EHT_* names only through its table of settings
# (src/util/settings.c; util/env.c parses): no other file of src/ calls getenv on an EHT_ name or on a
# name it is handed, nor util/env.h's readers. usage: test_settings_getenv.sh SRCDIR
set -u
src=${1:?usage: test_settings_getenv.sh SRCDIR}
# Folders not converted yet (their reads move to util/settings.h after the lookup restructuring).
not_yet=()
allowed=(src/util/settings.c src/util/env.c src/util/env.h)

cd "$src" || exit 1
fails=0
while IFS= read -r f; do
	skip=0
	for a in "${allowed[@]}"; do [ "$f" = "$a" ] && skip=1; done
	for d in "${not_yet[@]}"; do case "$f" in "$d"/*) skip=1 ;; esac; done
	[ $skip = 1 ] && continue
	# getenv / secure_getenv of anything but a literal name outside EHT_*
	if grep -nP '\b(secure_)?getenv\s*\(\s*(?!"(?!EHT_))' "$f"; then
		echo "FAIL: $f reads the environment itself: add a row to src/util/settings.c and use eht_setting_*()" >&2
		fails=$((fails + 1))
	fi
	if grep -nE '\beht_env_(u64|double|str)[[:space:]]*\(' "$f"; then
		echo "FAIL: $f reads an EHT_* name through util/env.h: use eht_setting_*() (util/settings.h)" >&2
		fails=$((fails + 1))
	fi
done < <(find src -name '*.[ch]' -o -name '*.cu' | sort)
[ $fails = 0 ] && echo "ok: no file of src/ but ${allowed[*]} (nor yet ${not_yet[*]}) reads EHT_* names itself"
exit $((fails > 0))
