#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# as_user.sh PROGRAM ARGS...: runs a test as the unprivileged user nobody, from root. CI runs the
# suite as root, and root is exempt from limits users meet (descriptors in flight over a socket,
# files of other users, memory locking): each unit test also runs through this script, and where the
# suite runs as another user already, or nobody cannot reach the build, it skips (77).
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: not root (the test itself already runs as $(id -un))"
	exit 77
fi
if ! command -v setpriv >/dev/null 2>&1 || ! uid=$(id -u nobody 2>/dev/null) || ! gid=$(id -g nobody 2>/dev/null); then
	echo "SKIP: no setpriv or no user nobody"
	exit 77
fi
as_nobody() { setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all "$@"; }
if ! as_nobody test -x "$1"; then
	echo "SKIP: nobody cannot reach $1 (a folder above it is closed to other users)"
	exit 77
fi
# nobody's own home does not exist: a fresh one, removed after
home=$(mktemp -d "${TMPDIR:-/tmp}/eht-as-user.XXXXXX") || exit 1
chown "$uid:$gid" "$home" || exit 1
HOME=$home as_nobody "$@"
rc=$?
rm -rf "$home"
exit $rc
