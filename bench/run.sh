#!/usr/bin/env bash
# make bench: cordon against bare fork+exec and bubblewrap, in one invocation, as ratios.
# Writes bench/RESULTS.md. Never part of make check (timings are not assertions).
set -euo pipefail
B=${1:-build}
C="$PWD/$B/cordon"
N=${BENCH_RUNS:-200}
W=${BENCH_WARMUP:-20}
mkdir -p "$B/bench"
cc -O2 -o "$B/bench/spawnbench" bench/spawnbench.c
cc -O2 -o "$B/bench/pipebench" bench/pipebench.c
cc -O2 -o "$B/bench/walkbench" bench/walkbench.c
cc -O2 -static-pie -o "$B/bench/empty" bench/empty.c
floors="glibc" raw=""
if [ "$(uname -m)" = x86_64 ] && cc -O2 -static -nostdlib -o "$B/bench/nolibc" bench/nolibc.c; then
	floors="glibc nolibc"
fi
if [ "$(uname -m)" = x86_64 ] && cc -O2 -static -nostdlib -ffreestanding -fno-builtin \
	-fno-stack-protector -o "$B/bench/rawclient" bench/rawclient.c; then
	raw="raw"
fi
RELAY_ROUNDS=${BENCH_RELAY_ROUNDS:-5}
for p in bubblewrap bc; do dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q "ok installed" || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $p >/dev/null; done
work=$(mktemp -d /tmp/cordon-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/w"

med() { sed -n 's/.*median=\([0-9.]*\).*/\1/p'; }
BW=(bwrap --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib
	--symlink usr/lib64 /lib64 --symlink usr/sbin /sbin --ro-bind /etc /etc --dev /dev
	--proc /proc --tmpfs /tmp --bind "$work/w" /work --chdir /work --unshare-all
	--die-with-parent --new-session --cap-drop ALL --clearenv --setenv PATH /usr/bin)

# The rows, run interleaved in ROUNDS rounds of N/ROUNDS runs each, so that a change in the
# machine's load during the benchmark weighs on every row alike; a row's figure is the median of
# its rounds' medians. Through sh: a script that is not a simple command ('/bin/true;') runs as
# sh -c, like AG2; against bwrap running the same sh -c.
ROUNDS=${BENCH_ROUNDS:-5}
n=$((N / ROUNDS)); w=$(((W + ROUNDS - 1) / ROUNDS))
row() {
	case $1 in
	bare) "$B/bench/spawnbench" $n $w /bin/true ;;
	bw) "$B/bench/spawnbench" $n $w "${BW[@]}" /bin/true ;;
	co) "$B/bench/spawnbench" $n $w "$C" run --via direct -w "$work/w" -- /bin/true ;;
	cot) "$B/bench/spawnbench" $n $w "$C" run --via direct -- /bin/true ;;
	bws) "$B/bench/spawnbench" $n $w "${BW[@]}" /bin/sh -c '/bin/true;' ;;
	cos) "$B/bench/spawnbench" $n $w "$C" run --via direct -w "$work/w" -- '/bin/true;' ;;
	cod) CORDON_SOCKET="$work/cordond.sock" "$B/bench/spawnbench" $n $w "$C" run --via daemon \
		-w "$work/w" -- /bin/true ;;
	raw) "$B/bench/spawnbench" $n $w "$B/bench/rawclient" "$work/cordond.sock" \
		"{\"command\":\"/bin/true\",\"profile\":\"default\",\"workdir\":\"$work/w\"}" ;;
	glibc) "$B/bench/spawnbench" $n $w "$B/bench/empty" ;;
	nolibc) "$B/bench/spawnbench" $n $w "$B/bench/nolibc" ;;
	esac
}
declare -A rounds ratios
# `cordon run` through cordond (--via daemon; --via auto, the default, takes it when its socket
# answers, as on a host with the package): a cordond of this build on a socket of its own,
# its runners pre-building each next sandbox (docs/daemon.md), stopped after these rounds.
"$PWD/$B/cordond" --socket "$work/cordond.sock" >"$work/cordond.log" 2>&1 &
cordond_pid=$!
trap 'kill "$cordond_pid" 2>/dev/null || true; wait "$cordond_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -S "$work/cordond.sock" ] && break; sleep 0.05; done
rows="bare bw co cot cod $raw bws cos $floors"
echo "== start latency ($ROUNDS interleaved rounds of $n runs after $w warm-up)"
for r in $(seq 1 "$ROUNDS"); do
	for k in $rows; do
		out=$(row $k)
		case $out in *failed=0*) ;; *) echo "bench: $k failed: $out" >&2; exit 1 ;; esac
		rounds[$k]+="$(echo "$out" | med) "
	done
	line="round $r:"
	for k in $rows; do
		set -- ${rounds[$k]}
		line+=" $k=${!#}"
	done
	echo "$line"
	# This round's own ratios to bwrap: their spread over the rounds is the noise.
	set -- ${rounds[bw]}; bw_r=${!#}
	for k in co cot cod $raw; do
		set -- ${rounds[$k]}
		ratios[$k]+="$(echo "scale=4; ${!#} / $bw_r" | bc) "
	done
done
kill "$cordond_pid"
wait "$cordond_pid" 2>/dev/null || true
median_of() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
bare_m=$(echo "${rounds[bare]}" | median_of); bw_m=$(echo "${rounds[bw]}" | median_of)
co_m=$(echo "${rounds[co]}" | median_of); cot_m=$(echo "${rounds[cot]}" | median_of)
cod_m=$(echo "${rounds[cod]}" | median_of)
bws_m=$(echo "${rounds[bws]}" | median_of); cos_m=$(echo "${rounds[cos]}" | median_of)
glibc_m=$(echo "${rounds[glibc]}" | median_of)
nolibc_m=""
[ -z "${rounds[nolibc]:-}" ] || nolibc_m=$(echo "${rounds[nolibc]}" | median_of)

spread2() { tr ' ' '\n' | grep . | sort -n | sed -n '1p;$p' | tr '\n' ' ' | awk '{printf "%.2f-%.2f", $1, $2}'; }
co_sp=$(echo "${ratios[co]}" | spread2); cot_sp=$(echo "${ratios[cot]}" | spread2)
cod_sp=$(echo "${ratios[cod]}" | spread2)
raw_m="" raw_sp=""
if [ -n "$raw" ]; then
	raw_m=$(echo "${rounds[raw]}" | median_of); raw_sp=$(echo "${ratios[raw]}" | spread2)
fi

echo "== at an agent's pace (10 ms between runs, 3 interleaved rounds)"
# With idle time between runs the vCPUs sleep, and what waits for the kernel (an RCU grace
# period above all) shows in the tail: the median and the 90th percentile of each round.
p90_of() { sed -n 's/.*p90=\([0-9.]*\).*/\1/p'; }
declare -A pace_med pace_p90
for rr in 1 2 3; do
	for k in bw co; do
		case $k in
		bw) out=$("$B/bench/spawnbench" --gap 10 60 5 "${BW[@]}" /bin/true) ;;
		co) out=$("$B/bench/spawnbench" --gap 10 60 5 "$C" run --via direct -w "$work/w" -- /bin/true) ;;
		esac
		pace_med[$k]+="$(echo "$out" | med) "; pace_p90[$k]+="$(echo "$out" | p90_of) "
	done
	set -- ${pace_med[bw]}; pb=${!#}; set -- ${pace_med[co]}; pc=${!#}
	echo "pace round $rr: bwrap ${pb} ms, cordon ${pc} ms (medians)"
done

echo "== with one CPU busy (a spinning program at nice 10, 3 interleaved rounds)"
# A machine that runs other work too: one busy-looping shell at nice 10, left where the
# scheduler puts it. cordon moves its child to another CPU only when one is likely free
# (backends/local/cpus.h); this row keeps that honest.
nice -n 10 sh -c 'while :; do :; done' &
spin_pid=$!
trap 'kill "$spin_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
declare -A busy_med
for rr in 1 2 3; do
	for k in bw co; do
		case $k in
		bw) out=$("$B/bench/spawnbench" 60 5 "${BW[@]}" /bin/true) ;;
		co) out=$("$B/bench/spawnbench" 60 5 "$C" run --via direct -w "$work/w" -- /bin/true) ;;
		esac
		busy_med[$k]+="$(echo "$out" | med) "
	done
	set -- ${busy_med[bw]}; pb=${!#}; set -- ${busy_med[co]}; pc=${!#}
	echo "busy round $rr: bwrap ${pb} ms, cordon ${pc} ms (medians)"
done
kill "$spin_pid" 2>/dev/null || true
wait "$spin_pid" 2>/dev/null || true
trap 'rm -rf "$work"' EXIT

echo "== output relay (1 GB, $RELAY_ROUNDS interleaved rounds)"
# Baseline: bench/pipebench.c, the command's stdout on a bare pipe of the size cordon uses,
# read with cordon's read size and discarded. cordon: the whole `cordon run`, start included,
# its stdout to /dev/null. Each round runs every row once; a row's figure is the median over
# the rounds, and each ratio's spread is the min-max of the rounds' own ratios.
secs() { local s e; s=$(date +%s%N); "$@" >/dev/null || return 1; e=$(date +%s%N); echo "scale=6; ($e - $s) / 1000000000" | bc; }
relay_row() {
	case $1 in
	pipe_head) secs "$B/bench/pipebench" 'head -c 1000000000 /dev/zero' ;;
	cord_head) secs "$C" run --via direct -t 120 -- 'head -c 1000000000 /dev/zero' ;;
	pipe_dd) secs "$B/bench/pipebench" 'dd if=/dev/zero bs=65536 count=15259 status=none' ;;
	bounce_head) secs "$B/bench/pipebench" --bounce 'head -c 1000000000 /dev/zero' ;;
	bounce_dd) secs "$B/bench/pipebench" --bounce 'dd if=/dev/zero bs=65536 count=15259 status=none' ;;
	cord_dd) secs "$C" run --via direct -t 120 -- 'dd if=/dev/zero bs=65536 count=15259 status=none' ;;
	esac
}
declare -A relay
head_ratios="" dd_ratios=""
for rr in $(seq 1 "$RELAY_ROUNDS"); do
	for k in pipe_head cord_head bounce_head pipe_dd cord_dd bounce_dd; do relay[$k]+="$(relay_row $k) "; done
	set -- ${relay[pipe_head]}; ph=${!#}; set -- ${relay[cord_head]}; ch=${!#}
	set -- ${relay[pipe_dd]}; pd=${!#}; set -- ${relay[cord_dd]}; cd=${!#}
	head_ratios+="$(echo "scale=4; $ph / $ch" | bc) "; dd_ratios+="$(echo "scale=4; $pd / $cd" | bc) "
	echo "round $rr: head pipe=${ph}s cordon=${ch}s; dd pipe=${pd}s cordon=${cd}s"
done
pipe_head=$(echo "${relay[pipe_head]}" | median_of); cord_head=$(echo "${relay[cord_head]}" | median_of)
pipe_dd=$(echo "${relay[pipe_dd]}" | median_of); cord_dd=$(echo "${relay[cord_dd]}" | median_of)
bounce_head=$(echo "${relay[bounce_head]}" | median_of); bounce_dd=$(echo "${relay[bounce_dd]}" | median_of)
spread() { tr ' ' '\n' | grep . | sort -n | sed -n '1p;$p' | tr '\n' ' ' | awk '{printf "%.2f-%.2f", $1, $2}'; }
head_spread=$(echo "$head_ratios" | spread); dd_spread=$(echo "$dd_ratios" | spread)
head_med=$(echo "$head_ratios" | median_of); dd_med=$(echo "$dd_ratios" | median_of)

echo "== ignore patterns over 10,000 files (setup step 'hide scan', CORDON_TRACE_SETUP)"
# What the ignore walk costs: 100 dirs x 100 files, the same run with 1 and with 100 glob
# patterns (none matches, so every entry is tried against every pattern), interleaved. The
# tree is nobody's for these runs: root's run idmaps a root-owned one, and its walk then also
# stats every file for the setuid checks (measured next, on the same tree given back to root).
mkdir -p "$work/tree"
for d in $(seq 1 100); do mkdir "$work/tree/d$d"; (cd "$work/tree/d$d" && touch $(seq -f 'file%g.txt' 1 100)); done
globs1=(--ignore '*.x1'); globs100=(); for i in $(seq 1 100); do globs100+=(--ignore "*.x$i"); done
# The setup step named $1 of a run in the tree with options $2..., in ms after the workdir's step.
step_ms() { local step=$1; shift; CORDON_TRACE_SETUP=1 "$C" run --via direct -w "$work/tree" "$@" -- true 2>&1 >/dev/null |
	awk -v s="prepare: $step" '/prepare: workdir, identity/ {a=$3} index($0, s) {print $3 - a}'; }
chown -R 65534:65534 "$work/tree"
s1="" s100=""
# The floor, in the same rounds: the bare getdents64 walk of the tree (bench/walkbench.c), in a
# fresh process each time as the run's own walk is.
sbare=""
for rr in $(seq 1 15); do
	s1+="$(step_ms 'hide scan' "${globs1[@]}") "; s100+="$(step_ms 'hide scan' "${globs100[@]}") "
	sbare+="$("$B/bench/walkbench" "$work/tree" | cut -d' ' -f1) "
done
scan1=$(echo "$s1" | median_of); scan100=$(echo "$s100" | median_of)
scanbare=$(echo "$sbare" | median_of)
# Root's tree, which root's run idmaps: its setuid checks (backends/local/setid.c) stat every
# file. With the default profile (literal masks: no walk for them) they are a walk of their
# own, the step after the hide scan; with the 100 patterns the hide walk makes them (hide.c,
# HIDE_SETID): one walk, one step for both. Interleaved.
chown -R 0:0 "$work/tree"
ss="" sb=""
for rr in $(seq 1 15); do ss+="$(step_ms 'setuid scan') "; sb+="$(step_ms 'hide and setuid scan' "${globs100[@]}") "; done
setid_scan=$(echo "$ss" | median_of); both_scan=$(echo "$sb" | median_of)

r() { printf '%.2f' "$(echo "scale=4; $1 / $2" | bc)"; }
{
	echo "# Benchmarks"
	echo
	echo "Produced by \`make bench\` on $(date -u +%Y-%m-%d) ($(uname -r), $(nproc) cores)."
	echo "Start latency: $N runs a row, in $ROUNDS interleaved rounds (the median of the rounds' medians),"
	echo "all in the same invocation;"
	echo "compare ratios, not milliseconds, across machines. The tables and the figures filled in"
	echo "from them are this run's ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')); the fixed figures in the"
	echo "prose (CPUID and wake-up costs, traced steps) were measured on the Intel VM where most of"
	echo "this was tuned (2026-11-24 to 26), and its kernel build is named where it matters."
	echo
	echo "## Start latency: run /bin/true and exit"
	echo
	echo "| run | median ms | vs fork+exec | vs bwrap (min-max of the rounds' own ratios) |"
	echo "|---|---|---|---|"
	echo "| bare fork+exec | $bare_m | 1.00 | $(r "$bare_m" "$bw_m") |"
	echo "| bwrap agent-realistic (prior-art §d1 row 4) | $bw_m | $(r "$bw_m" "$bare_m") | 1.00 |"
	echo "| cordon run, default profile, given workdir | $co_m | $(r "$co_m" "$bare_m") | **$(r "$co_m" "$bw_m")** ($co_sp) |"
	echo "| cordon run, default profile, temp workdir | $cot_m | $(r "$cot_m" "$bare_m") | **$(r "$cot_m" "$bw_m")** ($cot_sp) |"
	echo "| cordon run through cordond (pre-built sandbox), given workdir | $cod_m | $(r "$cod_m" "$bare_m") | **$(r "$cod_m" "$bw_m")** ($cod_sp) |"
	[ -z "$raw_m" ] || echo "| the same request from a client without libc (bench/rawclient.c) | $raw_m | $(r "$raw_m" "$bare_m") | $(r "$raw_m" "$bw_m") ($raw_sp) |"
	echo "| bwrap agent-realistic, \`sh -c '/bin/true;'\` | $bws_m | $(r "$bws_m" "$bare_m") | $(r "$bws_m" "$bw_m") |"
	echo "| cordon run \`'/bin/true;'\` (not simple: through sh) | $cos_m | $(r "$cos_m" "$bare_m") | $(r "$cos_m" "$bw_m") (vs bwrap's sh: $(r "$cos_m" "$bws_m")) |"
	echo
	echo "\`cordon run -- /bin/true\` is AG2's \`sh -c /bin/true\`; a simple command like this one is"
	echo "exec'd without the shell, exactly as dash would run it (docs/compat.md), so it does the"
	echo "same work as bwrap's row. The last two rows compare a script that needs the shell."
	echo
	echo "Start floors, same rounds: an empty static glibc program (bench/empty.c) $glibc_m ms;"
	if [ -n "$nolibc_m" ]; then
		echo "one without libc (bench/nolibc.c) $nolibc_m ms: the difference is glibc's start-up, which"
		echo "every process here pays (cordon's CLI, bwrap and /bin/true alike)."
	fi
	echo
	echo "Issue 15 (the given-workdir regression of 2026-11-24 and the 0.75x goal): the absent masked"
	echo "names share one placeholder inode (O_TMPFILE, hard-linked under each name) instead of one"
	echo "ext4 inode allocation per name; as root the parent makes the run's network namespace and"
	echo "cgroup while the child builds its root; the covers' source lives beneath /dev/shm instead"
	echo "of an unattached tmpfs whose release waited for an RCU grace period; a temp workdir nobody"
	echo "keeps exists only inside the sandbox. docs/security.md (\"Start-up cost\") has the details."
	echo
	echo "The cordond row is \`cordon run\` as it runs on a host where cordond answers (\`--via auto\`,"
	echo "the default, sends the run there): the CLI's own start, a connection, the request and the"
	echo "answer, and a sandbox its runner pre-built while it waited (docs/daemon.md, \"Pre-built"
	echo "sandboxes\"). What is left of it is the CLI's process itself (the glibc floor above) and"
	echo "the hand-offs; a client that keeps its connection (AG2 through the Python client) pays"
	echo "neither: bench/DAEMON.md measures that path against bwrap in its own rounds."
	if [ -n "$raw_m" ]; then
		echo "The row after it sends the CLI's request from a program without libc or start-up"
		echo "code (bench/rawclient.c) and reads the answer to its last byte: the floor of any"
		echo "\`cordon run\` through cordond, a fresh process and connection for each run. The"
		echo "cordond row minus this one, $(printf '%.2f' "$(echo "$cod_m - $raw_m" | bc)") ms here, is the CLI's own process: glibc's"
		echo "start-up (the floors above) and the profile it reads to know whether cordond can"
		echo "serve the run. Back to back even this floor is $(r "$raw_m" "$bw_m")x bwrap: what remains is cordond's"
		echo "path itself (a connection and its thread, the hand-off to a runner, the sandbox, the"
		echo "previous run's teardown sharing the two vCPUs), not the CLI."
	fi
	echo
	pm() { echo "${pace_med[$1]}" | median_of; }
	pp() { echo "${pace_p90[$1]}" | median_of; }
	echo "## Start at an agent's pace: 10 ms between runs (3 interleaved rounds of 60)"
	echo
	echo "| run | median ms | p90 ms | median vs bwrap | p90 vs bwrap |"
	echo "|---|---|---|---|---|"
	echo "| bwrap agent-realistic | $(pm bw) | $(pp bw) | 1.00 | 1.00 |"
	echo "| cordon run, default profile, given workdir | $(pm co) | $(pp co) | $(r "$(pm co)" "$(pm bw)") | $(r "$(pp co)" "$(pp bw)") |"
	echo
	echo "(Each figure is the median over the rounds of that round's median or p90.) Between"
	echo "runs the vCPUs go idle. Until 2026-11-25 the parent moved the sandbox into its v1 cgroup"
	echo "by pid, and that write waited for an RCU grace period, which on an idle host took 8-22 ms"
	echo "one run in three: p90 was 12-14 ms against bwrap's 3.8 ms. The sandbox now joins its"
	echo "cgroup itself, which skips that lock (docs/security.md, step 2)."
	echo
	bm() { echo "${busy_med[$1]}" | median_of; }
	echo "## Start with one CPU busy (3 interleaved rounds of 60)"
	echo
	echo "| run | median ms | vs bwrap |"
	echo "|---|---|---|"
	echo "| bwrap agent-realistic | $(bm bw) | 1.00 |"
	echo "| cordon run, default profile, given workdir | $(bm co) | $(r "$(bm co)" "$(bm bw)") |"
	echo
	echo "A shell loop at nice 10 runs meanwhile, wherever the scheduler puts it. cordon moves its"
	echo "child to another CPU while it builds the root only when one is likely free (the"
	echo "runnable count of /proc/loadavg below its CPUs; backends/local/cpus.h): pinned to the"
	echo "busy vCPU the child waited for that CPU's time slice, and until 2026-11-26 such a start"
	echo "took 1.3 to 2x bwrap's."
	echo
	echo "## Output relay: 1 GB through cordon vs a bare pipe ($RELAY_ROUNDS interleaved rounds)"
	echo
	echo "Bare pipe: bench/pipebench.c (the command's stdout on a pipe of cordon's size, read with"
	echo "cordon's read size and discarded). cordon: the whole \`cordon run\`, its start included."
	echo "Both are timed the same way, from outside, process start to exit (until 2026-11-25 the"
	echo "pipe's own clock left out its process's start and exit, 10-30 ms of a 0.3 s row here)."
	echo
	echo "| payload | bare pipe s (median) | cordon s (median) | cordon throughput vs pipe: median (min-max of rounds) | bare pipe read cordon's way (\`--bounce\`) s |"
	echo "|---|---|---|---|---|"
	echo "| head -c 1e9 | $pipe_head | $cord_head | **$(printf '%.2f' "$head_med")** ($head_spread) | $bounce_head |"
	echo "| dd bs=64KiB | $pipe_dd | $cord_dd | **$(printf '%.2f' "$dd_med")** ($dd_spread) | $bounce_dd |"
	echo
	if awk -v a="$head_med" -v b="$dd_med" 'BEGIN { exit !(a >= 0.95 && b >= 0.95) }'; then
		echo "Issue 15's goal, at least 0.95 of the bare pipe for 1 GB: **holds** in this run."
	else
		echo "Issue 15's goal, at least 0.95 of the bare pipe for 1 GB: **does not hold** in this run."
	fi
	echo
	echo "cordon reads a command's stdout through a bounce pipe (runtime/relay.h): splice(2) moves"
	echo "the pages of the command's pipe into a private pipe, under the pipe's lock but without a"
	echo "copy, and cordon copies them out of that one. read(2), as the bare pipe reads, copies while"
	echo "it holds the lock, so the writer's copy of its next chunk waits for it (on the Intel VM"
	echo "of 2026-11-25 it spins on the lock): the two copies of every byte take turns instead of"
	echo "overlapping. There cordon, with a whole sandbox and a scan of every byte, beat a bare pipe"
	echo "read with read(2) (1.24-1.31x); the last column is the same bare pipe read cordon's way,"
	echo "the method alone. On the AMD EPYC VM of 2026-11-26 (kernel fc-v782) cordon ran at 0.58"
	echo "to 0.83 of the bare pipe until its readers' buffers were made page-aligned: the kernel"
	echo "copies the pipe's pages out with \`rep movsb\`, and into a buffer 16 bytes past a page"
	echo "boundary, where glibc puts a large malloc'd block, every store landed just ahead of the"
	echo "load at the same page offset (4K aliasing): half the speed (runtime/relay.h)."
	echo "Past its first 4 MiB, a flood on stdout or stderr is read by a thread of its own that sleeps in"
	echo "splice(2), not in poll() (read the poll() way, a bare pipe moved 1 GB 10-25% slower on this"
	echo "VM). After a whole chunk of plain ASCII the capture counts 64 bytes at a time (SSE2;"
	echo "runtime/capture.c, plain_run64): twice the word loop's speed on such a flood."
	echo
	echo "## Ignore patterns: 10,000 files, 1 vs 100 glob patterns (15 interleaved runs)"
	echo
	echo "The setup step \`prepare: hide scan\` (the walk of the workdir and the matching), median ms:"
	echo "1 pattern $scan1, 100 patterns $scan100 (ratio $(r "$scan100" "$scan1")). Every pattern is"
	echo "matched at once (policy/pyglobset.c), so the patterns add little to the walk itself."
	echo "Issue 15's goal is 2 ms for 10,000 files and 100 patterns. The floor of any walk, in the"
	echo "same rounds: a bare getdents64 walk of the tree, one thread, no stat and no matching"
	echo "(bench/walkbench.c), $scanbare ms (the 100-pattern scan is $(r "$scan100" "$scanbare")x it). Reading the"
	echo "directories is most of the walk (on the Intel VM of 2026-11-25 the bare walk took 1.6 to"
	echo "2 ms and the scan 1.6 ms; on the AMD EPYC VM of 2026-11-26 about 5-6 ms and 4.4-5 ms: the"
	echo "file system and the VM set the floor, and the goal holds only where the floor is under"
	echo "it), so a big workdir's top-level subdirectories are walked on two"
	echo "threads, with the serial walk's result (docs/security.md, the walk's bounds)."
	echo "The tree is another user's for those runs. As root's, a run of root's idmaps it, and"
	echo "before such a run every file is stat()ed for setuid, setgid and file-capability programs"
	echo "and special files, which the command would own (backends/local/setid.c,"
	echo "docs/security.md). With the default profile, whose literal masks need no walk, that is a"
	echo "walk of its own, \`prepare: setuid scan\`: $setid_scan ms here (median of 15). With the 100"
	echo "patterns the hide walk makes those checks itself, one walk of the workdir for both (two in"
	echo "turn until 2026-11-26): \`prepare: hide and setuid scan\`, $both_scan ms (median of 15,"
	echo "interleaved with the other). Neither is an ignore cost: a workdir owned by the user the"
	echo "command runs as, or \`--readonly\`, pays none."
	echo
	echo "## Where the start goes"
	echo
	echo "\`CORDON_TRACE_SETUP=1 cordon run ...\` prints each setup step with its time, the teardown"
	echo "included. What made the start fast on this kind of VM: the CLI"
	echo "is linked static-pie (no dynamic loading), the seccomp program is compiled at build time,"
	echo "the parent makes the run's network namespace (as root) and cgroup while the child builds"
	echo "its root, the empty \`cordon\` parent cgroups are kept, the command's process is spawned"
	echo "vfork-style, and a simple command skips the exec of sh."
	echo
	echo "What is left, measured on this VM (a nested, paravirtualised guest: every CPUID and every"
	echo "wake-up of an idle vCPU is an exit to the hypervisor): glibc's start-up, about 0.5 ms of"
	echo "CPUID in each of cordon's CLI and the command (the floors above; bwrap pays it twice too);"
	echo "the network namespace, about 0.3 ms of CPU to make (sysctl tables, lo) and more to tear"
	echo "down in a kworker; the run's cgroup in four v1 hierarchies (mkdir, attach, rmdir each);"
	echo "the unmounts' RCU grace periods (pivot_root's detach of the old root, the mount"
	echo "namespace's teardown); about 100 mount calls (the /proc masks, the hidden names); loading"
	echo "the seccomp program (~0.06 ms); and the exec of the command. The scheduler here packs a"
	echo "new child on its parent's vCPU, where the two took turns (\`perf stat\`: 0.94 CPUs busy"
	echo "over a run): the parent now moves the child to its other CPU for the build of the root"
	echo "when that CPU is likely free (the busy row above), and the child puts the caller's CPUs"
	echo "back before the command (docs/security.md,"
	echo "\"spread\"), which took 0.2 to 0.3 ms off the start; a wake-up across the two vCPUs costs"
	echo "about 60 us (a pipe round trip is 117 us across, 2 us on one). bwrap's row does none of"
	echo "cordon's cgroup, /proc masking, hidden names, Landlock or seccomp."
	echo
	echo "## Daemon"
	echo
	echo "bench/DAEMON.md (bench/daemon_load.py, same invocation): 8 clients, 2000 runs, leaks,"
	echo "the daemon's added latency against direct runs, and issue 15's two goals for cordond"
	echo "(their table is appended below)."
} >bench/RESULTS.md
cat bench/RESULTS.md

# The daemon under load (issue 5): 8 clients x 2000 runs, leaks, overhead vs direct runs.
echo "== cordond load"
python3 bench/daemon_load.py "$B"
# Issue 15's goals for cordond, from the same run: DAEMON.md's table, appended here.
{
	echo
	sed -n "/^## Issue 15's goals for cordond/,/^## Leaks/p" bench/DAEMON.md | sed '$d' |
		sed "s/^## Issue 15's goals for cordond.*/## Daemon: issue 15's goals (bench\/daemon_load.py, this invocation)/"
} >>bench/RESULTS.md

# The Docker backend against the docker CLI (issue 10): appends its section to RESULTS.md.
echo "== docker backend"
bench/docker.sh "$B"
