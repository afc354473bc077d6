#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_cli_table.sh: --help, completion and man/eht.1 agree with the command table (tools/cli/commands.c)
# and the table with every command's getopt options and usage text. usage: test_cli_table.sh EHT SRCDIR
set -u
eht=${1:?usage: test_cli_table.sh EHT SRCDIR}
src=${2:?usage: test_cli_table.sh EHT SRCDIR}
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

table=$("$eht" --completion-table) || { echo "FAIL: eht --completion-table" >&2; exit 1; }
paths=$(printf '%s\n' "$table" | cut -f1)

# 1. every getopt table of the CLI is file-scope and listed in the command table
for f in "$src"/tools/cli/*.c "$src"/tools/bench/*.c; do
	grep -q 'static const struct option' "$f" &&
		fail "$f: a function-local getopt table (hoist it to cli_opts_* and list it in commands.c)"
	for v in $(grep -o 'const struct option cli_opts_[a-z_]*\[\]' "$f" | sed 's/.*\(cli_opts_[a-z_]*\).*/\1/'); do
		grep -q "\b$v\b" "$src/tools/cli/commands.c" || fail "$v ($f) is not in tools/cli/commands.c"
	done
done

# 2. the table is the one list of commands: every command function (cmd_*, the benches' bench_*, each
#    `int NAME(int argc, char **argv)` of tools/) is a row's, main.c holds no table of its own, and every
#    path `eht --list commands` names dispatches (its --help exits 0)
rows=$(sed -n '/^const struct cli_command cli_commands\[\] = {/,/^};/p' "$src/tools/cli/commands.c")
[ -n "$rows" ] || fail "tools/cli/commands.c: no cli_commands[] table"
for f in "$src"/tools/cli/*.c "$src"/tools/bench/*.c; do
	for fn in $(sed -n 's/^int \(cmd_[a-z_]*\|bench_[a-z_]*\)(int argc, char \*\*argv)$/\1/p' "$f"); do
		printf '%s\n' "$rows" | grep -qw "$fn" || fail "$fn ($f) runs no row of the command table (tools/cli/commands.c)"
	done
done
grep -q '{"[a-z]*", cmd_' "$src/tools/cli/main.c" && fail "tools/cli/main.c lists commands (the table is commands.c's)"
grep -q 'kinds\[\]\|{"lookup", bench_lookup}' "$src"/tools/bench/*.c && fail "tools/bench lists the benches (the table is commands.c's)"
listed=$("$eht" --list commands) || fail "eht --list commands exits $?"
[ "$listed" = "$paths" ] || fail "eht --list commands differs from the completion table's paths"
while read -r path; do
	# shellcheck disable=SC2086
	"$eht" $path --help >/dev/null 2>&1 || fail "eht $path --help exits $?: the table names a path main does not run"
done <<<"$listed"

# 3. each row's options are what its --help documents (mentions of another command's option allowed)
allow() {
	case "$1|$2" in
	"hotset build|--output") return 0 ;; # documented as -o OUT
	"bench lookup|--table-rows") return 0 ;; # refers to eht hotset build --table-rows
	"version|--version") return 0 ;; # the same as eht --version
	esac
	return 1
}
while IFS=$'\t' read -r path opts; do
	# shellcheck disable=SC2086
	help=$("$eht" $path --help 2>&1) || fail "eht $path --help exits $?"
	[ -n "$help" ] || fail "eht $path --help prints nothing"
	tab=$(printf '%s\n' $opts | sed 's/\[*=.*//' | sort -u)
	doc=$(printf '%s\n' "$help" | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
	for o in $(comm -23 <(echo "$doc") <(echo "$tab")); do
		allow "$path" "$o" || fail "eht $path --help documents $o, which its getopt table lacks"
	done
	for o in $(comm -13 <(echo "$doc") <(echo "$tab")); do
		[ "$o" = --help ] || allow "$path" "$o" || fail "eht $path accepts $o, which its --help does not document"
	done
done <<<"$table"

# 4. eht --help lists every row
help=$("$eht" --help)
while IFS=$'\t' read -r path _; do
	printf '%s\n' "$help" | grep -q "^  eht $path\b" || fail "eht --help does not list $path"
done <<<"$table"

# 5. the committed man page is what the table generates
"$src/scripts/gen-man" "$eht" --check || fail "man/eht.1 is not what scripts/gen-man generates"

# 6. completion offers each row's options and the subcommands, read from the table at run time
comp() {
	# shellcheck disable=SC1091
	(source "$src/scripts/eht-completion.bash"; COMP_WORDS=("$eht" "$@"); COMP_CWORD=$#; _eht; echo "${COMPREPLY[*]}")
}
while IFS=$'\t' read -r path opts; do
	want=$(printf '%s\n' $opts | sed 's/\[=\]$//; s/=$//' | sort -u | tr '\n' ' ')
	# shellcheck disable=SC2086
	got=$(comp $path -- | tr ' ' '\n' | grep . | sort -u | tr '\n' ' ')
	[ "$got" = "$want" ] || fail "completion of 'eht $path --': '$got', want '$want'"
done <<<"$table"
top=$(comp "")
for c in $(printf '%s\n' "$paths" | cut -d' ' -f1 | sort -u); do
	[[ " $top " == *" $c "* ]] || fail "completion of 'eht ' lacks $c"
done
[[ " $(comp bench "") " == *" hash "* ]] || fail "completion of 'eht bench ' lacks hash"
[[ " $(comp hotset "") " == *" build "* ]] || fail "completion of 'eht hotset ' lacks build"

# 7. completion offers the library's strategies and the tiers each command's --tier takes, asked of eht
#    (test_cli_lists checks `eht --list` against the library itself)
sorted() { tr ' ' '\n' | grep . | sort -u | tr '\n' ' '; }
want=$("$eht" --list strategies bench | sorted)
got=$(comp bench lookup --strategies "" | sorted)
[ -n "$want" ] && [ "$got" = "$want" ] || fail "completion of --strategies: '$got', want '$want'"
[[ " $want " == *" layer "* ]] || fail "eht --list strategies bench lacks layer (bench lookup's --strategies takes it)"
got=$(comp bench lookup --strategies "host," | sorted)
[[ "$got" == *"host,$("$eht" --list strategies | head -1)"* ]] || fail "completion of --strategies host,: '$got'"
for c in serve "bench lookup"; do
	want=$("$eht" --list tiers ${c%% *} | sorted)
	# shellcheck disable=SC2086
	got=$(comp $c --tier "" | sorted)
	[ -n "$want" ] && [ "$got" = "$want" ] || fail "completion of 'eht $c --tier': '$got', want '$want'"
done
[[ " $(comp -V) " == *" -V "* ]] || fail "completion of 'eht -' lacks -V"

# 8. no list of strategies or tiers spelled outside the library: the CLI, the benches, the Python
#    module and the completion ask it (two names of one list side by side are a list)
strat='(auto|direct|sorted|host)'
tier='(host-numa|region-pinned|region|disk|memory)'
for f in "$src"/tools/cli/*.c "$src"/tools/bench/*.c "$src"/python/eht/*.py "$src"/scripts/eht-completion.bash; do
	while read -r l; do
		fail "$f:$l: a list of strategies or tiers (ask the library)"
	done < <(grep -nE "\"$strat\"[^\"]{0,30}\"$strat\"|\b$strat,$strat\b|\"$tier\"[^\"]{0,30}\"$tier\"|\b$tier $tier\b" "$f" |
		grep -v '^[0-9]*:[[:space:]]*\(#\|/\*\| \*\|"  \|"usage\)')
done

[ "$fails" -eq 0 ] || { echo "$fails failure(s)" >&2; exit 1; }
echo "ok: $(printf '%s\n' "$paths" | wc -l) commands"
