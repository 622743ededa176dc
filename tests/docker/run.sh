#!/usr/bin/env bash
# The Docker backend against a real dockerd: the criterion suite (build/tests/docker) plus the
# CLI end to end. Prints "N passed, M failed" as its last line (tests/run-all.sh adds them up).
# Usage: tests/docker/run.sh BUILD_DIR   (from the repository root)
set -u
B=${1:-build}
# tests/run-all.sh may stage cordon where other users reach it (CORDON_BIN): the
# permission test runs it as nobody.
CORDON=${CORDON_BIN:-$PWD/$B/cordon}
IMG=cordon-test/busybox:1
pass=0 fail=0
# shellcheck source=../lib/dockerd.sh
. tests/lib/dockerd.sh
# shellcheck source=../lib/criterion.sh
. tests/lib/criterion.sh

ok() { pass=$((pass + 1)); echo "[PASS] $1"; }
ko() { fail=$((fail + 1)); echo "[FAIL] $1: $2"; }
# check NAME EXPECTED ACTUAL
check() { if [ "$2" = "$3" ]; then ok "$1"; else ko "$1" "expected [$2], got [$3]"; fi; }
leftovers() { "$DOCKER" ps -aq --filter label=cordon.session | wc -l; }
agent_dirs() { find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'cordon-agent-*' 2>/dev/null | wc -l; }

if ! dockerd_ensure || ! docker_test_image "$IMG"; then
	echo "docker: no Docker daemon or test image"
	echo "0 passed, 1 failed"
	exit 1
fi
trap dockerd_release EXIT
before=$(leftovers)
dirs_before=$(agent_dirs)

# The criterion suite through the agent (the test binary is not cordon: it is told which
# binary to mount), then its docker* suites again through Docker's exec API.
criterion() {
	local what=$1 log rc
	shift
	echo "== docker (criterion, $what)"
	log=$(mktemp /tmp/cordon-dockerlog.XXXXXX)
	env CORDON_DOCKER_TEST_IMAGE=$IMG CORDON_DOCKER_AGENT="$CORDON" "$@" >"$log" 2>&1
	rc=$?
	cat "$log"
	criterion_tally "docker (criterion, $what)" "$log" "$rc"
	rm -f "$log"
}
criterion agent "$B/tests/docker" --jobs 1
criterion "exec API" CORDON_DOCKER_TEST_API=1 "$B/tests/docker" --jobs 1 --filter 'docker*/*'

echo "== docker (cli)"
run() { "$CORDON" run --backend docker --image "$IMG" "$@"; }

out=$(run -- 'echo out; echo err >&2; exit 3' 2>&1); rc=$?
check "text result and exit code" "out
err
[exit code: 3]|3" "$out|$rc"

out=$(PATH=/cordon-host-only:$PATH HOME=/cordon-host-home run -- 'echo $PATH $HOME' 2>&1)
case $out in
*cordon-host-*) ko "the host's PATH and HOME stay out" "$out" ;;
*) ok "the host's PATH and HOME stay out" ;;
esac
out=$(run --env PATH=/x:/bin -- 'echo $PATH' 2>&1)
check "a PATH the profile sets is used" "/x:/bin" "$out"

out=$(run --timeout 1 -- 'sleep 30' 2>&1); rc=$?
check "timeout: AG2 Docker text, 124" "Execution timed out after 1s
[exit code: 124]|124" "$out|$rc"

out=$(run --timeout 1.0 -- 'sleep 30' 2>&1)
check "timeout text as written" "Execution timed out after 1.0s
[exit code: 124]" "$out"

out=$(run --format json -- 'printf abc' 2>/dev/null)
check "json result" "abc 3 docker 0" "$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["output"], d["stdout_bytes"], d["backend"], d["exit_code"])' "$out")"
check "json result: the usage fields are filled" "True True False" "$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["cpu_ms"] > 0, (d["peak_memory_bytes"] or 0) > 0, d["oom_killed"])' "$out")"

# The agent runs the commands (their parent); without a usable binary to mount, or with
# [docker] agent = false, Docker's exec API does (the parent is outside the container).
out=$(run -- 'tr "\0" " " </proc/$PPID/cmdline' 2>&1)
check "the agent runs the command" "/.cordon-agent __docker-agent /.cordon/s" "$out"
# The fallbacks are those of an unguarded container: a workdir only root can change (root's
# own temp workdir is given to nobody, and guarded: docs/docker.md, "The workdir").
fw=$(mktemp -d /tmp/cordon-test-fw.XXXXXX)
chmod 755 "$fw"
out=$(CORDON_DOCKER_AGENT=/bin/ls run -w "$fw" -- 'echo $PPID; ls /' 2>&1)
case $out in
0*workspace*) case $out in *.cordon*) ko "no usable agent binary: the exec API" "$out" ;; *) ok "no usable agent binary: the exec API" ;; esac ;;
*) ko "no usable agent binary: the exec API" "$out" ;;
esac
# A static binary that is not an agent (busybox: no such applet) exits at once, and with it
# the container: it is created again without the agent.
out=$(CORDON_DOCKER_AGENT=/bin/busybox run -w "$fw" -- 'echo $PPID' 2>&1)
check "an agent that exits at once: the exec API" "0" "$out"
rmdir "$fw"
# Root's temp workdir without a usable agent binary: guarded, so not run (one line, 125).
out=$(CORDON_DOCKER_AGENT=/bin/ls run -- 'echo ran' 2>&1); rc=$?
case "$out|$rc" in
"cordon: docker: workdir '/tmp/cordon-"*"' is on a path others than root may change, which takes a static cordon binary (the agent's) to be run safely, and there is none to use (cordon doctor): not run|125")
	ok "root's temp workdir without an agent binary: not run, one line, 125" ;;
