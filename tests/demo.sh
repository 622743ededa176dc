#!/usr/bin/env bash
# `make demo`: cordon on real examples, each with a one-line caption.
set -u
C=${1:-build/cordon}
W=$(mktemp -d /tmp/cordon-demo.XXXXXX)
trap 'rm -rf "$W"' EXIT
printf 'SECRET=hunter2\n' >"$W/.env"
printf 'hello from the workdir\n' >"$W/notes.txt"

# Print an argument as a user would type it: single-quoted when it needs quoting.
quote() {
	case $1 in
	*[!A-Za-z0-9_./=:-]* | '') printf "'%s'" "${1//\'/\'\\\'\'}" ;;
	*) printf '%s' "$1" ;;
	esac
}

show() {
	local caption=$1 a line="cordon"
	shift
	for a in "$@"; do line+=" $(quote "$a")"; done
	printf '\n\033[1m# %s\033[0m\n$ %s\n' "$caption" "$line"
	"$C" "$@"
	printf '(exit status %d)\n' $?
}

show "A normal command: its output, exactly as AG2's tools return it" \
	run -w "$W" -- 'cat notes.txt; ls'
show "A failing command: AG2's [exit code: N] suffix, and cordon exits with it" \
	run -- 'echo "no such thing" >&2; exit 3'
show "The allow-list refuses what it does not name (AG2 'allowed'); nothing runs" \
	run --allow ls --allow cat -- 'rm -rf notes.txt'
show "Shell operators are refused when an allow-list is active" \
	run --allow echo -- 'echo hi > x'
show "An ignored path: AG2's 'Access denied:' from the policy" \
	run -w "$W" --ignore .env -- 'cat .env'
show "Truncation at --max-output characters, with AG2's note" \
	run --max-output 20 -- 'seq 1 100'
show "A timeout kills the whole process tree and reports 124" \
	run -t 1 -- 'sleep 30 & sleep 30'
show "Inside the sandbox: who the command runs as, and what it can see" \
	run -- 'id; grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):" /proc/self/status; ls /'
show "The same run as JSON (every field of the result)" \
	run --format json -- 'echo hi; echo oops >&2; exit 1'
show "Policy only: cordon check decides without running" \
	check --readonly -- 'touch x'
