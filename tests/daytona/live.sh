#!/usr/bin/env bash
# Opt-in checks against a real Daytona (not part of `make check`: no Daytona is reachable from
# the CI machine). Needs network access and an API key of an organisation you may spend on:
#
#   DAYTONA_API_KEY=dtn_... [DAYTONA_API_URL=...] [DAYTONA_TARGET=...] tests/daytona/live.sh build
#
# Each check creates a sandbox (Daytona's default snapshot unless [daytona] says otherwise in
# CORDON_LIVE_PROFILE), runs a command and deletes it; at the end `cordon gc --backend daytona`
# must find nothing of this host's left. Prints one line per check and "live: N passed, N failed".
set -u
B=${1:-build}
C="$PWD/$B/cordon"
if [ -z "${DAYTONA_API_KEY:-}" ]; then
	echo "live: DAYTONA_API_KEY is not set: nothing to check against (this suite is opt-in)" >&2
	exit 77
fi
P=()
[ -n "${CORDON_LIVE_PROFILE:-}" ] && P=(-p "$CORDON_LIVE_PROFILE")
pass=0 fail=0
check() { # check WHAT CMD...
	local what=$1
	shift
	if "$@"; then
		echo "[PASS] $what"
		pass=$((pass + 1))
	else
		echo "[FAIL] $what"
		fail=$((fail + 1))
	fi
}
run() { "$C" run --via direct --backend daytona "${P[@]}" "$@" 2>&1; }

out=$(run -e GREETING=hello -- 'echo "$GREETING"; pwd; echo err >&2')
rc=$?
check "echo, cwd and env (rc $rc): $(echo "$out" | tr '\n' '|')" \
	test "$rc-$out" = "0-hello
/workspace
err"
out=$(run -- 'exit 7')
rc=$?
check "exit code 7 (rc $rc): $out" test "$rc-$out" = "7-[exit code: 7]"
out=$(run -t 2 -- 'sleep 30')
rc=$?
check "timeout (rc $rc): $(echo "$out" | tr '\n' '|')" test "$rc-$out" = "124-Execution timed out after 2s
[exit code: 124]"
out=$(DAYTONA_API_KEY=dtn_wrong run -- true)
rc=$?
check "a wrong key is one line, exit 125: $out" \
	sh -c '[ "$1" = 125 ] && [ "$(printf "%s\n" "$2" | wc -l)" = 1 ] &&
		printf "%s" "$2" | grep -q "authentication failed" &&
		! printf "%s" "$2" | grep -q dtn_wrong' sh "$rc" "$out"
out=$("$C" gc --backend daytona "${P[@]}" 2>&1)
check "nothing of this host's left: $out" test "$out" = "removed 0 orphaned sandbox(es)"
echo "live: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
