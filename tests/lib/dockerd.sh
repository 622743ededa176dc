# shellcheck shell=bash
# Shared by every test that needs a Docker daemon (the docker backend's tests, the package test
# under systemd). Source it, then:
#   dockerd_ensure          install docker.io when missing, start a plain dockerd when none
#                           answers; returns non-zero (with a line on stderr) when that fails
#   dockerd_release         stop the dockerd that dockerd_ensure started (by pid), and only that
#   docker_test_image NAME  build NAME (a busybox-static rootfs, every applet linked, /workspace
#                           and /tmp present) with `docker import` when missing: no registry here
#
# A dockerd that was already running is reused and left running. The one started here runs
# with no bridge, no iptables rules and no ip_forward change, so stopping it leaves the host's
# network as it was (docker0 and the NAT rules are what a default dockerd leaves behind); the
# tests only ever use network "none". Its data root is Docker's default, so imported images
# (the systemd rootfs above all) are cached between runs on one machine.

CORDON_DOCKERD_PID=
CORDON_DOCKER_SOCK=${CORDON_DOCKER_SOCK:-/var/run/docker.sock}

# The Debian client (/usr/bin/docker) speaks to the Debian daemon; a newer client elsewhere on
# PATH works too, but tests name one so their output does not depend on PATH order.
DOCKER=${DOCKER:-/usr/bin/docker}

docker_answers() {
	curl -sf --max-time 2 --unix-socket "$CORDON_DOCKER_SOCK" http://localhost/_ping >/dev/null 2>&1
}

dockerd_ensure() {
	if docker_answers; then
		return 0
	fi
	if ! command -v dockerd >/dev/null 2>&1 || [ ! -x "$DOCKER" ]; then
		if [ "$(id -u)" != 0 ]; then
			echo "dockerd_ensure: docker.io is not installed and this is not root" >&2
			return 1
		fi
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null 2>&1 ||
			{ apt-get update -qq >/dev/null 2>&1 &&
				DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null 2>&1; } ||
			{ echo "dockerd_ensure: apt-get install docker.io failed" >&2; return 1; }
	fi
	if [ -S "$CORDON_DOCKER_SOCK" ] && ! docker_answers; then
		# A socket nobody answers on (a dockerd that died): dockerd refuses to start over it.
		rm -f "$CORDON_DOCKER_SOCK"
	fi
	local log=/tmp/cordon-dockerd.log
	dockerd --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
		>"$log" 2>&1 &
	CORDON_DOCKERD_PID=$!
	local i
	for i in $(seq 1 150); do
		docker_answers && return 0
		if ! kill -0 "$CORDON_DOCKERD_PID" 2>/dev/null; then
			echo "dockerd_ensure: dockerd exited at start: $(tail -1 "$log")" >&2
			CORDON_DOCKERD_PID=
			return 1
		fi
		sleep 0.2
	done
	echo "dockerd_ensure: dockerd did not answer within 30 s: $(tail -1 "$log")" >&2
	dockerd_release
	return 1
}

dockerd_release() {
	[ -n "$CORDON_DOCKERD_PID" ] || return 0
	kill -TERM "$CORDON_DOCKERD_PID" 2>/dev/null
	local i
	for i in $(seq 1 150); do
		kill -0 "$CORDON_DOCKERD_PID" 2>/dev/null || break
		sleep 0.2
	done
	# Gone by now, as a rule: neither may fail a caller's `set -e` (its EXIT trap would make
	# the whole script exit 1 after everything went well).
	kill -KILL "$CORDON_DOCKERD_PID" 2>/dev/null || true
	wait "$CORDON_DOCKERD_PID" 2>/dev/null || true
	# dockerd leaves its default network namespace's bind mount behind when it stops: ours
	# to remove, once no dockerd runs.
	if ! pgrep -x dockerd >/dev/null && mountpoint -q /run/docker/netns/default 2>/dev/null; then
		umount /run/docker/netns/default 2>/dev/null || true
	fi
	CORDON_DOCKERD_PID=
}

docker_test_image() {
	local name=${1:-cordon-test/busybox:1}
	"$DOCKER" image inspect "$name" >/dev/null 2>&1 && return 0
	if [ ! -x /bin/busybox ] || ! /bin/busybox --list 2>/dev/null | grep -qx sh ||
		! dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed'; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null 2>&1 ||
			{ echo "docker_test_image: apt-get install busybox-static failed" >&2; return 1; }
	fi
	local root
	root=$(mktemp -d /tmp/cordon-image.XXXXXX) || return 1
	mkdir -p "$root/bin" "$root/tmp" "$root/workspace" "$root/etc" "$root/proc" "$root/dev" \
		"$root/sys"
	chmod 1777 "$root/tmp"
	cp /bin/busybox "$root/bin/busybox"
	local a
	for a in $("$root/bin/busybox" --list); do
		[ "$a" = busybox ] || ln -s busybox "$root/bin/$a"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' \
		>"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	tar -C "$root" -c . | "$DOCKER" import -c 'ENV PATH=/bin' - "$name" >/dev/null
	local rc=$?
	rm -rf "$root"
	[ $rc -eq 0 ] || echo "docker_test_image: docker import failed" >&2
	return $rc
}
