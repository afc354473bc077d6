# SPDX-License-Identifier: Apache-2.0
# eht-completion.bash: bash completion for the eht tool (installed as
# share/bash-completion/completions/eht; or `source scripts/eht-completion.bash`).
# Commands and options come from `eht --completion-table` (tools/cli/commands.c, the getopt tables
# themselves), and the strategies and tiers from `eht --list` (the library's own lists), so they cannot
# drift from what eht accepts; only a few fixed option values are listed here.
_eht()
{
	local cur prev cmd sub table
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]-}
	cmd=${COMP_WORDS[1]-}
	sub=${COMP_WORDS[2]-}
	# "PATH<TAB>--opt --opt= ..." lines; "--opt=" takes a value
	table=$("${COMP_WORDS[0]}" --completion-table 2>/dev/null) || return
	if [ "$COMP_CWORD" -eq 1 ]; then
		local cmds
		cmds=$(printf '%s\n' "$table" | cut -f1 | cut -d' ' -f1 | sort -u)
		COMPREPLY=($(compgen -W "$cmds help --help --version -V" -- "$cur"))
		return
	fi
	case "$prev" in
	--dir|--check|--ready-file|--hotset|--workload|--ckpt|--config|--token-map|--output|-o|--trace)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--tier)
		# what this command's --tier takes (eht serve: auto and the tiers it serves; the benches:
		# the tiers they can make a table in)
		COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" --list tiers "$cmd" 2>/dev/null)" -- "$cur"))
		return ;;
	--format)
		COMPREPLY=($(compgen -W "raw bf16" -- "$cur"))
		return ;;
	--preset)
		COMPREPLY=($(compgen -W "v41" -- "$cur"))
		return ;;
	--strategies)
		# the library's own list (one name a line; a bench's adds what it times besides them: layer);
		# a comma-separated word completes its last name
		local names pre=""
		names=$("${COMP_WORDS[0]}" --list strategies "$cmd" 2>/dev/null)
		[[ "$cur" == *,* ]] && pre=${cur%,*},
		COMPREPLY=($(compgen -P "$pre" -W "$names" -- "${cur##*,}"))
		return ;;
	esac
	# a command with subcommands ("bench lookup", "regions gc") completes them as its first word
	local subs
	subs=$(printf '%s\n' "$table" | cut -f1 | awk -v c="$cmd" '$1 == c && NF > 1 {print $2}')
	if [ -n "$subs" ] && [ "$COMP_CWORD" -eq 2 ]; then
		COMPREPLY=($(compgen -W "$subs --help" -- "$cur"))
		return
	fi
	local path=$cmd opts
	[ -n "$subs" ] && path="$cmd $sub"
	opts=$(printf '%s\n' "$table" | awk -F'\t' -v p="$path" '$1 == p {gsub(/(\[=\]|=)/, "", $2); print $2}')
	if [[ "$cur" == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -F _eht eht
