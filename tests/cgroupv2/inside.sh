#!/bin/sh
# PID 1 of the cgroup v2 machine (tests/cgroupv2/run.sh boots it): busybox sh, a Debian 12
# kernel, a cgroup2 hierarchy with every controller and no v1. Each check prints "ok   what"
# or "FAIL what: why"; the last line is "cgroupv2: P passed, F failed", then power off.
PATH=/usr/bin
export PATH
# The initramfs is the kernel's rootfs, which pivot_root(2) refuses (EINVAL; runc has
# --no-pivot for it): first move into a tmpfs root, as an init does with switch_root.
if [ -z "${CGV2_STAGE2:-}" ]; then
	mkdir -p /newroot
	mount -t tmpfs -o mode=0755 root /newroot
	for d in bin sbin lib lib64 usr etc home init vmcheck.sh; do
		[ -e "/$d" ] || [ -L "/$d" ] && cp -a "/$d" /newroot/
	done
	mkdir -p /newroot/proc /newroot/sys /newroot/dev /newroot/tmp
	CGV2_STAGE2=1 exec switch_root /newroot /init
fi
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs -o mode=1777 tmp /tmp
mkdir -p /run && mount -t tmpfs -o mode=0755 run /run
mount -t cgroup2 cgroup2 /sys/fs/cgroup
echo "+memory +pids +cpu" >/sys/fs/cgroup/cgroup.subtree_control

# check, ok, bad, has, between, run_cgroups (tests/lib/vmcheck.sh, copied in by run.sh)
. /vmcheck.sh
sleepers() { ps -o args 2>/dev/null | grep -c '^sleep 3[0-9]$'; }

echo "kernel $(uname -r); controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"

out=$(cordon doctor 2>&1)
check "doctor: v2 with its controllers is what cordon uses" \
	has "$out" "cgroup use:         v2 (memory, pids"
check "doctor: full isolation on a pure v2 host" has "$out" "full isolation available"
has "$out" "full isolation available" || echo "$out"

