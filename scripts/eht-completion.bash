# SPDX-License-Identifier: Apache-2.0
# eht-completion.bash: bash completion for the eht tool (installed as
# share/bash-completion/completions/eht; or `source scripts/eht-completion.bash`).
_eht()
{
	local cur prev cmd sub
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	cmd=${COMP_WORDS[1]}
	sub=${COMP_WORDS[2]}
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "info synth probe regions serve status worker bench version help --help --version" -- "$cur"))
		return
	fi
	case "$prev" in
	--dir|--check|--ready-file|--hotset|--workload)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--tier)
		COMPREPLY=($(compgen -W "auto host-numa region-pinned region disk" -- "$cur"))
		return ;;
	--format)
		COMPREPLY=($(compgen -W "raw bf16" -- "$cur"))
		return ;;
	--strategies)
		# the library's own list (one name a line); a comma-separated word completes its last name
		local names pre=""
		names=$("${COMP_WORDS[0]}" bench lookup --list-strategies 2>/dev/null)
		[[ "$cur" == *,* ]] && pre=${cur%,*},
		COMPREPLY=($(compgen -P "$pre" -W "$names" -- "${cur##*,}"))
		return ;;
	esac
	local opts=""
	case "$cmd" in
	info) opts="--json --help" ;;
	synth) opts="--tables --rows --shards --seed --preset --json --help" ;;
	probe) opts="--json --help" ;;
	regions)
		if [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "list gc --help" -- "$cur"))
			return
		fi
		opts="--dir --json --help"
		[ "$sub" = gc ] && opts="$opts --dry-run" ;;
	serve) opts="--key --tensors --tier --device --threads --hotset --per-numa --workers --cpu-budget --ready-file --json --help" ;;
	status) opts="--json --help" ;;
	worker) opts="--check --ids --reps --device --id --wait --timeout --hotset --no-hotset --hotset-size --json --help" ;;
	bench)
		if [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "lookup region share disk hash step --help" -- "$cur"))
			return
		fi
		case "$sub" in
		lookup) opts="--table-gib --ids --sweep --strategies --ids-on --graph --format --reps --threads --device --cpu --workload --workload-range --hotset --dedup --json --help" ;;
		region) opts="--sizes --runs --threads --thp --device --dir --json --help" ;;
		share) opts="--sizes --chunk --json --help" ;;
		step) opts="--mode --layers --tokens --hidden --ffn --table-gib --engram-layers --workload --hotset-rows --variants --reps --warmup --threads --sync --device --seed --trace --json --dry-run --help" ;;
		disk) opts="--file-gib --dir --ids --reps --threads --io-threads --iops-threads --cache-mib --no-memory --cpu --device --keep --json --mem-limit --workload --steps --hotset --help" ;;
		esac ;;
	esac
	if [[ "$cur" == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -F _eht eht
