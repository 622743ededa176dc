#!/usr/bin/env bash
# AG2's own shell/sandbox tests, twice: on AG2's LocalEnvironment, then with cordon's
# environment swapped in (cordon_swap.py). Prints both pass counts.
# Usage: tests/ag2/run.sh [BUILD_DIR]   (from the repository root)
# Needs: AG2_SRC = a checkout of github.com/ag2ai/ag2 (AG2 1.0's package ag2, or the older
# autogen.beta), importable with $AG2_PYTHON (default
# python3) together with its dependencies (pydantic 2, ...), pytest and pytest-asyncio.
# Exit: 0 no regression, 1 a test that passes on AG2's backend fails on cordon's and is not
# listed in tests/ag2/expected-differences.txt, 77 skipped (the reason on a line "SKIP: ...").
set -u
B=${1:-build}
ROOT=$PWD
PY=${AG2_PYTHON:-python3}
skip() {
	echo "SKIP: ag2: $*"
	exit 77
}
[ -n "${AG2_SRC:-}" ] || skip "AG2_SRC is not set (a checkout of github.com/ag2ai/ag2 whose tests to run)"
AG2_SRC=$(cd "$AG2_SRC" && pwd) || skip "AG2_SRC: cannot enter $AG2_SRC"
# AG2 1.0 (package ag2): test/tools/...; before it (autogen.beta): test/beta/tools/...
files=()
for f in test/tools/test_local_shell.py test/tools/sandbox test/tools/test_sandbox_code.py \
	test/tools/skills/test_toolkit.py test/beta/tools/test_local_shell.py test/beta/tools/sandbox; do
	[ -e "$AG2_SRC/$f" ] && files+=("$f")