*) ko "root's temp workdir without an agent binary: not run, one line, 125" "$out|$rc" ;;
esac
# Root's temp workdir is nobody's once its first command ran (its commands run as nobody), so
# any process of nobody's on the host may move into it another user's directory it can move (a
# 0777 one in a directory it may write to), with that user's files deeper down. cordon's
# removal at the end must not delete those with root's rights (it did: found in red team).
td=$(mktemp -d /tmp/cordon-test-td.XXXXXX)
TMPDIR=$td run -- 'sleep 3' >/dev/null 2>&1 &
tdpid=$!
tw=
for _ in $(seq 100); do
	tw=$(find "$td" -mindepth 1 -maxdepth 1 -name 'cordon-*' -user 65534 2>/dev/null | head -n1)
	[ -n "$tw" ] && break
	sleep 0.05
done
if [ -n "$tw" ]; then
	mkdir -p "$tw/moved/private" && echo theirs >"$tw/moved/private/secret" &&
		chown -R 2000:2000 "$tw/moved" && chmod 0777 "$tw/moved" && chmod 0755 "$tw/moved/private"
fi
wait "$tdpid"
check "root's temp workdir given to nobody: another user's files moved in are not deleted" \
	"found theirs" "$([ -n "$tw" ] && echo found) $(cat "$tw/moved/private/secret" 2>/dev/null)"
rm -rf "$td"
printf '[docker]\nagent = false\n' >/tmp/cordon-test-noagent.conf
out=$(run -p /tmp/cordon-test-noagent.conf -- 'echo $PPID' 2>&1)
rm -f /tmp/cordon-test-noagent.conf
check "[docker] agent = false: the exec API" "0" "$out"

out=$(run --block 'rm' -- 'rm -rf /x' 2>&1); rc=$?
check "policy refusal before any container" "126" "$rc"

out=$("$CORDON" run --backend docker --image cordon-test/nope:0 -- true 2>&1 >/dev/null); rc=$?
check "missing image: one line, 125" "cordon: docker: image 'cordon-test/nope:0' is not present (cordon never pulls: run 'docker pull cordon-test/nope:0' first)|125" "$out|$rc"
if "$DOCKER" image inspect cordon-test/nope:0 >/dev/null 2>&1; then
	ko "missing image is not pulled" "it exists now"
else
	ok "missing image is not pulled"
fi

