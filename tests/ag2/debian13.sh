#!/usr/bin/env bash
# AG2's own shell/sandbox tests against cordon (tests/ag2/run.sh) on a machine whose Debian
# cannot run AG2: Debian 12 has pydantic 1 only, and AG2 needs pydantic 2. This makes a
# Debian 13 (trixie) root with debootstrap, from Debian's archive alone (pydantic 2, pytest,
# pytest-asyncio, AG2's other dependencies, node for AG2's JavaScript test, and the libraries
# cordond links), enters it as the root of a private mount namespace (cordon's sandboxes need
# a real root for pivot_root, which a chroot is not) and runs tests/ag2/run.sh there, with this
# build's cordon and cordond, twice: as root, then as a member of group cordon (user cordon-ag2,
# made in the root), as an agent would run. The host's /sys, /dev and /tmp are the root's; this
# repository and AG2_SRC are bound at their own paths.
#
# Usage (root, from the repository root): AG2_SRC=DIR FAST_DEPENDS_SRC=DIR tests/ag2/debian13.sh [BUILD_DIR]
#   AG2_SRC           a checkout of github.com/ag2ai/ag2 (AG2 1.0: the `ag2` package)
#   FAST_DEPENDS_SRC  a checkout of github.com/Lancetnik/FastDepends (AG2 imports
#                     fast_depends, which Debian does not package; pure Python, copied in)
#   AG2_ROOT          where the root is kept between runs (default
#                     /var/cache/cordon-tests/ag2-debian13); delete it to start afresh
#   AG2_DOCKER=0     leave out the Docker test (run by default when docker.io is installed)
# Exit: tests/ag2/run.sh's (0, 1, or 77 with the reason on a "SKIP:" line).
set -euo pipefail
B=${1:-build}
ROOT=$PWD
R=${AG2_ROOT:-/var/cache/cordon-tests/ag2-debian13}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
skip() {
	echo "SKIP: ag2 (Debian 13): $*"
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, mount namespaces)"
[ -n "${AG2_SRC:-}" ] && [ -d "$AG2_SRC/ag2/tools/sandbox" ] ||
	skip "AG2_SRC is not a checkout of AG2 1.0 (no ag2/tools/sandbox)"
[ -n "${FAST_DEPENDS_SRC:-}" ] && [ -d "$FAST_DEPENDS_SRC/fast_depends" ] ||
	skip "FAST_DEPENDS_SRC is not a checkout of FastDepends (no fast_depends/)"
AG2_SRC=$(cd "$AG2_SRC" && pwd)
FAST_DEPENDS_SRC=$(cd "$FAST_DEPENDS_SRC" && pwd)
[ -x "$B/cordond" ] && [ -x "$B/cordon" ] || skip "$B/cordon and $B/cordond are not built (make)"

PKGS=python3,python-is-python3,python3-pydantic,python3-pytest,python3-pytest-asyncio,python3-anyio
PKGS+=,python3-httpx,python3-yaml,python3-dotenv,python3-termcolor,python3-packaging,nodejs
PKGS+=,python3-dirty-equals,python3-pytest-timeout
PKGS+=,ca-certificates,libseccomp2,libcurl4t64,libjansson4,libmicrohttpd12t64,libinih1
PKGS+=,libpcre2-8-0
if [ ! -e "$R/.cordon-ready" ] || [ "$(cat "$R/.cordon-ready")" != "$PKGS" ]; then
	command -v debootstrap >/dev/null ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
	rm -rf "$R"
	mkdir -p "$(dirname "$R")"
	echo "ag2: making a Debian 13 root in $R (a few minutes, once)"
	debootstrap --variant=minbase --include="$PKGS" trixie "$R" "$MIRROR" >"$R.log" 2>&1 ||
		{ tail -20 "$R.log"; echo "ag2: debootstrap failed"; exit 1; }
	echo "$PKGS" >"$R/.cordon-ready"
fi