done
[ ${#files[@]} -gt 0 ] || skip "$AG2_SRC has none of AG2's shell/sandbox tests (test/tools/...)"
if ! why=$(cd "$AG2_SRC" && PYTHONPATH="$AG2_SRC:$ROOT/clients/python" "$PY" -c \
	'import pytest, pytest_asyncio, cordon._ag2 as a; assert a.AG2_PACKAGE, a.AG2' 2>&1); then
	skip "AG2 or its test dependencies do not import with $PY: $(tail -1 <<<"$why") (Debian 12 has no pydantic 2: with FAST_DEPENDS_SRC set too, make check-ag2 runs them in a Debian 13 root, docs/ag2.md)"
fi
[ -x "$B/cordond" ] || skip "$B/cordond is not built (make)"

tmp=$(mktemp -d /tmp/cordon-test-ag2.XXXXXX)
chmod 755 "$tmp"
pid=
# AG2_KEEP=1: the logs and test files stay in $tmp for a look (cordond is stopped all the same).
cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	if [ -n "${AG2_KEEP:-}" ]; then echo "ag2: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# AG2_USER (when root): the tests, AG2's and cordon's, run as that user, a member of group
# cordon, as an agent would (cordond stays root). Its files go in a directory of its own.
work=$tmp
as_user() { "$@"; }
if [ -n "${AG2_USER:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "ag2: AG2_USER needs root"; exit 1; }
	id "$AG2_USER" >/dev/null 2>&1 || { echo "ag2: no user $AG2_USER"; exit 1; }
	work=$tmp/u
	mkdir "$work"
	chown "$AG2_USER:" "$work"
	as_user() {
		setpriv --reuid="$AG2_USER" --regid="$(id -g "$AG2_USER")" --init-groups \
			env HOME="$(getent passwd "$AG2_USER" | cut -d: -f6)" USER="$AG2_USER" \
			LOGNAME="$AG2_USER" PATH=/usr/local/bin:/usr/bin:/bin "$@"
	}
	as_user test -r "$ROOT/clients/python/cordon/__init__.py" -a -r "$AG2_SRC/ag2/__init__.py" ||
		skip "$AG2_USER cannot read this checkout or AG2_SRC"
	echo "ag2: as $AG2_USER ($(as_user id -Gn))"
fi

# A profile that is ag2-compat plus this Python's trees, read-only: AG2's tests run
# sys.executable, which may live outside /usr (a pyenv or a venv under a home).
mkdir "$tmp/profiles"
PYTHONPATH="$ROOT/clients/python" as_user "$PY" -m cordon.profile >"$tmp/profiles/ag2-test.conf" ||
	{ echo "ag2: cannot write the test profile"; exit 1; }

# The Docker test's image, which AG2_USER (a member) names: cordond allows members only the
# images it is given (docs/daemon.md, "Images a member may name").
allow=()
[ -n "${CORDON_AG2_DOCKER_IMAGE:-}" ] && allow=(--docker-image "$CORDON_AG2_DOCKER_IMAGE")
CORDON_PROFILE_PATH="$tmp/profiles" "$B/cordond" --socket "$tmp/s" "${allow[@]}" >"$tmp/cordond.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -S "$tmp/s" ] && break; sleep 0.1; done
[ -S "$tmp/s" ] || { cat "$tmp/cordond.log"; echo "ag2: cordond did not start"; exit 1; }

run_pytest() { # name, extra args...
	local name=$1
	shift
	(cd "$AG2_SRC" && as_user "$PY" -m pytest -q -p no:cacheprovider \
		--basetemp="$work/pt-$name" --junitxml="$work/$name.xml" "$@" "${files[@]}") \
		>"$tmp/$name.log" 2>&1
	tail -3 "$tmp/$name.log"
}
echo "== AG2's own LocalEnvironment"
PYTHONPATH="$AG2_SRC" run_pytest ag2
echo "== cordon's environment swapped in"
CORDON_SOCKET="$tmp/s" CORDON_AG2_PROFILE=ag2-test \
	PYTHONPATH="$AG2_SRC:$ROOT/clients/python:$ROOT/tests/ag2" run_pytest cordon -p cordon_swap
# Proof that the swap took: the commands of that pass ran in cordond's sandboxes.
runs=$(PYTHONPATH="$ROOT/clients/python" "$PY" -c '
import sys
from cordon import Cordon
m = Cordon(sys.argv[1]).request("GET", "/metrics", raw=True).decode()
print(sum(int(float(l.split()[1])) for l in m.splitlines() if l.startswith("cordond_runs_total")))
' "$tmp/s") || runs=0
echo "ag2: cordond ran $runs commands for the swapped-in tests"
[ "$runs" -gt 0 ] || { echo "ag2: no command reached cordond: the swap did not take"; exit 1; }

# cordon's own environments as AG2's documentation uses its own (an Agent, SandboxShellTool,
# the hardened default profile): AG2 1.0's layout only.
own=0
if (cd "$AG2_SRC" && PYTHONPATH="$AG2_SRC:$ROOT/clients/python" "$PY" -c \
	'import cordon._ag2 as a; assert a.AG2_PACKAGE == "ag2.tools"') >/dev/null 2>&1; then
	echo "== cordon's environments in AG2's Agent"
	# The Docker test needs a local image ($CORDON_AG2_DOCKER_IMAGE; debian13.sh builds one).
	sel=()
	[ -n "${CORDON_AG2_DOCKER_IMAGE:-}" ] || sel=(-k "not docker")
	(cd "$AG2_SRC" && CORDON_SOCKET="$tmp/s" PYTHONPATH="$AG2_SRC:$ROOT/clients/python" \
		as_user "$PY" -m pytest -q -p no:cacheprovider --basetemp="$work/pt-own" \
		"${sel[@]}" "$ROOT/tests/ag2/test_cordon_with_ag2.py") >"$tmp/own.log" 2>&1
	own=$?
	tail -3 "$tmp/own.log"
	[ "$own" -eq 0 ] || { cat "$tmp/own.log"; echo "ag2: cordon's own checks with AG2 failed"; }
fi

"$PY" - "$work/ag2.xml" "$work/cordon.xml" "$ROOT/tests/ag2/expected-differences.txt" <<'PYEOF' || exit 1
import sys, xml.etree.ElementTree as ET
def outcomes(path):
    out = {}
    for tc in ET.parse(path).iter("testcase"):
        node = tc.get("classname", "") + "::" + tc.get("name", "")
        kids = {c.tag for c in tc}
        out[node] = "failed" if kids & {"failure", "error"} else "skipped" if "skipped" in kids else "passed"
    return out
a, c = outcomes(sys.argv[1]), outcomes(sys.argv[2])
expected = {l.split("#")[0].strip() for l in open(sys.argv[3]) if l.split("#")[0].strip()}
pa = sum(v == "passed" for v in a.values()); pc = sum(v == "passed" for v in c.values())
print(f"ag2: AG2's LocalEnvironment passed {pa}/{len(a)}; cordon's environment passed {pc}/{len(c)}")
bad = sorted(n for n, v in a.items() if v == "passed" and c.get(n) != "passed")
for n in bad:
    print(("  expected (documented): " if n in expected else "  REGRESSION: ") + n)
sys.exit(1 if [n for n in bad if n not in expected] else 0)
PYEOF
[ "$own" -eq 0 ] || exit 1
