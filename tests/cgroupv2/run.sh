#!/usr/bin/env bash
# cordon on a pure cgroup v2 host, for real. This machine is hybrid (its memory and pids
# controllers are bound to v1), so the v2 code's limits cannot be exercised here; this boots a
# Debian 12 kernel in QEMU (TCG: no KVM needed, about 3 s to a shell) with an initramfs of
# busybox, the static cordon CLI, cordond with its libraries and the shipped profiles, and runs
# tests/cgroupv2/inside.sh as its PID 1 on a cgroup2 hierarchy that has every controller.
# It also runs cordon on an older kernel than the host's (Landlock ABI 2, no tmpfs idmapping).
#
# The kernel is Debian's current cloud kernel package, fetched with apt-get download (Debian's
# mirror is reachable here) into $B/cgroupv2 once (tests/lib/kernel.sh). Last line: "N passed,
# M failed" (tests/run-all.sh counts it).
set -u
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$B/cgroupv2"
mkdir -p "$out"
out=$(cd "$out" && pwd)
fail() {
	echo "cgroupv2: $*" >&2
	echo "0 passed, 1 failed"
	exit 1
}

# shellcheck source=../lib/kernel.sh
. "$root/tests/lib/kernel.sh"
qemu_ensure || fail "no qemu"
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q "ok installed" ||
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends busybox-static \
		>/dev/null 2>&1 || fail "apt-get install busybox-static failed"
qemu=$(command -v qemu-system-x86_64) || fail "no qemu-system-x86_64"
[ -x "$B/cordon" ] && [ -x "$B/cordond" ] || fail "build $B/cordon and $B/cordond first"
kernel=$(debian_kernel "$out") || fail "no kernel"

# The initramfs: a merged-/usr root of busybox applets, cordon, cordond and its libraries.
ir="$out/root"
rm -rf "$ir"
mkdir -p "$ir"/usr/bin "$ir"/etc/cordon/profiles "$ir"/proc "$ir"/sys "$ir"/dev "$ir"/tmp \
	"$ir"/home/user
ln -s usr/bin "$ir/bin"
ln -s usr/bin "$ir/sbin"
cp /usr/bin/busybox "$ir/usr/bin/"
for a in $(/usr/bin/busybox --list); do
	[ -e "$ir/usr/bin/$a" ] || ln -s busybox "$ir/usr/bin/$a"
done
cp "$B/cordon" "$B/cordond" "$ir/usr/bin/"
cc -O2 -static -o "$ir/usr/bin/setxattr" "$here/setxattr.c" || fail "cannot build setxattr"
# cordond is dynamic: its loader and libraries where the loader looks for them.
ldd "$B/cordond" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) .*/\1/p' |
	while read -r lib; do
		mkdir -p "$ir$(dirname "$lib")"
		cp -L "$lib" "$ir$lib"
	done
[ -e "$ir/lib64" ] || ln -s usr/lib64 "$ir/lib64"
if [ -d "$ir/lib/x86_64-linux-gnu" ] && [ ! -L "$ir/lib" ]; then
	mkdir -p "$ir/usr/lib"
	cp -a "$ir/lib/." "$ir/usr/lib/" && rm -rf "$ir/lib"
	ln -s usr/lib "$ir/lib"
fi
if [ -d "$ir/lib64" ] && [ ! -L "$ir/lib64" ]; then
	mkdir -p "$ir/usr/lib64"
	cp -a "$ir/lib64/." "$ir/usr/lib64/" && rm -rf "$ir/lib64"
	ln -s usr/lib64 "$ir/lib64"
fi
cp "$root"/profiles/*.conf "$ir/etc/cordon/profiles/"
cat >"$ir/etc/cordon/profiles/v2test.conf" <<'EOF'
[profile]
description = The default, with small limits for the cgroup v2 checks
include = default

[limits]
pids = 16
memory = 64M
tmp_size = 512M
EOF
printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' \
	'user:x:1000:1000:user:/home/user:/bin/sh' >"$ir/etc/passwd"
printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' 'user:x:1000:' >"$ir/etc/group"
chown 1000:1000 "$ir/home/user"
cp "$here/inside.sh" "$ir/init"
cp "$here/../lib/vmcheck.sh" "$ir/vmcheck.sh"
chmod 0755 "$ir/init"
(cd "$ir" && find . | /usr/bin/busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$out/initrd.gz") ||
	fail "cannot pack the initramfs"
rm -rf "$ir"

log="$out/console.log"
timeout 600 "$qemu" -accel tcg -m 1024 -smp 2 -nographic -no-reboot -nodefaults -serial stdio \
	-kernel "$kernel" -initrd "$out/initrd.gz" \
	-append "console=ttyS0 quiet panic=-1 rdinit=/init" </dev/null >"$log" 2>&1
rc=$?
tr -d '\r' <"$log" | grep -aE '^(ok   |FAIL |  |kernel |cgroupv2: )' 
line=$(tr -d '\r' <"$log" | sed -n 's/^cgroupv2: \([0-9]* passed, [0-9]* failed\)$/\1/p' | tail -1)
if [ -z "$line" ]; then
	echo "cgroupv2: the machine gave no closing line (qemu exit $rc); its console:" >&2
	tr -d '\r' <"$log" | tail -30 >&2
	echo "0 passed, 1 failed"
	exit 1
fi
echo "$line"
