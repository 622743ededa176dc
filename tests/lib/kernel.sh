# shellcheck shell=bash
# Debian 12's current cloud kernel, for the tests that boot a QEMU machine (tests/cgroupv2,
# tests/package): Source it, then
#   debian_kernel DIR    prints the path of a vmlinuz, fetched once (apt-get download of the
#                        package linux-image-cloud-amd64 depends on) and unpacked under DIR;
#                        non-zero with a line on stderr when that fails
#   qemu_ensure          installs qemu-system-x86 when missing
debian_kernel() {
	local dir=$1 kernel pkg
	kernel=$(ls "$dir"/kernel/boot/vmlinuz-* 2>/dev/null | head -1)
	if [ -n "$kernel" ]; then
		echo "$kernel"
		return 0
	fi
	pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9].*-cloud-amd64\)$/\1/p' | head -1)
	if [ -z "$pkg" ]; then
		apt-get update -qq >/dev/null 2>&1
		pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
			sed -n 's/^ *Depends: \(linux-image-[0-9].*-cloud-amd64\)$/\1/p' | head -1)
	fi
	[ -n "$pkg" ] || { echo "debian_kernel: which kernel linux-image-cloud-amd64 depends on?" >&2; return 1; }
	rm -rf "$dir/dl" && mkdir -p "$dir/dl" || return 1
	(cd "$dir/dl" && apt-get download -qq "$pkg" >/dev/null 2>&1) ||
		{ echo "debian_kernel: apt-get download $pkg failed" >&2; return 1; }
	dpkg-deb -x "$dir"/dl/*.deb "$dir/kernel" || { echo "debian_kernel: cannot unpack $pkg" >&2; return 1; }
	rm -rf "$dir/dl"
	kernel=$(ls "$dir"/kernel/boot/vmlinuz-* 2>/dev/null | head -1)
	[ -n "$kernel" ] || { echo "debian_kernel: no vmlinuz in $pkg" >&2; return 1; }
	echo "$kernel"
}

qemu_ensure() {
	dpkg-query -W -f='${Status}' qemu-system-x86 2>/dev/null | grep -q "ok installed" ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			qemu-system-x86 >/dev/null 2>&1 ||
		{ echo "qemu_ensure: apt-get install qemu-system-x86 failed" >&2; return 1; }
}
