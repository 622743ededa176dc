#!/usr/bin/env bash
# `make demo`: cordon on real examples, each with a one-line caption.
set -u
C=${1:-build/cordon}
W=$(mktemp -d /tmp/cordon-demo.XXXXXX)
# Readable by all: where the workdir's file system cannot be idmapped (overlayfs /tmp in a
# container), cordon binds it as it is and the command has other users' access.
chmod 755 "$W"
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

# show WANT CAPTION ARGS...: run cordon ARGS, print it all; an exit status other than WANT
# (a space-separated list of the accepted ones) is a failed example.
failed=()
show() {
	local want=$1 caption=$2 a line="cordon" rc
	shift 2
	for a in "$@"; do line+=" $(quote "$a")"; done
	printf '\n\033[1m# %s\033[0m\n$ %s\n' "$caption" "$line"
	"$C" "$@"
	rc=$?
	printf '(exit status %d)\n' $rc
	case " $want " in
	*" $rc "*) ;;
	*)
		printf '\033[1;31mdemo: this example should have exited %s, not %d\033[0m\n' "$want" $rc
		failed+=("$caption (exit $rc, expected $want)")
		;;
	esac
}

show 0 "A normal command: its output, exactly as AG2's tools return it" \
	run -w "$W" -- 'cat notes.txt; ls'
show 3 "A failing command: AG2's [exit code: N] suffix, and cordon exits with it" \
	run -- 'echo "no such thing" >&2; exit 3'
show 126 "The allow-list refuses what it does not name (AG2 'allowed'); nothing runs" \
	run --allow ls --allow cat -- 'rm -rf notes.txt'
show 126 "Shell operators are refused when an allow-list is active" \
	run --allow echo -- 'echo hi > x'
show 126 "An ignored path: AG2's 'Access denied:' from the policy" \
	run -w "$W" --ignore .env -- 'cat .env'
show 0 "Truncation at --max-output characters, with AG2's note" \
	run --max-output 20 -- 'seq 1 100'
show 124 "A timeout kills the whole process tree and reports 124" \
	run -t 1 -- 'sleep 30 & sleep 30'
show 0 "Inside the sandbox: who the command runs as, and what it can see" \
	run -- 'id; grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):" /proc/self/status; ls /'
show 1 "The same run as JSON (every field of the result)" \
	run --format json -- 'echo hi; echo oops >&2; exit 1'
show 126 "Policy only: cordon check decides without running" \
	check --readonly -- 'touch x'

if [ ${#failed[@]} -gt 0 ]; then
	printf '\n\033[1;31mmake demo: %d example(s) failed:\033[0m\n' ${#failed[@]} >&2
	printf '  - %s\n' "${failed[@]}" >&2
	exit 1
fi
printf '\nmake demo: every example behaved as shown.\n'