out=$(DOCKER_HOST=unix:///nonexistent/docker.sock run -- true 2>&1); rc=$?
check "dockerd down: one line, 125" "cordon: docker: no Docker daemon at /nonexistent/docker.sock (No such file or directory): is dockerd running?|125" "$out|$rc"

out=$(DOCKER_HOST=tcp://10.0.0.1:2375 run -- true 2>&1); rc=$?
check "remote DOCKER_HOST refused" "1|125" "$(wc -l <<<"$out")|$rc"

# A dockerd that answers the ping and then never answers create: SIGTERM to cordon cuts the
# call short (it waited out the call's 60 s, twice, and exited 125 before): 143, at once.
hang=$(mktemp -d /tmp/cordon-test-hang.XXXXXX)
# hung_dockerd SOCKET: a dockerd that answers the ping and then never answers anything else
# (its pid in $hangd once SOCKET listens).
hung_dockerd() {
	rm -f "$1"
	python3 - "$1" <<'PY' &
import socket, sys, threading
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(16); held = []
def serve(c):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = c.recv(65536)
        if not d:
            return
        buf += d
    if buf.startswith(b"GET /_ping"):
        c.sendall(b"HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\nContent-Length: 2\r\n\r\nOK")
        c.close()
    else:
        held.append(c)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
	hangd=$!
	for _ in $(seq 100); do [ -S "$1" ] && break; sleep 0.05; done
}
hung_dockerd "$hang/d.sock"
t0=$(date +%s%N)
DOCKER_HOST="unix://$hang/d.sock" "$CORDON" run --backend docker --image "$IMG" -- true \
	>"$hang/out" 2>&1 &
cpid=$!
sleep 1
kill -TERM "$cpid"
wait "$cpid"; rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
kill "$hangd" 2>/dev/null; wait "$hangd" 2>/dev/null
check "SIGTERM during a hung create: 143 within 3 s, one line" "143|yes|1" \
	"$rc|$([ "$ms" -lt 3000 ] && echo yes || echo "no ($ms ms)")|$(wc -l <"$hang/out")"
# The same hung call, cordon SIGKILLed: nothing removes what it made before the call, its
# agent directory above all (no container names it to gc). That directory must be marked
# (sticky) and held by nobody, so that the next run's sweep of /tmp removes it once it is a
# minute old (it stayed for good, 3 MB copy of the agent included, before).
agents() { ls -d /tmp/cordon-agent-* 2>/dev/null | sort; }
agents_before=$(agents)
hung_dockerd "$hang/d.sock"
DOCKER_HOST="unix://$hang/d.sock" "$CORDON" run --backend docker --image "$IMG" -- true \
	>/dev/null 2>&1 &
cpid=$!
sleep 1
kill -KILL "$cpid"
wait "$cpid" 2>/dev/null
kill "$hangd" 2>/dev/null; wait "$hangd" 2>/dev/null
left=$(comm -13 <(echo "$agents_before") <(agents))
marked=no
if [ -n "$left" ] && [ "$(wc -l <<<"$left")" = 1 ] && [ -k "$left" ] && flock -n "$left" true; then
	marked=yes
	touch -d '2 minutes ago' "$left"
fi
TMPDIR=/tmp run -- true >/dev/null 2>&1
check "SIGKILL during a hung create: the agent directory is marked, unheld, swept by the next run" \
	"yes|gone" "$marked|$([ -n "$left" ] && [ ! -e "$left" ] && echo gone || echo "kept: '$left'")"
rm -rf "$hang"

out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$CORDON" run --backend docker --image "$IMG" -- true 2>&1); rc=$?
check "socket permission denied: one line, 125" "cordon: docker: permission denied on /var/run/docker.sock (root or the docker group is needed)|125" "$out|$rc"

out=$(printf '[docker]\nnetwork = bad/name\n' >/tmp/cordon-test-badnet.conf; "$CORDON" run -p /tmp/cordon-test-badnet.conf -- true 2>&1); rc=$?
rm -f /tmp/cordon-test-badnet.conf
check "bad [docker] network value" "125" "$rc"

# --readonly: what the string filter lets through (env is on AG2's read-only list) still
# cannot write: the workdir is mounted read-only.
out=$(run --readonly -- 'env touch made' 2>&1); rc=$?
check "--readonly mounts the workdir read-only" "touch: made: Read-only file system
[exit code: 1]|1" "$out|$rc"

# [docker] memory: the cgroup limit kills what exceeds it (exit 137, as Docker reports it).
printf '[docker]\nmemory = 32M\n' >/tmp/cordon-test-mem.conf
out=$(run -p /tmp/cordon-test-mem.conf -- 'x=$(head -c 100000000 /dev/zero | tr "\0" a); echo ${#x}' 2>&1); rc=$?
rm -f /tmp/cordon-test-mem.conf
# The OOM killer picks the shell or one of its children: the shell then says "Killed" first.
out=${out#Killed$'\n'}
check "[docker] memory limit holds" "[exit code: 137]|137" "$out|$rc"

# [docker] ro_bind and workdir.
rb=$(mktemp -d /tmp/cordon-test-rb.XXXXXX)
chmod 0755 "$rb" # the commands run as nobody (a temp workdir as root): readable for it
echo shared >"$rb/f"
printf '[docker]\nro_bind = %s:/data\nworkdir = /home/work\n' "$rb" >"$rb.conf"
out=$(run -p "$rb.conf" -- 'pwd; cat /data/f; { echo x >/data/g; } 2>/dev/null || echo ro' 2>&1)
check "[docker] ro_bind is read-only, workdir is where asked" "/home/work
shared
ro" "$out"
rm -rf "$rb" "$rb.conf"
# As root, a ro_bind another user can change (below their directory, theirs in /tmp: they
# could swap in a symlink to any directory, which dockerd, as root, would mount) is refused: one line, 125,
# no container (red team). build/tests/docker has the other cases.
rb=$(mktemp -d /tmp/cordon-test-rbu.XXXXXX)
chown 1000:1000 "$rb"
mkdir "$rb/data"
printf '[docker]\nro_bind = %s/data:/data\n' "$rb" >"$rb.conf"
out=$(run -p "$rb.conf" -- 'ls /data' 2>&1); rc=$?
check "[docker] ro_bind below a user's directory is refused as root" "cordon: docker: [docker] ro_bind '$rb/data' is not root's alone to name: '$rb' is uid 1000's, in sticky '/tmp'|125|$before" "$out|$rc|$(leftovers)"
rm -rf "$rb" "$rb.conf"

printf '[docker]\nnetwork = cordon-no-such-net\n' >/tmp/cordon-test-net.conf
out=$(run -p /tmp/cordon-test-net.conf -- true 2>&1); rc=$?
rm -f /tmp/cordon-test-net.conf
check "API error (missing network): one line naming the step, 125, nothing left" "cordon: docker: start container: network cordon-no-such-net not found (HTTP 404)|125|$before" "$out|$rc|$(leftovers)"

out=$(run -- 'grep CapEff /proc/self/status; touch /bin/x 2>&1; ls /sys/class/net; nc -w 1 1.1.1.1 80 </dev/null 2>&1' 2>&1)
check "hostile: no caps, read-only root, no network" "CapEff:	0000000000000000
touch: /bin/x: Read-only file system
lo
nc: can't connect to remote host (1.1.1.1): Network is unreachable
[exit code: 1]" "$out"

out=$(run -- 'i=0; while [ $i -lt 600 ]; do sleep 5 & i=$((i+1)); done 2>&1 | tail -1; echo done' 2>&1)
case $out in
*"can't fork"* | *"Resource temporarily unavailable"*) ok "pids limit holds" ;;
*) ko "pids limit holds" "$out" ;;
esac

# 2 GB of output: the whole count, a bounded capture, a few MB of RSS.
rss=$(/usr/bin/time -f %M "$CORDON" run --backend docker --image "$IMG" --timeout 600 \
	--format json -- 'head -c 2147483648 /dev/zero' 2>&1 >/tmp/cordon-test-2g.json | tail -1)
bytes=$(python3 -c 'import json; d=json.load(open("/tmp/cordon-test-2g.json")); print(d["stdout_bytes"], d["truncated"])')
rm -f /tmp/cordon-test-2g.json
check "2 GB output counted exactly" "2147483648 True" "$bytes"
if [ "${rss:-999999}" -lt 32768 ]; then ok "2 GB output in bounded RSS (${rss} KB)"; else ko "2 GB output in bounded RSS" "max RSS ${rss} KB"; fi
# The same through Docker's exec API (dockerd relays ~150 MB/s here: 256 MB).
printf '[docker]\nagent = false\n' >/tmp/cordon-test-noagent.conf
rss=$(/usr/bin/time -f %M "$CORDON" run --backend docker --image "$IMG" --timeout 600 \
	-p /tmp/cordon-test-noagent.conf --format json -- 'head -c 268435456 /dev/zero' 2>&1 \
	>/tmp/cordon-test-256m.json | tail -1)
bytes=$(python3 -c 'import json; d=json.load(open("/tmp/cordon-test-256m.json")); print(d["stdout_bytes"], d["truncated"])')
rm -f /tmp/cordon-test-256m.json /tmp/cordon-test-noagent.conf
check "exec API: 256 MB output counted exactly" "268435456 True" "$bytes"
if [ "${rss:-999999}" -lt 32768 ]; then ok "exec API: 256 MB output in bounded RSS (${rss} KB)"; else ko "exec API: 256 MB output in bounded RSS" "max RSS ${rss} KB"; fi

# SIGTERM to cordon mid-run: the container goes with it, and the result says the run was
# terminated by SIGTERM, as every backend says it (docs/compat.md, "Signals to cordon").
term_out=$(mktemp /tmp/cordon-test-term.XXXXXX)
"$CORDON" run --backend docker --image "$IMG" --timeout 60 -- 'sleep 50' >"$term_out" 2>/dev/null &
pid=$!
for _ in $(seq 1 100); do [ "$(leftovers)" -gt "$before" ] && break; sleep 0.1; done
sleep 0.3
kill -TERM $pid
wait $pid; rc=$?
check "SIGTERM: cordon exits 143" "143" "$rc"
check "SIGTERM: the result says -15" "[exit code: -15]" "$(cat "$term_out")"
rm -f "$term_out"
check "SIGTERM: container removed" "$before" "$(leftovers)"

# SIGKILL leaves the container (and the workdir: given here, so that this test removes it);
# cordon gc removes the container (its owner is dead), not live ones.
kwd=$(mktemp -d /tmp/cordon-test-kill.XXXXXX)
chown 65534:65534 "$kwd" # root's 0700 one could not be entered by its commands (nobody)
"$CORDON" run --backend docker --image "$IMG" --timeout 60 -- 'sleep 50' >/dev/null 2>&1 &
live=$!
"$CORDON" run --backend docker --image "$IMG" --timeout 60 -w "$kwd" -- 'sleep 50' >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ "$(leftovers)" -ge $((before + 2)) ] && break; sleep 0.1; done
sleep 0.3
kill -KILL $pid
wait $pid 2>/dev/null
out=$("$CORDON" gc 2>&1)
check "gc removes the SIGKILLed run's container only" "removed 1 orphaned container(s)|$((before + 1))" "$out|$(leftovers)"
check "gc removes the SIGKILLed run's agent directory" "$((dirs_before + 1))" "$(agent_dirs)"
kill -TERM $live
wait $live 2>/dev/null
rm -rf "$kwd"

