#!/usr/bin/env bash
# The Daytona backend offline (docs/daytona.md, "How it is tested"): a stateful fake of Daytona
# (tests/fakes/daytona_fake.py) behind `prism proxy --errors` on the trimmed OpenAPI documents
# (backends/daytona/openapi/), so that cordon's requests and the fake's answers are both
# checked against the spec, plus `prism mock` on each document for contract tests.
#
# Usage: tests/daytona/run.sh BUILD_DIR                 every suite; last line "N passed, M failed"
#        tests/daytona/run.sh BUILD_DIR -- CMD [ARG...]  run CMD in the same environment instead
#                                                        (e.g. -- python3 tests/daytona/test_cli.py -k timeout)
# From the repository root. Environment given to the suites:
#   CORDON_TEST_DAYTONA_API           prism proxy --errors on api.json, in front of the fake
#   CORDON_TEST_DAYTONA_TOOLBOX       prism proxy --errors on toolbox.json (…/toolbox): the
#                                     toolboxProxyUrl the fake gives its sandboxes
#   CORDON_TEST_DAYTONA_FAKE          the fake itself (its /_fake/ control endpoints; no Prism)
#   CORDON_TEST_DAYTONA_MOCK_API      prism mock on api.json
#   CORDON_TEST_DAYTONA_MOCK_TOOLBOX  prism mock on toolbox.json, …/toolbox
#   CORDON_TEST_DAYTONA_KEY           the API key the fake accepts (a fresh one each run)
#   CORDON_BIN                        the cordon under test
# Under CI=true (or CORDON_REQUIRE_ALL=1) a missing Prism, npm or suite, and any skip, fail.
set -u
B=${1:-build}
shift $(($# > 0 ? 1 : 0))
export CORDON_BIN=${CORDON_BIN:-$PWD/$B/cordon}
strict=false
[ "${CI:-}" = true ] || [ "${CORDON_REQUIRE_ALL:-}" = 1 ] && strict=true
pass=0 fail=0

# shellcheck source=../lib/prism.sh
. tests/lib/prism.sh
# shellcheck source=../lib/criterion.sh
. tests/lib/criterion.sh

work=$(mktemp -d /tmp/cordon-test-daytona.XXXXXX)
# The fake runs its commands as nobody (when root), who must reach $work/root/<id>.
chmod 711 "$work"
fake_pid='' child=''
# Children run in the background and are waited for: bash runs a trap only once the
# foreground command has ended, and a signal must stop the suite now, not after the test.
run_child() {
	"$@" &
	child=$!
	wait "$child"
	local rc=$?
	child=
	return "$rc"
}
cleanup() {
	if [ -n "$child" ]; then
		kill -TERM "$child" 2>/dev/null
		wait "$child" 2>/dev/null
	fi
	if [ -n "$fake_pid" ]; then
		kill -TERM "$fake_pid" 2>/dev/null
		for _ in $(seq 1 50); do kill -0 "$fake_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$fake_pid" 2>/dev/null
		wait "$fake_pid" 2>/dev/null
	fi
	prism_stop_all
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

closing() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}
# setup_failed MESSAGE: the environment could not be built: a failure (a skip when allowed).
setup_failed() {
	if $strict; then
		echo "daytona: $1"
		fail=$((fail + 1))
	else
		echo "daytona: skipped: $1 (a failure under CI=true)"
	fi
	closing
}

prism_ensure || setup_failed "Prism could not be installed"

key="dtn_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
mkdir "$work/root"
# The fake starts before the toolbox proxy, whose upstream it is: its toolboxProxyUrl is set
# once the proxy listens (POST /_fake/config with "default": kept across /_fake/reset).
setpriv --pdeathsig KILL -- python3 tests/fakes/daytona_fake.py --port 0 --key "$key" \
	--root "$work/root" --toolbox-url http://127.0.0.1:9/toolbox --port-file "$work/port" \
	2>"$work/fake.log" </dev/null &
fake_pid=$!
for _ in $(seq 1 100); do
	[ -s "$work/port" ] && break
	kill -0 "$fake_pid" 2>/dev/null || break
	sleep 0.1
done
[ -s "$work/port" ] || { tail -5 "$work/fake.log"; setup_failed "the fake did not start"; }
FAKE=http://127.0.0.1:$(cat "$work/port")

prism_start API proxy backends/daytona/openapi/api.json "$FAKE" || setup_failed "prism proxy (api.json) did not start"
prism_start TOOLBOX proxy backends/daytona/openapi/toolbox.json "$FAKE" || setup_failed "prism proxy (toolbox.json) did not start"
prism_start MOCK_API mock backends/daytona/openapi/api.json || setup_failed "prism mock (api.json) did not start"
prism_start MOCK_TOOLBOX mock backends/daytona/openapi/toolbox.json || setup_failed "prism mock (toolbox.json) did not start"
curl -sf -X POST -d "{\"toolbox_url\": \"$TOOLBOX/toolbox\", \"default\": true}" "$FAKE/_fake/config" ||
	setup_failed "the fake refused its configuration"

export CORDON_TEST_DAYTONA_API=$API
export CORDON_TEST_DAYTONA_TOOLBOX=$TOOLBOX/toolbox
export CORDON_TEST_DAYTONA_FAKE=$FAKE
export CORDON_TEST_DAYTONA_MOCK_API=$MOCK_API
export CORDON_TEST_DAYTONA_MOCK_TOOLBOX=$MOCK_TOOLBOX/toolbox
export CORDON_TEST_DAYTONA_KEY=$key
echo "== daytona: fake $FAKE, api proxy $API, toolbox proxy $TOOLBOX, mocks $MOCK_API $MOCK_TOOLBOX"

if [ $# -gt 0 ]; then
	[ "$1" = "--" ] && shift
	run_child "$@"
	exit
fi

log="$work/suite.log"
# The contract tests in C (criterion; the Makefile builds build/tests/daytona).
if [ -x "$B/tests/daytona" ]; then
	echo "== daytona (criterion)"
	run_child "$B/tests/daytona" --jobs 1 >"$log" 2>&1
	rc=$?
	cat "$log"
	criterion_tally "daytona (criterion)" "$log" "$rc"
elif $strict; then
	echo "daytona: $B/tests/daytona is missing"
	fail=$((fail + 1))
fi

# The Python suites (stdlib unittest), one process each: "Ran N tests" and the summary line.
for t in tests/daytona/test_*.py; do
	[ -e "$t" ] || continue
	echo "== daytona ($(basename "$t"))"
	run_child python3 "$t" -v >"$log" 2>&1
	rc=$?
	cat "$log"
	n=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' "$log" | tail -1)
	if [ -z "$n" ]; then
		echo "$t: no 'Ran N tests' line (exit $rc)"
		fail=$((fail + 1))
		continue
	fi
	summary=$(grep -aE '^(OK|FAILED)( \(|$)' "$log" | tail -1)
	nf=$(sed -n 's/.*failures=\([0-9]*\).*/\1/p' <<<"$summary")
	ne=$(sed -n 's/.*errors=\([0-9]*\).*/\1/p' <<<"$summary")
	ns=$(sed -n 's/.*skipped=\([0-9]*\).*/\1/p' <<<"$summary")
	nx=$(sed -n 's/.*expected failures=\([0-9]*\).*/\1/p' <<<"$summary")
	nu=$(sed -n 's/.*unexpected successes=\([0-9]*\).*/\1/p' <<<"$summary")
	nf=${nf:-0} ne=${ne:-0} ns=${ns:-0} nx=${nx:-0} nu=${nu:-0}
	pass=$((pass + n - nf - ne - ns - nx - nu))
	fail=$((fail + nf + ne + nu))
	if [ "$ns" -gt 0 ] && $strict; then
		echo "$t: $ns skipped: a skip is a failure under CI=true"
		fail=$((fail + ns))
	fi
	if [ "$rc" -ne 0 ] && [ $((nf + ne + nu)) -eq 0 ]; then
		echo "$t: exited $rc"
		fail=$((fail + 1))
	fi
done

# The fake must not have left a command running (the sandboxes' own checks are per test).
if [ "$(curl -s "$FAKE/_fake/state" | python3 -c 'import json,sys; print(sum(s["running"] for s in json.load(sys.stdin)["sandboxes"]))' 2>/dev/null)" != 0 ]; then
	echo "daytona: commands still running in the fake at the end"
	fail=$((fail + 1))
fi
closing
