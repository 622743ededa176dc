# shellcheck shell=sh
# The check helpers of the scripts that run inside the QEMU machines (tests/cgroupv2/inside.sh,
# tests/package/vm-inside.sh): each run's image gets a copy beside its script, which sources
# it. POSIX sh (busybox and dash). Each check prints "ok   NAME" or "FAIL NAME" and is
# counted in $pass and $fail.
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
# check NAME CONDITION-COMMAND...: ok when the command succeeds.
check() {
	name=$1
	shift
	if "$@"; then ok "$name"; else bad "$name"; fi
}
has() { case $1 in *"$2"*) return 0 ;; esac; return 1; }
# between N LOW HIGH: LOW < N < HIGH, N a number.
between() { [ "$1" -gt "$2" ] 2>/dev/null && [ "$1" -lt "$3" ]; }
# The runs' cgroups still there.
run_cgroups() { find /sys/fs/cgroup -mindepth 1 -type d -name 'cordon-*-*-*' 2>/dev/null; }
