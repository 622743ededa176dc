#!/usr/bin/env bash
# Run every test suite and print one closing line: "N passed, N failed".
# Usage: tests/run-all.sh BUILD_DIR   (from the repository root)
set -u
B=${1:-build}
export CORDON_BIN="$PWD/$B/cordon"
# Never route the tests through a cordond that happens to run on this machine.
export CORDON_SOCKET=${CORDON_TEST_SOCKET:-/nonexistent/cordon.sock}
pass=0 fail=0
log=$(mktemp /tmp/cordon-testlog.XXXXXX)
# Every failure line of every suite, printed again just before the closing line: CI shows only
# the tail of the output, and that must name what failed.
fails=$(mktemp /tmp/cordon-testfails.XXXXXX)
note_failures() { # note_failures SUITE: the failure lines of $log
	grep -aE '^\[FAIL\]|^\[----\].*(Assertion Failed|CRASH|Timed out|signal)|^FAIL[: ]|^ERROR: |^not ok|^[^ ]+: (no synthesis line|no closing line|no result line|exited [0-9]+$)|a skip is a failure|^daytona: commands still running' "$log" |
		sed "s/^/$1: /" >>"$fails"
}
say_failure() { echo "$*" | tee -a "$fails"; }

# The users and the group the suites create when missing (tests/*: useradd, groupadd): those
# that did not exist before this run are removed at its end, whatever happens (EXIT, INT, TERM),
# and with them their group memberships. Ones that existed before are left as they were.
TEST_USERS="cordon-tm cordon-tn cordon-tc cordon-tm2 cordontest cordon-esc"
TEST_GROUP=cordon
new_users=""
for u in $TEST_USERS; do id -u "$u" >/dev/null 2>&1 || new_users+=" $u"; done
new_group=false
getent group "$TEST_GROUP" >/dev/null 2>&1 || new_group=true
remove_test_ids() {
	[ "$(id -u)" = 0 ] || return 0
	for u in $new_users; do
		id -u "$u" >/dev/null 2>&1 || continue
		pkill -KILL -u "$u" 2>/dev/null
		userdel -r -f "$u" >/dev/null 2>&1 || userdel -f "$u" >/dev/null 2>&1
	done
	if $new_group && getent group "$TEST_GROUP" >/dev/null 2>&1; then
		groupdel "$TEST_GROUP" >/dev/null 2>&1
	fi
}
# A clone in a directory other users cannot enter (/root is 0700): the suites run cordon as
# other users (the escape suite's user, the daemon's members), who could then neither execute
# build/cordon nor read profiles/. Both are staged in a world-readable temp dir for the run.
stage=""
if [ "$(id -u)" = 0 ] && ! setpriv --reuid=65534 --regid=65534 --clear-groups \
	sh -c 'test -x "$1" && test -r "$2"' sh "$CORDON_BIN" "$PWD/profiles/default.conf" 2>/dev/null; then
	stage=$(mktemp -d /tmp/cordon-stage.XXXXXX)
	cp "$CORDON_BIN" "$stage/cordon"
	# cordon execs the cordon-remote beside it for the Daytona backend
	cp "$(dirname "$CORDON_BIN")/cordon-remote" "$stage/cordon-remote"
	cp -r profiles "$stage/profiles"
	mkdir "$stage/python"
	cp -r clients/python/cordon "$stage/python/cordon"
	chmod -R a+rX "$stage"
	export CORDON_BIN="$stage/cordon" CORDON_PROFILE_PATH="$stage/profiles"
	export CORDON_PYTHONPATH="$stage/python"
	echo "== $PWD is not reachable by other users: cordon and the profiles staged in $stage"
fi
trap 'rm -f "$log" "$fails"; remove_test_ids; [ -z "$stage" ] || rm -rf "$stage"' EXIT
trap 'exit 130' INT TERM

# Every test removes the /tmp/cordon-test-* dirs it makes (tu_tmpdir, the escape suite's
# workdirs), every run its temp workdir (/tmp/cordon-XXXXXX), every session it makes its own
# (/tmp/cordon-session-XXXXXX: kept when cordond stops with it live), every cordond its runners'
# (/tmp/cordond-runner-XXXXXX) and every Docker container its agent's (/tmp/cordon-agent-XXXXXX,
# cordon gc for a SIGKILLed run's): a test run that adds one fails, below.
test_dirs() {
	find /tmp -maxdepth 1 -type d \( -name 'cordon-test-*' -o -name 'cordon-??????' \
		-o -name 'cordon-session-*' \
		-o -name 'cordond-runner-*' -o -name 'cordon-agent-*' \) 2>/dev/null | LC_ALL=C sort
}
dirs_before=$(test_dirs)
# The same for run cgroups (cordon-<pid>-<n>-<random> in every hierarchy): even a test that
# SIGKILLs cordon removes its run's cgroup after (cordon_reap_after).
run_cgroups() {
	find /sys/fs/cgroup -mindepth 2 -type d -name 'cordon-*-*-*' 2>/dev/null | LC_ALL=C sort
}
cgroups_before=$(run_cgroups)

# Criterion suites: its synthesis line gives the counts (tests/lib/criterion.sh).
# shellcheck source=lib/criterion.sh
. tests/lib/criterion.sh
run_criterion() {
	local name=$1 bin=$2
	[ -x "$bin" ] || return 0
	echo "== $name"
	"$bin" --jobs 2 >"$log" 2>&1
	local rc=$?
	cat "$log"
	note_failures "$name"
	criterion_say=say_failure criterion_tally "$name" "$log" "$rc"
}