# gc removes only what it can prove an orphan (docs/docker.md, "Leftovers"): a pid means
# something only on one boot, in one pid namespace. Each container says where its owner's pid
# was taken, with the Daytona backend's labels and values (tests/daytona/test_cli.py computes
# them the same way: systemd's app-specific ids, the pid and time namespaces' inodes).
gc_kept="container(s) of cordon's that cannot be proven orphans from here (another pid namespace or machine, a /proc that hides others' processes, an older cordon's labels, or labels cordon did not write)"
these_labels() {
	python3 - <<'PY'
import hashlib, hmac, os, re, socket, uuid
APP_ID = bytes.fromhex("4a227b85224b4703913e67e6aa892d91")
def app_specific(key):
    d = bytearray(hmac.new(key, APP_ID, hashlib.sha256).digest()[:16])
    d[6] = (d[6] & 0x0F) | 0x40
    d[8] = (d[8] & 0x3F) | 0x80
    return d.hex()
try:
    text = open("/etc/machine-id").read(63)
except OSError:
    text = ""
if re.fullmatch(r"[0-9a-fA-F]{32}\n?", text) and int(text, 16):
    machine, from_id = app_specific(bytes.fromhex(text.strip())), "id"
else:
    machine, from_id = "host-" + app_specific((socket.gethostname() or "unknown").encode()), "host"
boot = app_specific(uuid.UUID(open("/proc/sys/kernel/random/boot_id").read().strip()).bytes)
pidns = str(os.stat("/proc/self/ns/pid").st_ino)
if os.path.exists("/proc/self/ns/time"):
    pidns += "-%d" % os.stat("/proc/self/ns/time").st_ino
print(machine, boot, pidns, from_id)
PY
}
read -r this_machine this_boot this_pidns machine_from < <(these_labels)
label() { "$DOCKER" inspect -f "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null; }
exists() { "$DOCKER" inspect "$1" >/dev/null 2>&1 && echo yes || echo no; }
owner_of() { python3 -c 'import sys; print("%s:%s" % (sys.argv[1], open("/proc/%s/stat" % sys.argv[1]).read().rsplit(")", 1)[1].split()[19]))' "$1"; }
# A container of cordon's made through the Engine API: name cordon-<16>, labels as given.
fake_container() { # fake_container SESSION LABELS_JSON
	curl -sf --unix-socket "$CORDON_DOCKER_SOCK" -H 'Content-Type: application/json' -X POST \
		"http://x/containers/create?name=cordon-${1:0:16}" \
		-d "{\"Image\": \"$IMG\", \"Cmd\": [\"true\"], \"Labels\": $2}" >/dev/null
}
rm_container() { curl -s --unix-socket "$CORDON_DOCKER_SOCK" -X DELETE "http://x/containers/$1?force=1&v=1" >/dev/null; }
new_session() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

"$CORDON" run --via direct --backend docker --image "$IMG" --timeout 60 -- 'sleep 50' >/dev/null 2>&1 &
live=$!
cid=
for _ in $(seq 1 100); do
	cid=$("$DOCKER" ps -q --filter "label=cordon.owner=$(owner_of $live 2>/dev/null)")
	[ -n "$cid" ] && break
	sleep 0.1
done
check "a container's labels: its machine, boot and pid namespace, as Daytona's" \
	"$this_machine $this_boot $this_pidns" \
	"$(label "$cid" cordon.machine) $(label "$cid" cordon.boot) $(label "$cid" cordon.pidns)"
# A gc in another pid namespace (a cordon in a container given dockerd's socket, cordond in one
# of its own) cannot see the owner: the container is kept, and said to be. Before, it was
# force-removed under the live run.
out=$(unshare --pid --fork --mount-proc "$CORDON" gc 2>&1)
check "gc in another pid namespace keeps a live run's container" "yes|removed 0 orphaned container(s)
kept 1 $gc_kept" "$(exists "$cid")|$out"
out=$("$CORDON" gc 2>&1)
check "gc in its pid namespace keeps it too (its owner runs)" "yes|removed 0 orphaned container(s)" "$(exists "$cid")|$out"
# A gc by another user (nobody, given group docker) on a /proc mounted hidepid=2 (or systemd's
# ProtectProc=): the owner's pid, root's, is not there for it to see. Before, the container
# was force-removed under the live run (a member of group docker's gc, cordond's members' runs).
dgid=$(stat -c %g "$CORDON_DOCKER_SOCK")
out=$(unshare --mount sh -c 'mount -t proc -o hidepid=2 proc /proc &&
	exec setpriv --reuid=65534 --regid=65534 --groups="$1" "$2" gc' sh "$dgid" "$CORDON" 2>&1)
check "gc where /proc hides the owner keeps a live run's container" "yes|removed 0 orphaned container(s)
kept 1 $gc_kept" "$(exists "$cid")|$out"
kill -TERM $live
wait $live 2>/dev/null

# An older cordon's container (cordon.session and cordon.owner only, its owner gone): who knows
# where that pid was taken. Kept and counted; before, removed.
s=$(new_session)
fake_container "$s" "{\"cordon.session\": \"$s\", \"cordon.owner\": \"999999999:1\", \"cordon.agent_dir\": \"\"}"
out=$("$CORDON" gc 2>&1)
check "an older cordon's container is kept and counted" "yes|removed 0 orphaned container(s)
kept 1 $gc_kept" "$(exists "cordon-${s:0:16}")|$out"
rm_container "cordon-${s:0:16}"

# Another boot of this machine: an orphan only when made before this boot began (Docker's
# Created), else another system sharing this machine id. Made now, it is kept; seen from a
# time namespace whose boot began a second ago (CLOCK_BOOTTIME moved back), it is an orphan.
s=$(new_session)
other_boot=$([ "${this_boot:0:1}" = 0 ] && echo 1 || echo 0)${this_boot:1}
fake_container "$s" "{\"cordon.session\": \"$s\", \"cordon.owner\": \"999999999:1\", \"cordon.machine\": \"$this_machine\", \"cordon.boot\": \"$other_boot\", \"cordon.pidns\": \"$this_pidns\", \"cordon.agent_dir\": \"\"}"
out=$("$CORDON" gc 2>&1)
check "another boot, made after this one began: kept" "yes|removed 0 orphaned container(s)
kept 1 $gc_kept" "$(exists "cordon-${s:0:16}")|$out"
# The time namespace's boot begins less than a second before its gc; gc compares whole
# seconds (Docker's Created against the boot's start), so the container must be over a
# second older than that: 2.1 s. With 1.5 s it failed whenever the wall clock's and the boot
# clock's fractions of a second put both in the same second (found on a new machine).
sleep 2.1
out=$(unshare --time --boottime "-$(cut -d. -f1 /proc/uptime)" "$CORDON" gc 2>&1)
if [ "$machine_from" = id ]; then
	check "another boot, made before this one began: removed" "no|removed 1 orphaned container(s)" "$(exists "cordon-${s:0:16}")|$out"
else # from the hostname only, another boot may be another machine of that name, up now
	check "another boot, no machine id: kept" "yes" "$(exists "cordon-${s:0:16}")"
fi
rm_container "cordon-${s:0:16}"

# A user's workdir: the commands run as its owner, so what they make is the user's (no
# root-owned setuid file can appear in it).
wd=$(mktemp -d /tmp/cordon-test-dwd.XXXXXX)
chown 1000:1000 "$wd"
out=$(run --workdir "$wd" -- 'id -u; cp /bin/busybox b; chmod 4755 b' 2>&1)
check "a user's workdir: commands run as its owner" "1000|1000" "$out|$(stat -c %u "$wd/b")"
rm -rf "$wd"

# Never uid 0 by default (a root process needs no capability to chmod u+s its own files):
# a root-owned workdir runs as nobody, so no setuid-root file can appear in it; where nobody
# may not write, nothing is written (the documented trade-off); cordon's own temp workdir is
# made nobody's.
wd=$(mktemp -d /tmp/cordon-test-dwd.XXXXXX)
chmod 0777 "$wd"
out=$(run --workdir "$wd" -- 'id -u; cp /bin/busybox b; chmod 4755 b' 2>&1)
check "a root-owned workdir: commands run as nobody, no setuid-root file" "65534|65534" "$out|$(stat -c %u "$wd/b")"
chmod 0755 "$wd"
out=$(run --workdir "$wd" -- 'touch x' 2>&1); rc=$?
check "a root-owned workdir nobody cannot write: nothing written" "touch: x: Permission denied
[exit code: 1]|1|no" "$out|$rc|$([ -e "$wd/x" ] && echo yes || echo no)"
# One nobody cannot even enter (mkdtemp's 0700): refused up front, one line, exit 125.
chmod 0700 "$wd"
out=$(run --workdir "$wd" -- 'true' 2>&1); rc=$?
case "$out" in
*"closed to others"*"never as root"*) check "a root-owned 0700 workdir: refused, with why" "125" "$rc" ;;
*) ko "a root-owned 0700 workdir: refused, with why" "$rc: $out" ;;
esac
rm -rf "$wd"
out=$(run -- 'id -u; touch x && echo wrote' 2>&1)
check "cordon's temp workdir as root: made nobody's" "65534
wrote" "$out"