out=$(cordon run -- 'echo hello from v2; id -u' 2>&1)
rc=$?
check "a run as root: its output, as uid 65534, exit 0" [ "$rc" = 0 -a "$out" = "hello from v2
65534" ]
[ "$rc" = 0 ] || echo "  rc=$rc: $out"

# pids = 16: the run's processes, init included, once a subshell has tried to start 40
# (whether each has exec'd sleep yet or not; busybox's shell ends at a failed fork, hence
# the subshell). The count forks nothing. Unbounded it is 42.
forks='( for i in $(seq 40); do sleep 30 & done ) 2>/dev/null
n=0; for f in /proc/[0-9]*; do n=$((n+1)); done; echo $n'
out=$(cordon run -p v2test -t 20 -- "$forks" 2>&1)
check "pids = 16 stops a fork loop in the run's v2 cgroup ($out processes)" \
	between "$out" 5 17

# memory = 64M: 200 MiB written to the sandbox's tmpfs are charged to the run's cgroup.
out=$(cordon run -p v2test --format json -t 60 -- \
	'dd if=/dev/zero of=/tmp/big bs=1M count=200 2>/dev/null; echo wrote' 2>&1)
check "memory = 64M: a 200 MiB tmpfs fill is OOM-killed and reported" \
	has "$out" '"oom_killed": true'
has "$out" '"oom_killed": true' || echo "  $out"
peak=$(echo "$out" | sed -n 's/.*"peak_memory_bytes": \([0-9]*\).*/\1/p')
check "memory = 64M: the peak reported is near the limit (${peak:-no} bytes)" \
	between "${peak:-0}" 60000000 67108865

out=$(cordon run --format json -- 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done' 2>&1)
cpu=$(echo "$out" | sed -n 's/.*"cpu_ms": \([0-9]*\).*/\1/p')
check "cpu.stat: a busy loop's CPU time is counted (${cpu:-none} ms)" [ "${cpu:-0}" -gt 10 ]

start=$(date +%s)
cordon run -t 1 -- 'sleep 31 & sleep 32 & setsid sleep 33 & sleep 34' >/dev/null 2>&1
rc=$?
took=$(($(date +%s) - start))
check "a timeout ends the run with 124 ($rc) within seconds ($took s)" [ "$rc" = 124 -a "$took" -le 5 ]
check "cgroup.kill: no process of the timed-out run is left" [ "$(sleepers)" = 0 ]
check "no run cgroup is left after the runs" [ -z "$(run_cgroups)" ]

# 6.1 cannot idmap a tmpfs: a root-owned workdir there is bound as it is, and the command
# (nobody) has the access other users have (docs/security.md, "Identity").
mkdir -m 0755 /tmp/wd-closed && mkdir -m 0777 /tmp/wd-open
out=$(cordon run -w /tmp/wd-closed -- 'touch x' 2>&1)
rc=$?
check "a root-owned 0755 workdir that cannot be idmapped stays unwritten (exit $rc)" \
	[ "$rc" != 0 -a ! -e /tmp/wd-closed/x ]
cordon run -w /tmp/wd-open -- 'touch x' >/dev/null 2>&1
check "a 0777 one is written, as nobody ($(stat -c %u /tmp/wd-open/x 2>/dev/null))" \
	[ "$(stat -c %u /tmp/wd-open/x 2>/dev/null)" = 65534 ]

# An ordinary user: its own user namespace; without a delegated v2 subtree, no cgroup.
out=$(su -s /bin/sh user -c 'cordon run -- id -u' 2>&1)
check "an ordinary user's run, as that user ($out)" [ "$out" = 1000 ]

# A host that keeps user namespaces from ordinary users (Debian's sysctl; Ubuntu's AppArmor
# restriction is alike): a user's run cannot be sandboxed, and says so in one line, exit 125.
echo 0 >/proc/sys/kernel/unprivileged_userns_clone
out=$(su -s /bin/sh user -c 'cordon run -- id -u' 2>&1)
rc=$?
doc=$(su -s /bin/sh user -c 'cordon doctor' 2>&1)
echo 1 >/proc/sys/kernel/unprivileged_userns_clone
check "doctor, for that user, names the setting and says the sandbox cannot run" \
	has "$doc" "user namespace:     off (kernel.unprivileged_userns_clone = 0)"
has "$doc" "the local sandbox cannot run here" || echo "$doc" | sed 's/^/  doctor: /'
one_line_naming() { [ "$rc" = 125 -a "$(echo "$out" | wc -l)" = 1 ] && has "$out" "$1"; }
check "without unprivileged user namespaces a user's run is refused: 125, one line ($out)" \
	one_line_naming "kernel.unprivileged_userns_clone = 0"

# An ordinary user in a delegated v2 subtree, as systemd's user@.service gives each user one
# (Delegate=yes): the subtree is the user's, memory and pids on, the user's shell in a leaf.
mkdir -p /sys/fs/cgroup/user/1000/shell
echo "+memory +pids" >/sys/fs/cgroup/user/cgroup.subtree_control
echo "+memory +pids" >/sys/fs/cgroup/user/1000/cgroup.subtree_control
chown -R 1000:1000 /sys/fs/cgroup/user/1000
as_delegated_user() {
	sh -c 'echo $$ >/sys/fs/cgroup/user/1000/shell/cgroup.procs && exec su -s /bin/sh user -c "$0"' "$1"
}
out=$(as_delegated_user 'cordon doctor' 2>&1)
check "doctor, as a user with a delegated subtree: v2 is used" \
	has "$out" "cgroup use:         v2 (memory, pids"
has "$out" "cgroup use:         v2" || echo "$out" | grep "cgroup"
out=$(as_delegated_user "cordon run -p v2test -t 20 -- '$forks'" 2>&1)
check "pids = 16 holds for a user's run in its delegated subtree ($out processes)" \
	between "$out" 5 17
out=$(as_delegated_user "cordon run -p v2test -t 60 --format json -- \
	'dd if=/dev/zero of=/tmp/big bs=1M count=200 2>/dev/null; echo wrote'" 2>&1)
check "memory = 64M holds for a user's run in its delegated subtree" \
	has "$out" '"oom_killed": true'
check "the user's runs leave no cgroup in its subtree" \
	[ -z "$(find /sys/fs/cgroup/user -mindepth 1 -type d -name 'cordon-*-*-*')" ]

# Root in that user's subtree, the subtree marked user.delegate (the user's to set on a cgroup of
# theirs, as their own systemd does): root's runs must not be made in it, where the user could
# move a run's processes out of its cgroup (v2 checks no uid for that), away from its limits and
# its kill. First a root `cordon run` from the user's shell (sudo in their terminal), then a
# cordond started by hand in a cgroup of theirs, which must not claim it either.
cgroup_of() { sed -n 's/^0:://p' "/proc/$1/cgroup" 2>/dev/null; }
pid_of() { ps -o pid,args | awk -v a="$1" '$2 == "sleep" && $3 == a { print $1; exit }'; }
wait_pid_of() {
	i=0
	while [ -z "$(pid_of "$1")" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	pid_of "$1"
}
su -s /bin/sh user -c 'setxattr /sys/fs/cgroup/user/1000 user.delegate 1' ||
	bad "the user cannot mark its subtree user.delegate"
sh -c 'echo $$ >/sys/fs/cgroup/user/1000/shell/cgroup.procs && exec cordon run -t 30 -- "sleep 37"' \
	>/dev/null 2>&1 &
r=$!
p=$(wait_pid_of 37)
where=$(cgroup_of "$p")
check "root's run from a user's marked subtree is not made in it (${where:-no run})" \
	[ -n "$where" -a "${where#/user/}" = "$where" ]
su -s /bin/sh user -c "echo $p >/sys/fs/cgroup/user/1000/shell/cgroup.procs" 2>/dev/null
after=$(cgroup_of "$p")
check "the user cannot move root's run's process out of its cgroup (${after:-gone})" \
	[ -n "$after" -a "$after" = "$where" ]
kill -TERM "$r"
wait "$r"
su -s /bin/sh user -c 'mkdir /sys/fs/cgroup/user/1000/svc &&
	setxattr /sys/fs/cgroup/user/1000/svc user.delegate 1' || bad "the user cannot make svc"
sh -c 'echo $$ >/sys/fs/cgroup/user/1000/svc/cgroup.procs &&
	exec cordond --socket /run/cordon-u.sock' >/tmp/cordond-u.log 2>&1 &
d=$!
i=0
while [ ! -S /run/cordon-u.sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
check "a root cordond in a user's marked cgroup does not claim it ($(cgroup_of "$d"))" \
	[ "$(cgroup_of "$d")" = /user/1000/svc ]
CORDON_SOCKET=/run/cordon-u.sock cordon run --via daemon -t 30 -- 'sleep 38' >/dev/null 2>&1 &
r=$!
p=$(wait_pid_of 38)
where=$(cgroup_of "$p")
check "nor are its runs made in the user's subtree (${where:-no run})" \
	[ -n "$where" -a "${where#/user/}" = "$where" ]
kill -TERM "$r" "$d"
wait "$r"
wait "$d"

# cordond: its runners stage each next run's v2 cgroup. Started the way systemd starts it on
# Debian 12 (pure v2, systemd 252: Delegate=yes, no DelegateSubgroup=), in a service cgroup
# of its own below a slice that is not delegated to it.
mkdir -p /sys/fs/cgroup/system.slice/cordond.service
echo "+memory +pids" >/sys/fs/cgroup/system.slice/cgroup.subtree_control
sh -c 'echo $$ >/sys/fs/cgroup/system.slice/cordond.service/cgroup.procs &&
	exec cordond --socket /run/cordon.sock' >/tmp/cordond.log 2>&1 &
d=$!
i=0
while [ ! -S /run/cordon.sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
out=$(CORDON_SOCKET=/run/cordon.sock cordon run --via daemon -- 'echo via cordond' 2>&1)
check "a run through cordond" [ "$out" = "via cordond" ]
out=$(CORDON_SOCKET=/run/cordon.sock cordon run --via daemon -p v2test -t 20 -- "$forks" 2>&1)
check "through cordond, pids = 16 holds in the runner's v2 cgroup ($out processes)" \
	between "$out" 5 17
out=$(CORDON_SOCKET=/run/cordon.sock cordon run --via daemon -p v2test -t 60 --format json -- \
	'dd if=/dev/zero of=/tmp/big bs=1M count=200 2>/dev/null; echo wrote' 2>&1)
check "through cordond, memory = 64M is enforced and reported" has "$out" '"oom_killed": true'
kill -TERM "$d"
wait "$d"
rc=$?
check "cordond stops on SIGTERM with 0 ($rc)" [ "$rc" = 0 ]
[ "$rc" = 0 ] || cat /tmp/cordond.log
check "after cordond: no run cgroup, no runner, no sandbox left" \
	[ -z "$(run_cgroups)" -a "$(ps -o args | grep -c '^cordon')" = 0 -a "$(sleepers)" = 0 ]

# The same with the unit's cgroup marked delegated (trusted.delegate), as systemd >= 251 marks
# a Delegate=yes unit's: cordond moves into a 'supervisor' leaf of it (what DelegateSubgroup=
# does on systemd >= 254), and the runs' cgroups are made below the unit, not at the root.
svc=/sys/fs/cgroup/system.slice/cordond.service
setxattr "$svc" trusted.delegate 1
sh -c 'echo $$ >/sys/fs/cgroup/system.slice/cordond.service/cgroup.procs &&
	exec cordond --socket /run/cordon.sock' >/tmp/cordond.log 2>&1 &
d=$!
i=0
while [ ! -S /run/cordon.sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
where=$(sed -n 's/^0:://p' /proc/$d/cgroup)
check "a delegated cordond moves into a leaf of its unit ($where)" \
	[ "$where" = /system.slice/cordond.service/supervisor ]
out=$(CORDON_SOCKET=/run/cordon.sock cordon run --via daemon -p v2test -t 20 -- "$forks" 2>&1)
check "its runs' pids = 16 holds ($out processes)" between "$out" 5 17
others=$(run_cgroups | grep -v "^$svc/cordon/")
check "its runs' cgroups are below the unit ($(run_cgroups | head -1))" \
	[ -n "$(run_cgroups)" -a -z "$others" ]
kill -TERM "$d"
wait "$d"
check "it stops with 0 and leaves no run cgroup" [ "$?" = 0 -a -z "$(run_cgroups)" ]
grep -q "moved into a 'supervisor' leaf" /tmp/cordond.log ||
	{ echo "  cordond's log:"; sed 's/^/  /' /tmp/cordond.log; }

echo "cgroupv2: $pass passed, $fail failed"
sync
poweroff -f