# What pip would install, by hand: fast_depends's package and both distributions' metadata
# (AG2 and fast_depends read their own versions with importlib.metadata).
pyver=$(cd "$R/usr/lib" && ls -d python3.[0-9]* | sort -V | tail -1)
SITE=$R/usr/local/lib/$pyver/dist-packages
mkdir -p "$SITE"
rm -rf "$SITE/fast_depends" "$SITE"/fast_depends-*.dist-info "$SITE"/ag2-*.dist-info
cp -r "$FAST_DEPENDS_SRC/fast_depends" "$SITE/"
version() { sed -n 's/^version *= *"\([^"]*\)".*/\1/p' "$1" | head -1; }
fdv=$(git -C "$FAST_DEPENDS_SRC" describe --tags --abbrev=0 2>/dev/null || echo 0)
agv=$(version "$AG2_SRC/pyproject.toml")
for d in "fast_depends:$fdv" "ag2:${agv:-0}"; do
	mkdir -p "$SITE/${d%%:*}-${d#*:}.dist-info"
	printf 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n' "${d%%:*}" "${d#*:}" \
		>"$SITE/${d%%:*}-${d#*:}.dist-info/METADATA"
done

# The user of the second pass: a member of group cordon, as an agent would be.
chroot "$R" sh -c 'getent group cordon >/dev/null || groupadd -r cordon
id cordon-ag2 >/dev/null 2>&1 || useradd -m -G cordon cordon-ag2'

echo "ag2: Debian $(cat "$R/etc/debian_version"), AG2 ${agv:-?} ($(git -C "$AG2_SRC" rev-parse --short HEAD 2>/dev/null || echo "not a git checkout")), fast_depends $fdv"
# With Docker here (docker.io installed; AG2_DOCKER=0 to leave it out), cordon's Docker
# backend runs in AG2's Agent too: a dockerd (started if none answers, stopped after), the
# busybox test image, and its socket in the root.
img=
if [ "${AG2_DOCKER:-1}" != 0 ] && command -v dockerd >/dev/null 2>&1; then
	# shellcheck source=../lib/dockerd.sh
	. tests/lib/dockerd.sh
	if dockerd_ensure && docker_test_image cordon-test/busybox:1; then
		img=cordon-test/busybox:1
	else
		echo "ag2: no Docker for the Docker test (it is left out)"
	fi
fi
unshare -m --propagation private bash -c '
set -e
R=$1 ROOT=$2 AG2_SRC=$3 B=$4 IMG=$5
mount --bind "$R" "$R"
for m in sys dev tmp; do mkdir -p "$R/$m"; mount --rbind "/$m" "$R/$m"; done
if [ -n "$IMG" ]; then
	mkdir -p "$R/run"
	touch "$R/run/docker.sock"
	mount --bind /run/docker.sock "$R/run/docker.sock"
	export CORDON_AG2_DOCKER_IMAGE=$IMG
fi
for d in "$ROOT" "$AG2_SRC"; do mkdir -p "$R$d"; mount --bind "$d" "$R$d"; done
mkdir -p "$R/proc" "$R/.old"
mount -t proc proc "$R/proc"
cd "$R"
pivot_root . .old
umount -l /.old
rmdir /.old 2>/dev/null || true
cd "$ROOT"
set +e
echo "== as root"
AG2_SRC=$AG2_SRC tests/ag2/run.sh "$B"
r=$?
echo "== as cordon-ag2, a member of group cordon"
AG2_SRC=$AG2_SRC AG2_USER=cordon-ag2 tests/ag2/run.sh "$B"
u=$?
[ "$u" -eq 77 ] && u=0 # this checkout is not readable by other users (a clone in /root)
[ "$r" -ne 0 ] && exit "$r"
exit "$u"' bash "$R" "$ROOT" "$AG2_SRC" "$B" "$img"
rc=$?
[ -z "$img" ] || dockerd_release
exit "$rc"