run_criterion unit "$B/tests/unit"
run_criterion integration "$B/tests/integration"
run_criterion escape "$B/tests/escape"

# A suite script whose last line is "N passed, M failed": its counts join the totals.
run_counted() { # run_counted NAME SCRIPT
	local line p f rc
	echo "== $1"
	"$2" "$B" >"$log" 2>&1
	rc=$?
	cat "$log"
	note_failures "$1"
	line=$(tail -1 "$log")
	p=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' <<<"$line")
	f=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' <<<"$line")
	if [ -z "$p" ]; then
		say_failure "$1: no closing line (exit $rc)"
		fail=$((fail + 1))
	else
		pass=$((pass + p))
		fail=$((fail + f))
	fi
}

# The Docker backend against a real dockerd (tests/docker/run.sh gets one, and stops only a
# dockerd it started).
[ -x "$B/tests/docker" ] && run_counted docker tests/docker/run.sh
# The Daytona backend offline: a fake behind Prism (tests/daytona/run.sh installs Prism when
# missing and starts everything).
run_counted daytona tests/daytona/run.sh
# The cgroup v2 code with every controller, for real: this host is hybrid, so a Debian kernel
# boots in QEMU on a pure cgroup2 hierarchy and cordon runs there (tests/cgroupv2/run.sh).
run_counted cgroupv2 tests/cgroupv2/run.sh

# Python client tests (stdlib unittest), when present.
if [ -d clients/python/tests ]; then
	echo "== python"
	if python3 -m unittest discover -s clients/python/tests -t clients/python >"$log" 2>&1; then
		n=$(sed -n 's/^Ran \([0-9]*\) test.*/\1/p' "$log")
		cat "$log"
		pass=$((pass + ${n:-0}))
	else
		cat "$log"
		note_failures python
		fail=$((fail + 1))
	fi
fi

# AG2's own shell/sandbox tests against cordon (tests/ag2/run.sh), when AG2 can be run here. A
# skip (exit 77: no AG2 checkout in $AG2_SRC, or AG2's dependencies do not import) is not a
# failure, even under CI: AG2 needs packages Debian does not have. The reason is printed.
echo "== ag2"
tests/ag2/run.sh "$B" >"$log" 2>&1
rc=$?
cat "$log"
if [ "$rc" -eq 77 ]; then
	echo "ag2: skipped (not counted):"
	grep '^SKIP: ' "$log" | tail -1
elif [ "$rc" -eq 0 ]; then
	pass=$((pass + 1))
else
	say_failure "ag2: exited $rc"
	fail=$((fail + 1))
fi

# The Debian package under real systemd (tests/package/run.sh): its checks count one by one.
echo "== package"
tests/package/run.sh "$B" >"$log" 2>&1
cat "$log"
note_failures package
line=$(grep -a '^package: [0-9]* passed, [0-9]* failed' "$log" | tail -1)
if [ -n "$line" ]; then
	pass=$((pass + $(sed 's/^package: \([0-9]*\) passed.*/\1/' <<<"$line")))
	fail=$((fail + $(sed 's/.*passed, \([0-9]*\) failed/\1/' <<<"$line")))
else
	say_failure "package: no result line"
	fail=$((fail + 1))
fi

# The README's tour, run as written (tests/readme_tour.py): one test. It makes /tmp/proj as the
# README does; removed again when it was not there before.
echo "== readme tour"
proj_existed=false
[ -e /tmp/proj ] && proj_existed=true
if python3 tests/readme_tour.py README.md >"$log" 2>&1; then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "readme tour: failed" >>"$fails"
fi
cat "$log"
note_failures "readme tour"
$proj_existed || rm -rf /tmp/proj

# A test dir that is new since the start was left behind by this run.
left=$(LC_ALL=C comm -13 <(printf '%s\n' "$dirs_before") <(test_dirs))
if [ -n "$left" ]; then
	echo "== leftovers"
	echo "the run left $(wc -l <<<"$left") test dir(s) in /tmp (owner, mode, entries):"
	while IFS= read -r d; do
		echo "  $d $(stat -c '%U %a' "$d" 2>/dev/null): $(find "$d" -mindepth 1 -maxdepth 1 -printf '%f ' 2>/dev/null)"
	done <<<"$left"
	fail=$((fail + 1))
	echo "leftovers: $(wc -l <<<"$left") test dir(s) in /tmp" >>"$fails"
fi

# A run cgroup that is new since the start (given a moment for a teardown still going on).
for _ in 1 2 3 4 5 6 7 8 9 10; do
	cg_left=$(LC_ALL=C comm -13 <(printf '%s\n' "$cgroups_before") <(run_cgroups))
	[ -z "$cg_left" ] && break
	sleep 0.2
done
if [ -n "$cg_left" ]; then
	echo "== leftover cgroups"
	echo "the run left $(wc -l <<<"$cg_left") run cgroup director(y/ies):"
	sed 's/^/  /' <<<"$cg_left"
	fail=$((fail + 1))
	echo "leftover cgroups: $(wc -l <<<"$cg_left")" >>"$fails"
fi

if [ -s "$fails" ]; then
	echo "== failures (again, from the suites above)"
	tail -n 60 "$fails"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