# dockerd unreachable when the container is to be removed (DOCKER_HOST is a symlink to its
# socket in the workdir, which the command removes): one warning line, and gc removes it.
wd=$(mktemp -d /tmp/cordon-test-dwd.XXXXXX)
chown 1000:1000 "$wd"
ln -s "$CORDON_DOCKER_SOCK" "$wd/docker.sock"
err=$(DOCKER_HOST="unix://$wd/docker.sock" run --workdir "$wd" -- 'rm docker.sock' 2>&1 >/dev/null); rc=$?
case $err in
"cordon: warning: container cordon-"*" was not removed (docker: no Docker daemon at $wd/docker.sock (No such file or directory): is dockerd running?); 'cordon gc --backend docker' removes it once this process has exited")
	check "a container that cannot be removed: one warning line" "1|0" "$(wc -l <<<"$err")|$rc" ;;
*) ko "a container that cannot be removed: one warning line" "$err" ;;
esac
out=$("$CORDON" gc --backend docker 2>&1)
check "... and cordon gc --backend docker removes it" "removed 1 orphaned container(s)|$before" "$out|$(leftovers)"
rm -rf "$wd"

# cordond: a docker session keeps one container for its runs; files API; DELETE removes it.
# Its group is cordon, with a member (the integration tests' user), and its profiles those of
# the build tree plus two that name the test image (one of them the docker backend too).
flock /tmp/cordon-test-users.lock sh -c 'getent group cordon >/dev/null || groupadd -r cordon;
	id cordon-tm >/dev/null 2>&1 || useradd -M -N -s /bin/sh -G cordon cordon-tm' >/dev/null 2>&1
