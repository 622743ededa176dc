#!/bin/sh
# Run at boot by vmtest.service in the QEMU machine of tests/package/run.sh: Debian 12 with
# systemd 252 as PID 1 on a pure cgroup v2 hierarchy, Debian's own default, which this host
# (hybrid) and the package test's container cannot show. Installs the .deb as an
# administrator would and checks the daemon where it will run. Each check prints
# "ok   what" or "FAIL what: why"; then "vm: done", and the machine powers off.
exec >/dev/ttyS0 2>&1
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
# check, has, between, run_cgroups (tests/lib/vmcheck.sh, copied in by run.sh)
. /root/vmcheck.sh
svc=/sys/fs/cgroup/system.slice/cordond.service
member() { runuser -u alice -- cordon run --via daemon "$@" 2>&1; }

echo "vm: $(uname -r), $(systemctl --version | head -1)"
check "the machine is pure cgroup v2 under systemd" \
	[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs -a "$(ps -o comm= -p 1)" = systemd ]
dpkg -i /root/cordon.deb >/tmp/dpkg.log 2>&1
check "dpkg -i installs the package" [ $? = 0 ]
useradd -m -G cordon alice
mkdir -p /etc/cordon/profiles
printf '%s\n' '[profile]' 'description = small limits' 'include = default' '' '[limits]' \
	'pids = 16' >/etc/cordon/profiles/small.conf

out=$(member -- 'echo hi; id -un')
check "a member's run through the socket, as herself ($out)" [ "$out" = "hi
alice" ]
main=$(systemctl show -p MainPID --value cordond.service)
where=$(sed -n 's/^0:://p' "/proc/$main/cgroup")
check "cordond moved into a leaf of its delegated unit ($where)" \
	[ "$where" = /system.slice/cordond.service/supervisor ]

member -t 30 -- 'sleep 8' >/dev/null &
bg=$!
busy=""
for _ in $(seq 50); do
	for d in $(run_cgroups); do grep -q . "$d/cgroup.procs" && busy="$busy $d"; done
	[ -n "$busy" ] && break
	sleep 0.2
done
outside=$(run_cgroups | grep -v "^$svc/cordon/")
check "a run in progress has its cgroup below the unit (${busy# })" \
	[ -n "$busy" -a -z "$outside" -a ! -e /sys/fs/cgroup/cordon ]
status=$(systemctl status cordond --no-pager 2>&1)
check "systemctl status cordond shows the run's processes" has "$status" "sleep 8"
kill "$bg" 2>/dev/null
wait "$bg" 2>/dev/null

forks='( for i in $(seq 40); do sleep 30 & done ) 2>/dev/null
n=0; for f in /proc/[0-9]*; do n=$((n+1)); done; echo $n'
out=$(member -p small -t 20 -- "$forks")
check "the profile's pids = 16 holds in the run's cgroup ($out processes, 42 without)" \
	between "$out" 5 17

# The unit's own limit bounds its runs now, and its OOM kill takes the run, not cordond.
systemctl set-property --runtime cordond.service MemoryMax=96M
out=$(member -t 60 --format json -- 'dd if=/dev/zero of=/tmp/big bs=1M count=200 2>/dev/null; echo wrote')
check "MemoryMax=96M on the unit stops a run's 200 MiB fill (its default memory is 1G)" \
	has "$out" '"oom_killed": true'
has "$out" '"oom_killed": true' || echo "  $out"
check "the OOM kill took the run: cordond still runs, the same process" \
	[ "$(systemctl show -p MainPID --value cordond.service)" = "$main" ]
out=$(member -- 'echo after')
check "the next run works" [ "$out" = after ]

systemctl stop cordond.service
check "systemctl stop leaves no run cgroup and no cordon process" \
	[ -z "$(run_cgroups)" -a -z "$(pgrep -x cordond)" -a -z "$(pgrep -f '__cordond-runne[r]')" ]
echo "vm: done"
systemctl poweroff -ff