dd=$(mktemp -d /tmp/cordon-test-dd.XXXXXX)
chmod 0755 "$dd" # the member reaches the socket through it
mkdir "$dd/profiles"
printf '[profile]\ninclude = default\n[docker]\nimage = %s\n' "$IMG" >"$dd/profiles/dimg.conf"
printf '[profile]\ninclude = dimg\n[sandbox]\nbackend = docker\n' >"$dd/profiles/dk.conf"
CORDON_PROFILE_PATH="$dd/profiles" "$B/cordond" --socket "$dd/s" --grace 1 --docker-image "$IMG" 2>"$dd/log" &
dpid=$!
for _ in $(seq 1 50); do [ -S "$dd/s" ] && break; sleep 0.1; done
api() { curl -s --unix-socket "$dd/s" "$@"; }
member_api() { setpriv --reuid=cordon-tm --regid=users --init-groups curl -s --unix-socket "$dd/s" "$@"; }
field() { python3 -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1]))' "$1"; }
# cordond's containers, by the cordon.session label and the owner label it gives them (other
# processes may make containers of their own meanwhile).
downer="$dpid:$(awk '{print $22}' "/proc/$dpid/stat")"
dleft() { "$DOCKER" ps -aq --filter label=cordon.session --filter "label=cordon.owner=$downer" | wc -l; }
# How many containers cordond created since $1 (seconds since the epoch).
dcreated() {
	"$DOCKER" events --since "$1" --until "$(date +%s.%N)" --filter type=container \
		--filter event=create --filter "label=cordon.owner=$downer" --format '{{.ID}}' | wc -l
}
sid=$(api -X POST http://x/v1/sessions -d "{\"backend\":\"docker\",\"image\":\"$IMG\"}" | field id)
out=$(api -X POST "http://x/v1/sessions/$sid/run" -d '{"command":"echo st > /tmp/keep; id -u"}' | field output)
check "session: runs in its container as the session owner" "65534" "$out"
out=$(api -X POST "http://x/v1/sessions/$sid/run" -d '{"command":"tr \"\\0\" \" \" </proc/$PPID/cmdline"}' | field output)
check "session: cordond found the agent next to it" "/.cordon-agent __docker-agent /.cordon/s" "$out"
out=$(api -X POST "http://x/v1/sessions/$sid/run" -d '{"command":"sleep 20 & setsid sleep 21 & sleep 22","timeout":1}' | field output)
check "session: timeout text" "Execution timed out after 1s
[exit code: 124]" "$out"
out=$(api -X POST "http://x/v1/sessions/$sid/run" -d '{"command":"n=0; for p in /proc/[0-9]*; do case $(tr \"\\0\" \" \" <$p/cmdline 2>/dev/null) in \"sleep 2\"*) n=$((n+1));; esac; done; echo $n; cat /tmp/keep"}' | field output)
check "session: the timeout killed the tree, the container kept its state" "0
st" "$out"
out=$(api -X POST "http://x/v1/sessions/$sid/run" -d '{"command":"n=$(ls /dev/shm | wc -l); [ $n -le 1 ] && echo few || echo $n"}' | field output)
check "session: the pid files of finished commands do not pile up" "few" "$out"
api -X PUT "http://x/v1/sessions/$sid/files/d/up.txt" --data-binary 'uploaded' >/dev/null
out=$(api -X POST "http://x/v1/sessions/$sid/run" -d '{"command":"cat d/up.txt; echo made > out.txt"}' | field output)
check "session: upload then read inside" "uploaded" "$out"
check "session: download what the command made" "made" "$(api "http://x/v1/sessions/$sid/files/out.txt")"
out=$(api -X POST http://x/v1/sessions -d '{"backend":"docker","image":"cordon-test/nope:0"}' | field error)
case $out in *"is not present (cordon never pulls"*) ok "session: missing image is a clear error" ;; *) ko "session: missing image" "$out" ;; esac
api -X DELETE "http://x/v1/sessions/$sid" >/dev/null
check "session: DELETE removes its container" "$before" "$(leftovers)"
# A member's image is one the administrator allowed (docs/daemon.md, "Images a member may
# name"): here --docker-image "$IMG". The same image by its ID, present and readable by
# dockerd, is not that name: 403, one line, and no container made (red team: a member ran
# any local image, and read its files). Root may name it.
iid=$("$DOCKER" image inspect -f '{{.Id}}' "$IMG")
t0=$(date +%s.%N)
out=$(member_api -w '\n%{http_code}' -X POST http://x/v1/sessions -d "{\"backend\":\"docker\",\"image\":\"$iid\"}")
check "session: a member's image not allowed: 403, no container" "image: '$iid' is not one members may use (the profile's [docker] image, or one cordond allows with --docker-image)|403|0|0" \
	"$(field error <<<"${out%$'\n'*}")|${out##*$'\n'}|$(dcreated "$t0")|$(dleft)"
sid=$(member_api -X POST http://x/v1/sessions -d "{\"backend\":\"docker\",\"image\":\"$IMG\"}" | field id)
out=$(member_api -X POST "http://x/v1/sessions/$sid/run" -d '{"command":"id -u"}' | field output)
check "session: a member's allowed image (--docker-image) runs" "$(id -u cordon-tm)" "$out"
member_api -X DELETE "http://x/v1/sessions/$sid" >/dev/null
sid=$(api -X POST http://x/v1/sessions -d "{\"backend\":\"docker\",\"image\":\"$iid\"}" | field id)
out=$(api -X POST "http://x/v1/sessions/$sid/run" -d '{"command":"echo root-any"}' | field output)
check "session: root may name any image" "root-any" "$out"
api -X DELETE "http://x/v1/sessions/$sid" >/dev/null
check "session: ... nothing left" "$before|0" "$(leftovers)|$(dleft)"
# Root's session in a root-owned workdir: nobody, not root.
rw=$(mktemp -d /tmp/cordon-test-drw.XXXXXX)
chmod 0755 "$rw"
sid=$(api -X POST http://x/v1/sessions -d "{\"backend\":\"docker\",\"image\":\"$IMG\",\"workdir\":\"$rw\"}" | field id)
out=$(api -X POST "http://x/v1/sessions/$sid/run" -d '{"command":"id -u"}' | field output)
check "session: root's in a root-owned workdir runs as nobody" "65534" "$out"
api -X DELETE "http://x/v1/sessions/$sid" >/dev/null
rm -rf "$rw"
# The Python client: CordonEnvironment(backend="docker", image=...).
out=$(CORDON_SOCKET="$dd/s" PYTHONPATH=clients/python python3 - "$IMG" <<'PY' 2>&1
import asyncio, sys
from cordon import CordonEnvironment

async def main():
    env = CordonEnvironment(backend="docker", image=sys.argv[1])
    async with env.open() as sb:
        r = await sb.exec(["sh", "-c", "echo py; grep CapEff /proc/self/status"])
        print(r.output, r.exit_code)
    await env.aclose()

asyncio.run(main())
PY
)
check "python: CordonEnvironment(backend=docker)" "py
CapEff:	0000000000000000 0|$before" "$out|$(leftovers)"

# POST /v1/run on Docker: a one-shot session (docs/daemon.md, "One-shot runs on Docker or
# Daytona"): a container made for the run, by the session code, and removed before the answer.
muid=$(id -u cordon-tm)
out=$(api -X POST http://x/v1/run -d '{"command":"id -u; echo hi; pwd","backend":"docker","profile":"dimg"}')
check "one-shot: root's run, as nobody in its temp workdir, nothing left" "65534
hi
/workspace|docker|0" "$(field output <<<"$out")|$(field backend <<<"$out")|$(dleft)"
mw=$(mktemp -d /tmp/cordon-test-dmw.XXXXXX)
chown "$muid:users" "$mw"
out=$(api -X POST http://x/v1/run -d "{\"command\":\"id -u; touch made\",\"backend\":\"docker\",\"profile\":\"dimg\",\"workdir\":\"$mw\"}" | field output)
check "one-shot: root's run in a user's workdir, as its owner" "$muid|$muid|0" "$out|$(stat -c %u "$mw/made")|$(dleft)"
out=$(member_api -X POST http://x/v1/run -d "{\"command\":\"id -u; id -G; touch made2\",\"backend\":\"docker\",\"profile\":\"dimg\",\"workdir\":\"$mw\"}" | field output)
check "one-shot: a member's run, as the member with their groups, nothing left" "$muid
$(id -G cordon-tm)|$muid|0" "$out|$(stat -c %u "$mw/made2")|$(dleft)"
out=$(member_api -X POST http://x/v1/run -d '{"command":"id -u; pwd","backend":"docker","profile":"dimg"}')
check "one-shot: a member's temp workdir, removed after" "$muid
/workspace|no|0" "$(field output <<<"$out")|$([ -e "$(field workdir <<<"$out")" ] && echo yes || echo no)|$(dleft)"
# The CLI's --via daemon --backend docker: the run goes to cordond, whose access to dockerd a
# member without one uses, under cordond's rules (the profile's image), and reads as a direct
# run's answer (under --via auto it would run directly, with the member's own access).
out=$(cd / && setpriv --reuid=cordon-tm --regid=users --init-groups env CORDON_SOCKET="$dd/s" \
	"$CORDON" run --via daemon --backend docker -p dimg -- 'id -u; echo via-cli' 2>&1)
rc=$?
check "cordon run --via daemon --backend docker: a member's run through cordond, nothing left" \
	"$muid
via-cli|0|0" "$out|$rc|$(dleft)"
out=$(cd / && setpriv --reuid=cordon-tm --regid=users --init-groups env CORDON_SOCKET="$dd/s" \
	"$CORDON" run --via daemon --backend docker -p dimg -- 'exit 3' 2>&1)
rc=$?
check "... its exit status is the command's" "[exit code: 3]|3" "$out|$rc"
# A member's workdir (on a path they can change: dockerd could be made to mount another
# directory, which only the check after the start finds): the container's init and agent,
# there before that check, are not the member's to look into from the host through
# /proc/PID/root (red team: docker-init was, and a swap of the path let a member read below
# another user's 0700 directory that way). The command itself, after the check, may be.
member_api -X POST http://x/v1/run -d "{\"command\":\"sleep 3\",\"backend\":\"docker\",\"profile\":\"dimg\",\"workdir\":\"$mw\"}" >/dev/null &
cpid=$!
for _ in $(seq 1 100); do [ "$(dleft)" -ge 1 ] && break; sleep 0.1; done
sleep 0.5
cid=$("$DOCKER" ps -q --filter label=cordon.session --filter "label=cordon.owner=$downer" | head -1)
p1=$("$DOCKER" inspect -f '{{.State.Pid}}' "$cid" 2>/dev/null)
seen=
for p in $p1 $(cat /proc/"$p1"/task/*/children 2>/dev/null); do
	setpriv --reuid=cordon-tm --regid=users --init-groups ls "/proc/$p/root/workspace" >/dev/null 2>&1 && seen="$seen $p"
done
wait $cpid
check "one-shot: a member's container's init and agent are not theirs to look into" "${p1:-none}|0" "${p1:-none}$seen|$(dleft)"
rm -rf "$mw"
out=$(member_api -X POST http://x/v1/run -d '{"command":"id -u","profile":"dk"}')
check "one-shot: a profile that names docker is run there" "$muid|docker|0" "$(field output <<<"$out")|$(field backend <<<"$out")|$(dleft)"
out=$(api -X POST http://x/v1/run -d '{"command":"sleep 30","backend":"docker","profile":"dimg","timeout":1}' | field output)
check "one-shot: timeout text, nothing left" "Execution timed out after 1s
[exit code: 124]|0" "$out|$(dleft)"
out=$(api -X POST http://x/v1/run -d '{"command":"env touch x","backend":"docker","profile":"dimg","readonly":true}' | field output)
check "one-shot: readonly mounts the workdir read-only, as cordon run --readonly" "touch: x: Read-only file system
[exit code: 1]" "$out"
t0=$(date +%s.%N)
out=$(member_api -X POST http://x/v1/run -d '{"command":"rm -rf x","backend":"docker","profile":"dimg","blocked":["rm"]}')
check "one-shot: a refused command makes no container" "Command not allowed: 'rm -rf x'|126|0" \
	"$(field output <<<"$out")|$(field exit_code <<<"$out")|$(dcreated "$t0")"
rbu=$(mktemp -d /tmp/cordon-test-rbu.XXXXXX)
chown cordon-tm "$rbu"
printf '[profile]\ninclude = dimg\n[docker]\nro_bind = %s:/data\n' "$rbu" >"$dd/profiles/rbu.conf"
out=$(member_api -w '\n%{http_code}' -X POST http://x/v1/run -d '{"command":"ls /data","backend":"docker","profile":"rbu"}')
check "one-shot: a profile's ro_bind a member can change is refused, nothing made" "docker: [docker] ro_bind '$rbu' is not root's alone to name: '$rbu' is uid $(id -u cordon-tm)'s, in sticky '/tmp'|500|0" \
	"$(field error <<<"${out%$'\n'*}")|${out##*$'\n'}|$(dleft)"
rm -rf "$rbu" "$dd/profiles/rbu.conf"
out=$(api -X POST http://x/v1/run -d '{"command":"true","backend":"docker","image":"busybox"}' | field error)
check "one-shot: no image field (the profile's)" "image: unknown field" "$out"
out=$(api -X POST http://x/v1/run -d '{"command":"true","backend":"docker","profile":"dimg","workdir":"/proc/self"}' | field error)
case $out in workdir:*) ok "one-shot: a bad workdir is refused, nothing made" ;; *) ko "one-shot: a bad workdir" "$out" ;; esac
# The same JSON as `cordon run --backend docker` for the same command.
ja=$(api -X POST http://x/v1/run -d '{"command":"echo same; echo err >&2; exit 3","backend":"docker","profile":"dimg"}')
jb=$("$CORDON" run --backend docker --image "$IMG" --format json -- 'echo same; echo err >&2; exit 3' 2>/dev/null)
same='import json,sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
k = ("output", "stdout", "stderr", "exit_code", "signal", "timed_out", "refused", "truncated",
     "stdout_bytes", "stderr_bytes", "backend")
print(list(a) == list(b), [a[x] for x in k] == [b[x] for x in k], a["output"])'
check "one-shot: the same result as cordon run --backend docker" "True True same
err
[exit code: 3]" "$(python3 -c "$same" "$ja" "$jb")"
# A client that goes away mid-run: the run is cancelled and its container removed.
# (setpriv execs curl: $! is the client itself, not a subshell that would leave it running)
setpriv --reuid=cordon-tm --regid=users --init-groups curl -s --unix-socket "$dd/s" \
	-X POST http://x/v1/run -d '{"command":"sleep 50","backend":"docker","profile":"dimg"}' >/dev/null &
cpid=$!
for _ in $(seq 1 100); do [ "$(dleft)" -ge 1 ] && break; sleep 0.1; done
up=$(dleft)
sleep 0.3
kill -KILL $cpid
wait $cpid 2>/dev/null
for _ in $(seq 1 100); do [ "$(dleft)" -eq 0 ] && break; sleep 0.1; done
check "one-shot: a client gone mid-run leaves no container" "1|0" "$up|$(dleft)"
# cordond's SIGTERM mid-run (grace 1 s): the run is killed, the answer says so, nothing left.
term_out=$(mktemp /tmp/cordon-test-dterm.XXXXXX)
curl -s --unix-socket "$dd/s" -X POST http://x/v1/run \
	-d '{"command":"sleep 50","backend":"docker","profile":"dimg"}' >"$term_out" &
cpid=$!
for _ in $(seq 1 100); do [ "$(dleft)" -ge 1 ] && break; sleep 0.1; done
up=$(dleft)
sleep 0.3
kill -TERM $dpid
wait $dpid
wait $cpid
check "one-shot: cordond's SIGTERM mid-run: -15, no container left" "1|[exit code: -15]|0" \
	"$up|$(field output <"$term_out")|$(dleft)"
rm -f "$term_out"
rm -rf "$dd"

out=$("$CORDON" doctor 2>&1 | grep '^docker:')
case $out in
"docker: available; Engine "*", API 1."*) ok "doctor reports Docker and its API version" ;;
*) ko "doctor reports Docker" "$out" ;;
esac
check "doctor reports the agent" "docker agent: $(readlink -f "$CORDON") (mounted into the containers)" "$("$CORDON" doctor 2>&1 | grep '^docker agent:')"

check "no container left by label" "$before" "$(leftovers)"
check "no agent directory left" "$dirs_before" "$(agent_dirs)"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
