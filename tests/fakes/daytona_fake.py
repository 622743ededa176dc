#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A stateful fake of Daytona's control plane and sandbox toolbox, for cordon's offline tests.

    daytona_fake.py --port 0 --key KEY --root DIR --toolbox-url URL --port-file F

Binds 127.0.0.1, writes its port to F (atomically) once it listens, and serves until SIGTERM or
SIGINT. Python 3 standard library only. tests/daytona/run.sh puts `prism proxy --errors` in
front of it (backends/daytona/openapi/), so every request cordon sends and every answer given
here is checked against Daytona's published OpenAPI documents.

Control plane (paths as in the spec, without Daytona's /api prefix):
  POST   /sandbox                          snapshot, or buildInfo.dockerfileContent "FROM img\\n"
  GET    /sandbox?labels=<json>            the live sandboxes carrying every given label
  GET    /sandbox/{idOrName}               one poll: the state advances (below)
  DELETE /sandbox/{idOrName}               200 state destroying; its commands killed; later 404
  GET    /sandbox/{id}/toolbox-proxy-url   {"url": <toolbox URL>}
Toolbox, under /toolbox/{id} (the path prefix Daytona's proxy routes on):
  POST   process/execute                   sh -c COMMAND on this host (see run_command)
  POST   files/folder?path=&mode=          201 (also when it exists)
  POST   files/upload-v2?path=             multipart field "file", or a raw body; parents made
  GET    files/download?path=              the bytes; 404 missing, 400 a directory
  DELETE files?path=[&recursive=true]      204
Test control, never proxied, no key needed (not part of Daytona's API):
  GET  /_fake/state    {"sandboxes": [{..., "history": [states]}], "live": N, "requests": [last 500],
                       "faults": [...]}
  POST /_fake/faults   [{"method","path" (regex),"status","times","delay","retry_after","drop",
                       "message"}]: the next `times` matching requests get that answer
  POST /_fake/config   {"toolbox_url", "default" (true: /_fake/reset keeps that URL),
                       "execute_result_first" (true: {"result",...,"exitCode"}, the default),
                       "execute_exit_key" ("exitCode", or "code" as daemons before 0.1xx)}
  POST /_fake/reset    sandboxes (commands killed, files removed), faults, log, config
  POST /_fake/created  {"id", "createdAt"}: that sandbox's creation time from now on

States: a snapshot create answers "creating", then its GETs say "starting", then "started" from
the second poll on; a buildInfo create answers "pending_build", then "building_snapshot", then
"started". Knobs, by snapshot or image name: "fake-error" (state error, with errorReason),
"fake-build-failed" (image only: build_failed), "fake-never" (never started), "fake-slow"
(started at the 20th poll), "fake-error-key" (state error, the caller's key in errorReason).
A command naming "cordon-fake-drip" is answered with headers and then a body that never ends.

Commands run on this host, not in a container: as nobody (65534) when the fake runs as root,
in DIR/<id>/ + the absolute cwd, in a process group of their own; the directories above DIR
must be searchable by others. Sandbox paths are mapped under DIR/<id>/; one with a ".."
component, or whose symlinks lead outside DIR/<id>, is refused, and the file endpoints do their
work as nobody too (mkdir, cat, rm), so a command that swaps a path for a symlink after the
check reaches no further than it could itself.
"""

import argparse
import codecs
import http.server
import json
import mmap
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import uuid
from collections import deque

NOBODY = 65534
DEFAULT_SNAPSHOT = "daytonaio/sandbox:0.5.0"
ORGANIZATION = "cordon-fake-org"
RESOURCE_KEYS = ("cpu", "gpu", "memory", "disk")
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SPOOL_CHUNK = 65536
REQUEST_LOG = 500
MEMORY_BODY = 1 << 20  # request bodies above this go to a temp file
FAKE_ERROR_REASON = "fake-error: the runner could not start the sandbox"
FAKE_BUILD_REASON = "fake-build-failed: the image build failed (step 1/1: FROM)"


def now_iso():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % (int(t * 1000) % 1000)


def status_phrase(status):
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Error"


class ApiError(Exception):
    def __init__(self, status, message, code=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


class Dropped(Exception):
    """The connection is to be closed without an answer."""


# --- Go's encoding/json string encoding, incremental -------------------------------------------


class GoJsonString:
    """Encodes a byte stream as the inside of a JSON string the way Go's encoding/json does
    (the daemon is written in Go): each byte that does not start a valid UTF-8 sequence becomes
    one U+FFFD (written as \\ufffd); <, > and & are \\u003c, \\u003e, \\u0026; U+2028 and U+2029
    are escaped; control characters are \\b \\f \\n \\r \\t or \\u00XX. A sequence cut by a chunk
    boundary is carried over to the next chunk."""

    def __init__(self):
        self.pending = b""

    def feed(self, data, final=False):
        buf = self.pending + data if self.pending else data
        mv = memoryview(buf)
        out = []
        i = 0
        while True:
            try:
                text, used = codecs.utf_8_decode(mv[i:], "strict", final)
                out.append(text)
                i += used
                break
            except UnicodeDecodeError as e:
                if e.start:
                    out.append(codecs.utf_8_decode(mv[i : i + e.start], "strict", True)[0])
                # Go's decoder takes one byte for any invalid sequence; the next byte is
                # looked at again (Python's "replace" would swallow a maximal subpart).
                out.append("\ufffd")
                i += e.start + 1
        self.pending = bytes(mv[i:])
        s = json.dumps("".join(out), ensure_ascii=False)[1:-1]
        s = s.replace("\ufffd", "\\ufffd")
        s = s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        s = s.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        return s.encode("utf-8")


# --- State --------------------------------------------------------------------------------------


class Sandbox:
    def __init__(self, root_dir, body, image):
        self.id = str(uuid.uuid4())
        self.name = body.get("name") or self.id
        self.snapshot = body.get("snapshot")
        self.image = image
        self.build_info = body.get("buildInfo")
        self.labels = dict(body.get("labels") or {})
        self.env = dict(body.get("env") or {})
        self.target = body.get("target") or "us"
        self.user = body.get("user") or "daytona"
        self.auto_stop = body.get("autoStopInterval")
        self.auto_delete = body.get("autoDeleteInterval")
        self.auto_archive = body.get("autoArchiveInterval")
        self.public = bool(body.get("public", False))
        self.network_block_all = bool(body.get("networkBlockAll", False))
        self.cpu = body.get("cpu") or 1
        self.gpu = body.get("gpu") or 0
        self.memory = body.get("memory") or 1
        self.disk = body.get("disk") or 3
        self.knob = self.image if self.build_info is not None else (self.snapshot or DEFAULT_SNAPSHOT)
        self.state = "pending_build" if self.build_info is not None else "creating"
        self.error_reason = None
        self.history = [self.state]  # every state it has been in, in order
        self.polls = 0
        self.created = now_iso()
        self.updated = self.created
        self.destroyed = False
        self.groups = set()  # process group ids of its running commands
        self.root = os.path.join(root_dir, self.id)

    def poll(self):
        """One GET: move along the state machine (see the module's docstring)."""
        if self.state in ("error", "build_failed", "destroying", "destroyed", "started"):
            return
        self.polls += 1
        n = self.polls
        build = self.build_info is not None
        if self.knob == "fake-error":
            self.state, self.error_reason = "error", FAKE_ERROR_REASON
        elif self.knob == "fake-error-key":
            # A server that echoes the caller's key in its reason (cordon must mask it).
            self.state, self.error_reason = "error", "quota for key %s exceeded" % self.key
        elif self.knob == "fake-build-failed" and build:
            if n == 1:
                self.state = "building_snapshot"
            else:
                self.state, self.error_reason = "build_failed", FAKE_BUILD_REASON
        elif self.knob == "fake-never":
            self.state = "building_snapshot" if build else "starting"
        else:
            needed = 20 if self.knob == "fake-slow" else 2
            if n >= needed:
                self.state = "started"
            else:
                self.state = "building_snapshot" if build else "starting"
        self.updated = now_iso()
        if self.state != self.history[-1]:
            self.history.append(self.state)

    def dto(self, toolbox_url, listing=False):
        d = {
            "id": self.id,
            "organizationId": ORGANIZATION,
            "name": self.name,
            "user": self.user,
            "env": self.env,
            "labels": self.labels,
            "public": self.public,
            "networkBlockAll": self.network_block_all,
            "target": self.target,
            "cpu": self.cpu,
            "gpu": self.gpu,
            "memory": self.memory,
            "disk": self.disk,
            "state": self.state,
            "desiredState": "destroyed" if self.destroyed else "started",
            "recoverable": False,
            "autoStopInterval": 15 if self.auto_stop is None else self.auto_stop,
            "autoArchiveInterval": 10080 if self.auto_archive is None else self.auto_archive,
            "autoDeleteInterval": -1 if self.auto_delete is None else self.auto_delete,
            "createdAt": self.created,
            "updatedAt": self.updated,
            "sandboxClass": "container",
            "daemonVersion": "0.205.1-fake",
            "toolboxProxyUrl": toolbox_url,
        }
        if self.build_info is None:
            d["snapshot"] = self.snapshot or DEFAULT_SNAPSHOT
        elif not listing:
            d["buildInfo"] = {
                "dockerfileContent": self.build_info.get("dockerfileContent", ""),
                "createdAt": self.created,
                "updatedAt": self.updated,
                "snapshotRef": "fake-build-" + self.id[:8],
            }
        if self.error_reason is not None:
            d["errorReason"] = self.error_reason
        if listing:
            del d["env"]  # SandboxListItem has no env
        return d

    def summary(self):
        return {
            "id": self.id,
            "name": self.name,
            "state": self.state,
            "labels": self.labels,
            "snapshot": self.snapshot,
            "image": self.image,
            "target": self.target,
            "env": self.env,
            "autoStopInterval": self.auto_stop,
            "autoDeleteInterval": self.auto_delete,
            "cpu": self.cpu if self.build_info is not None else None,
            "memory": self.memory if self.build_info is not None else None,
            "disk": self.disk if self.build_info is not None else None,
            "errorReason": self.error_reason,
            "polls": self.polls,
            "history": self.history,
            "running": len(self.groups),
        }


class Fault:
    def __init__(self, spec):
        if not isinstance(spec, dict):
            raise ValueError("a fault is an object")
        unknown = set(spec) - {"method", "path", "status", "times", "delay", "retry_after", "drop", "message"}
        if unknown:
            raise ValueError("unknown fault keys: " + ", ".join(sorted(unknown)))
        self.method = spec.get("method")
        if self.method is not None:
            self.method = str(self.method).upper()
        self.path_src = spec.get("path", ".*")
        self.path = re.compile(self.path_src)
        self.status = spec.get("status")
        if self.status is not None and (not isinstance(self.status, int) or not 100 <= self.status <= 599):
            raise ValueError("status must be an HTTP status code")
        self.times = spec.get("times", 1)
        if not isinstance(self.times, int) or self.times < 1:
            raise ValueError("times must be an integer >= 1")
        self.delay = float(spec.get("delay", 0))
        self.retry_after = spec.get("retry_after")
        self.drop = bool(spec.get("drop", False))
        self.message = spec.get("message")
        if self.status is None and not self.drop and not self.delay:
            raise ValueError("a fault needs status, drop or delay")

    def matches(self, method, path):
        return (self.method is None or self.method == method) and self.path.search(path) is not None

    def describe(self):
        return {
            "method": self.method,
            "path": self.path_src,
            "status": self.status,
            "times": self.times,
            "delay": self.delay,
            "retry_after": self.retry_after,
            "drop": self.drop,
        }


class Fake:
    def __init__(self, key, root, toolbox_url):
        self.key = key
        self.root = os.path.realpath(root)
        self.default_toolbox_url = toolbox_url
        self.lock = threading.Lock()
        self.spool_dir = os.path.join(self.root, ".fake")
        os.makedirs(self.spool_dir, mode=0o700, exist_ok=True)
        self.as_nobody = os.geteuid() == 0
        if self.as_nobody:
            # The commands run as nobody and must reach DIR/<id>/ by its absolute path (their
            # HOME, the fake's mkdir/cat/rm): every directory above DIR must let others search
            # it. DIR itself is the fake's to change; those above it are not.
            st = os.stat(self.root)
            os.chmod(self.root, (st.st_mode & 0o7777) | 0o111)
            d = os.path.dirname(self.root)
            while True:
                if not os.stat(d).st_mode & 0o001:
                    raise SystemExit(f"daytona_fake: {d} is not searchable by others: the commands, run as "
                                     f"nobody, could not reach {self.root} (chmod o+x {d})")
                if d == "/":
                    break
                d = os.path.dirname(d)
        self.reset_locked()

    def reset_locked(self):
        self.sandboxes = {}
        self.faults = []
        self.requests = deque(maxlen=REQUEST_LOG)
        self.seq = 0
        self.toolbox_url = self.default_toolbox_url
        self.result_first = True
        self.exit_key = "exitCode"

    def reset(self):
        with self.lock:
            boxes = list(self.sandboxes.values())
            self.reset_locked()
        for sb in boxes:
            self.kill_commands(sb)
            shutil.rmtree(sb.root, ignore_errors=True)

    def find(self, id_or_name):
        """A sandbox that is not destroyed, by id or name (lock held)."""
        sb = self.sandboxes.get(id_or_name)
        if sb is None:
            for s in self.sandboxes.values():
                if s.name == id_or_name and not s.destroyed:
                    sb = s
                    break
        if sb is None or sb.destroyed:
            raise ApiError(404, f"Sandbox with ID or name {id_or_name} not found")
        return sb

    def kill_commands(self, sb):
        """SIGKILL to each running command's group, then wait (5 s at most) until the threads
        that ran them have seen them end: a DELETE or a reset answers once they are gone."""
        with self.lock:
            groups = list(sb.groups)
        for pgid in groups:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        end = time.monotonic() + 5
        while time.monotonic() < end:
            with self.lock:
                if not sb.groups:
                    return
            time.sleep(0.01)

    def kill_all(self):
        with self.lock:
            boxes = list(self.sandboxes.values())
        for sb in boxes:
            self.kill_commands(sb)

    def fs_run(self, argv, stdin=None, stdout=None):
        """argv (mkdir, cat, rm) with the commands' privileges: nobody when the fake is root.
        The sandbox's files are its commands' own, and a command could swap a checked path for
        a symlink before the fake uses it: done as nobody, that reaches no further than the
        command itself could. Returns (exit code, stderr's last line)."""
        kw = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if self.as_nobody else {}
        p = subprocess.run(argv, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                           stdout=stdout if stdout is not None else subprocess.DEVNULL, stderr=subprocess.PIPE,
                           env={"PATH": BASE_PATH, "LC_ALL": "C"}, close_fds=True, **kw)
        lines = p.stderr.decode("utf-8", "replace").strip().splitlines()
        return p.returncode, (lines[-1] if lines else "")

    def take_fault(self, method, path):
        with self.lock:
            for f in self.faults:
                if f.times > 0 and f.matches(method, path):
                    f.times -= 1
                    return f
        return None

    def state(self):
        with self.lock:
            boxes = [s.summary() for s in self.sandboxes.values()]
            return {
                "sandboxes": boxes,
                "live": sum(1 for s in self.sandboxes.values() if not s.destroyed),
                "requests": list(self.requests),
                "faults": [f.describe() for f in self.faults if f.times > 0],
                "toolbox_url": self.toolbox_url,
            }


# --- Paths ----------------------------------------------------------------------------------------


def sandbox_path(sb, path, what="path"):
    """The host path for an absolute sandbox path, inside sb.root, or ApiError 400."""
    if not isinstance(path, str) or not path:
        raise ApiError(400, f"{what} is required")
    if "\0" in path:
        raise ApiError(400, f"{what} contains a NUL byte")
    if not path.startswith("/"):
        raise ApiError(400, f"{what} must be absolute: {path}")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ApiError(400, f"{what} escapes the sandbox: {path}")
    root = os.path.realpath(sb.root)
    real = os.path.realpath(os.path.join(root, *parts))
    if real != root and not real.startswith(root + "/"):
        raise ApiError(400, f"{what} escapes the sandbox through a symlink: {path}")
    return real


def make_dirs(sb, host, mode, as_nobody):
    """mkdir -p inside sb.root, as the fake's user, so only when the sandbox is made (no command
    of its can race it then); the new directories belong to nobody when commands run as it."""
    root = os.path.realpath(sb.root)
    rel = os.path.relpath(host, root)
    cur = root
    if rel == ".":
        return
    for part in rel.split("/"):
        cur = os.path.join(cur, part)
        try:
            os.mkdir(cur, mode)
        except FileExistsError:
            if os.path.islink(cur) or not os.path.isdir(cur):
                raise ApiError(400, f"not a directory: {cur[len(root):]}")
            continue
        os.chmod(cur, mode)
        if as_nobody:
            os.chown(cur, NOBODY, NOBODY)


# --- HTTP -----------------------------------------------------------------------------------------


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "daytona-fake/1"
    fake = None  # set by main()

    def log_message(self, fmt, *args):
        sys.stderr.write("daytona-fake: %s\n" % (fmt % args))

    # Every method goes through one door.
    def do_GET(self):
        self.handle_any()

    do_POST = do_DELETE = do_PUT = do_PATCH = do_HEAD = do_OPTIONS = do_GET

    def handle_any(self):
        self.body_file = None
        try:
            self.dispatch()
        except Dropped:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            if self.body_file is not None:
                self.body_file.close()

    # --- request body ---

    def read_body(self):
        """The request body (Content-Length or chunked): bytes when small, else a temp file.
        Always read whole, so that an early answer leaves the connection usable."""
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        chunks = []
        size = 0
        spill = None

        def add(data):
            nonlocal size, spill
            size += len(data)
            if spill is None and size > MEMORY_BODY:
                spill = tempfile.TemporaryFile(dir=self.fake.spool_dir)
                for c in chunks:
                    spill.write(c)
                chunks.clear()
            if spill is not None:
                spill.write(data)
            else:
                chunks.append(data)

        if "chunked" in te:
            while True:
                line = self.rfile.readline(1024)
                if not line:
                    raise Dropped()
                try:
                    n = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    raise ApiError(400, "bad chunked encoding")
                if n == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                left = n
                while left:
                    data = self.rfile.read(min(left, SPOOL_CHUNK))
                    if not data:
                        raise Dropped()
                    add(data)
                    left -= len(data)
                self.rfile.readline(16)
        else:
            try:
                left = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                raise ApiError(400, "bad Content-Length")
            while left > 0:
                data = self.rfile.read(min(left, SPOOL_CHUNK))
                if not data:
                    raise Dropped()
                add(data)
                left -= len(data)
        if spill is not None:
            spill.flush()
            spill.seek(0)
            self.body_file = spill
            return None
        return b"".join(chunks)

    def body_json(self):
        if self.body is None:
            raise ApiError(400, "request body too large for JSON")
        try:
            v = json.loads(self.body or b"null")
        except ValueError:
            raise ApiError(400, "request body is not JSON")
        return v

    # --- answers ---

    def send_json(self, status, obj, extra_headers=()):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra_headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.status = status

    def send_empty(self, status):
        self.send_response(status)
        if status not in (204, 304):
            self.send_header("Content-Length", "0")
        self.end_headers()
        self.status = status

    def send_error_json(self, status, message, code=None, extra_headers=()):
        path = self.path_only
        if path.startswith("/toolbox/"):
            # The daemon's ErrorResponse; it sees the path without the proxy's prefix.
            m = re.match(r"^/toolbox/[^/]+(/.*)?$", path)
            body = {
                "message": message,
                "path": (m.group(1) if m and m.group(1) else "/"),
                "statusCode": status,
                "timestamp": now_iso(),
                "method": self.command,
                "source": "DAYTONA_DAEMON",
            }
            if code:
                body["code"] = code
        else:
            # The API's exception filter: {"path","timestamp","statusCode","error","message"}.
            body = {
                "path": "/api" + path,
                "timestamp": now_iso(),
                "statusCode": status,
                "error": status_phrase(status),
                "message": message,
            }
        self.send_json(status, body, extra_headers)

    # --- dispatch ---

    def dispatch(self):
        fake = self.fake
        url = urllib.parse.urlsplit(self.path)
        self.path_only = url.path
        self.query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        self.status = None
        try:
            self.body = self.read_body()
        except ApiError as e:
            self.close_connection = True
            self.send_error_json(e.status, e.message)
            return
        if url.path.startswith("/_fake/"):
            return self.control(url.path)
        entry = {
            "method": self.command,
            "path": url.path,
            "query": self.query,
            "headers": dict(self.headers.items()),
            "json": None,
        }
        if self.body:
            try:
                entry["json"] = json.loads(self.body)
            except ValueError:
                pass
        with fake.lock:
            fake.seq += 1
            entry["seq"] = fake.seq
            fake.requests.append(entry)
        try:
            f = fake.take_fault(self.command, url.path)
            if f is not None:
                entry["fault"] = "drop" if f.drop else f.status
                if f.delay:
                    time.sleep(f.delay)
                if f.drop:
                    raise Dropped()
                if f.status is not None:
                    headers = []
                    if f.retry_after is not None:
                        headers.append(("Retry-After", str(f.retry_after)))
                    self.send_error_json(f.status, f.message or f"fake fault: {f.status}", extra_headers=headers)
                    return
            auth = self.headers.get("Authorization") or ""
            if auth != "Bearer " + fake.key:
                raise ApiError(401, "Invalid credentials" if auth else "No authorization header")
            self.route(url.path)
        except ApiError as e:
            self.send_error_json(e.status, e.message, e.code)
        except (Dropped, BrokenPipeError, ConnectionResetError):
            raise
        except Exception as e:  # a bug in the fake: say so, as a 500
            traceback.print_exc()
            self.send_error_json(500, f"fake: {type(e).__name__}: {e}")
        finally:
            entry["status"] = self.status

    def route(self, path):
        m = self.command
        parts = path.split("/")[1:]
        if parts[:1] == ["sandbox"]:
            if len(parts) == 1 and m == "POST":
                return self.create()
            if len(parts) == 1 and m == "GET":
                return self.list()
            if len(parts) == 2 and parts[1] and m == "GET":
                return self.get(urllib.parse.unquote(parts[1]))
            if len(parts) == 2 and parts[1] and m == "DELETE":
                return self.delete(urllib.parse.unquote(parts[1]))
            if len(parts) == 3 and parts[2] == "toolbox-proxy-url" and m == "GET":
                with self.fake.lock:
                    self.fake.find(urllib.parse.unquote(parts[1]))
                    url = self.fake.toolbox_url
                return self.send_json(200, {"url": url})
        elif parts[:1] == ["toolbox"] and len(parts) >= 3:
            sid = urllib.parse.unquote(parts[1])
            rest = "/".join(parts[2:])
            with self.fake.lock:
                sb = self.fake.find(sid)
                if sb.state != "started":
                    raise ApiError(409, f"sandbox {sid} is not started (state {sb.state})")
            if rest == "process/execute" and m == "POST":
                return self.execute(sb)
            if rest == "files/folder" and m == "POST":
                return self.folder(sb)
            if rest == "files/upload-v2" and m == "POST":
                return self.upload(sb)
            if rest == "files/download" and m == "GET":
                return self.download(sb)
            if rest == "files" and m == "DELETE":
                return self.delete_file(sb)
        raise ApiError(404, f"Cannot {m} {path}")

    # --- control plane ---

    def create(self):
        body = self.body_json()
        if not isinstance(body, dict):
            raise ApiError(400, "request body must be a CreateSandbox object")
        for k in ("labels", "env"):
            v = body.get(k)
            if v is not None and (not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values())):
                raise ApiError(400, f"{k} must be an object of strings")
        build = body.get("buildInfo")
        image = None
        if build is not None:
            if body.get("snapshot"):
                raise ApiError(400, "Cannot specify both a snapshot and a build info")
            dockerfile = build.get("dockerfileContent") if isinstance(build, dict) else None
            m = re.match(r"\s*FROM\s+(\S+)", dockerfile or "", re.IGNORECASE)
            if not m:
                raise ApiError(400, "buildInfo.dockerfileContent needs a FROM line")
            image = m.group(1)
        elif any(body.get(k) for k in RESOURCE_KEYS):
            # As the real server: resources only with an image (buildInfo); a snapshot,
            # named or the default one, brings its own.
            raise ApiError(400, "Cannot specify Sandbox resources when using a snapshot")
        fake = self.fake
        sb = Sandbox(fake.root, body, image)
        sb.key = fake.key
        with fake.lock:
            for s in fake.sandboxes.values():
                if s.name == sb.name and not s.destroyed:
                    raise ApiError(409, f"Sandbox with name {sb.name} already exists")
            fake.sandboxes[sb.id] = sb
        os.mkdir(sb.root, 0o755)
        if fake.as_nobody:
            os.chown(sb.root, NOBODY, NOBODY)
        for d in ("home/daytona", "tmp"):
            make_dirs(sb, os.path.join(sb.root, d), 0o755, fake.as_nobody)
        with fake.lock:
            dto = sb.dto(fake.toolbox_url)
        self.send_json(200, dto)

    def list(self):
        want = {}
        if self.query.get("labels"):
            try:
                want = json.loads(self.query["labels"])
            except ValueError:
                raise ApiError(400, "labels must be JSON")
            if not isinstance(want, dict):
                raise ApiError(400, "labels must be a JSON object")
        with self.fake.lock:
            items = [
                s.dto(self.fake.toolbox_url, listing=True)
                for s in self.fake.sandboxes.values()
                if not s.destroyed and all(s.labels.get(k) == v for k, v in want.items())
            ]
        self.send_json(200, {"items": items, "nextCursor": None})

    def get(self, id_or_name):
        with self.fake.lock:
            sb = self.fake.find(id_or_name)
            sb.poll()
            dto = sb.dto(self.fake.toolbox_url)
        self.send_json(200, dto)

    def delete(self, id_or_name):
        with self.fake.lock:
            sb = self.fake.find(id_or_name)
            sb.destroyed = True
            sb.state = "destroying"
            sb.history.append(sb.state)
            sb.updated = now_iso()
            dto = sb.dto(self.fake.toolbox_url)
        self.fake.kill_commands(sb)
        shutil.rmtree(sb.root, ignore_errors=True)
        self.send_json(200, dto)

    # --- toolbox ---

    def execute(self, sb):
        req = self.body_json()
        if not isinstance(req, dict):
            raise ApiError(400, "invalid request body", "INVALID_REQUEST_BODY")
        command = req.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ApiError(400, "command is required", "BAD_REQUEST")
        envs = req.get("envs") or {}
        if not isinstance(envs, dict):
            raise ApiError(400, "envs must be an object", "INVALID_REQUEST_BODY")
        for k, v in envs.items():
            if not k or "=" in k or "\0" in k or not isinstance(v, str) or "\0" in v:
                raise ApiError(400, f"invalid environment variable: {k!r}", "BAD_REQUEST")
        timeout = req.get("timeout")
        if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool)):
            raise ApiError(400, "timeout must be an integer", "INVALID_REQUEST_BODY")
        cwd = req.get("cwd") or "/home/daytona"
        host_cwd = sandbox_path(sb, cwd, "cwd")
        if not os.path.isdir(host_cwd):
            raise ApiError(400, f"cwd {cwd} does not exist: chdir {cwd}: no such file or directory", "BAD_REQUEST")
        env = {"PATH": BASE_PATH, "HOME": os.path.join(sb.root, "home/daytona"), "USER": sb.user}
        env.update(sb.env)
        env.update(envs)
        if "cordon-fake-drip" in command:
            return self.drip()
        code, spool = self.run_command(sb, command, host_cwd, env, timeout if timeout and timeout > 0 else None)
        with spool:
            if code is None:
                return self.send_error_json(
                    408, "command execution timeout", "PROCESS_EXECUTION_TIMEOUT"
                )
            self.stream_result(code, spool)

    def run_command(self, sb, command, cwd, env, timeout):
        """sh -c COMMAND in its own process group, stdout and stderr into one spool file (not
        memory: outputs may be 1 GB). Returns (exit code, spool) or (None, spool) on timeout. A
        signal gives -1, as Go's ExitCode() does. Killed by DELETE: the connection is dropped."""
        fake = self.fake
        spool = tempfile.TemporaryFile(dir=fake.spool_dir)
        kw = {}
        if fake.as_nobody:
            kw = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
        try:
            proc = subprocess.Popen(
                ["/bin/sh", "-c", command],
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=spool,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                **kw,
            )
        except OSError as e:
            spool.close()
            raise ApiError(400, f"cannot start the command: {e.strerror}", "BAD_REQUEST")
        with fake.lock:
            sb.groups.add(proc.pid)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        finally:
            # What the command left behind in its group goes with it (the real daemon would
            # wait for them when they hold the output pipe; a spool file has no such end).
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            with fake.lock:
                sb.groups.discard(proc.pid)
                destroyed = sb.destroyed
        if destroyed:
            spool.close()
            raise Dropped()
        spool.seek(0)
        if timed_out:
            return None, spool
        rc = proc.returncode
        return (rc if rc >= 0 else -1), spool

    def drip(self):
        """Knob: the command "cordon-fake-drip" gets a 200's headers at once, then its body a
        byte at a time, every 0.2 s, for up to two minutes: a server whose answer never ends
        (cordon must still end the run at its deadline)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.status = 200
        self.wfile.write(b'1\r\n{\r\n')
        self.wfile.flush()
        for _ in range(600):
            time.sleep(0.2)
            self.wfile.write(b'1\r\n \r\n')
            self.wfile.flush()
        raise Dropped()

    def stream_result(self, code, spool):
        """200 ExecuteResponse, chunked, the output JSON-escaped as it is read from the spool:
        memory stays bounded whatever the size."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.status = 200
        w = self.wfile

        def chunk(data):
            if data:
                w.write(b"%x\r\n%s\r\n" % (len(data), data))

        exit_part = b'"%s":%d' % (self.fake.exit_key.encode(), code)
        if self.fake.result_first:
            chunk(b'{"result":"')
        else:
            chunk(b"{" + exit_part + b',"result":"')
        enc = GoJsonString()
        while True:
            data = spool.read(SPOOL_CHUNK)
            if not data:
                break
            chunk(enc.feed(data))
        chunk(enc.feed(b"", final=True))
        chunk(b'",' + exit_part + b"}" if self.fake.result_first else b'"}')
        w.write(b"0\r\n\r\n")
        w.flush()

    def folder(self, sb):
        host = sandbox_path(sb, self.query.get("path"))
        mode_s = self.query.get("mode", "")
        if not re.fullmatch(r"0?[0-7]{3,4}", mode_s):
            raise ApiError(400, f"invalid mode: {mode_s!r}", "BAD_REQUEST")
        rc, err = self.fake.fs_run(["mkdir", "-p", "-m", "%o" % (int(mode_s, 8) & 0o7777), "--", host])
        if rc:
            raise ApiError(400, self.sandbox_msg(sb, err), "BAD_REQUEST")
        self.send_empty(201)

    def sandbox_msg(self, sb, text):
        return text.replace(os.path.realpath(sb.root), "")

    def upload(self, sb):
        path = self.query.get("path")
        host = sandbox_path(sb, path)
        if os.path.isdir(host):
            raise ApiError(400, f"{path} is a directory", "BAD_REQUEST")
        ctype = self.headers.get("Content-Type") or ""
        src = self.body_file
        if src is None:
            src = tempfile.TemporaryFile(dir=self.fake.spool_dir)
            src.write(self.body or b"")
            src.seek(0)
            self.body_file = src
        if ctype.lower().startswith("multipart/form-data"):
            with tempfile.TemporaryFile(dir=self.fake.spool_dir) as part:
                self.copy_multipart(src, ctype, part)
                part.seek(0)
                self.write_file(sb, host, part)
        else:
            self.write_file(sb, host, src)
        self.send_json(200, {"name": os.path.basename(host), "path": path, "type": "file"})

    def write_file(self, sb, host, src):
        """host's parents made and its content replaced by src's, as the commands' user."""
        rc, err = self.fake.fs_run(["sh", "-c", 'mkdir -p -- "$(dirname -- "$1")" && cat >"$1"', "sh", host], stdin=src)
        if rc:
            raise ApiError(400, self.sandbox_msg(sb, err), "BAD_REQUEST")

    def copy_multipart(self, src, ctype, out):
        """The content of the part named "file" of the multipart body in src, into out."""
        m = re.search(r'boundary="?([^";]+)"?', ctype)
        if not m:
            raise ApiError(400, "multipart body without a boundary", "BAD_REQUEST")
        delim = b"--" + m.group(1).encode()
        size = os.fstat(src.fileno()).st_size
        if size == 0:
            raise ApiError(400, "empty multipart body", "BAD_REQUEST")
        with mmap.mmap(src.fileno(), size, access=mmap.ACCESS_READ) as data:
            pos = data.find(delim)
            while pos >= 0:
                pos += len(delim)
                if data[pos : pos + 2] == b"--":
                    break
                head_end = data.find(b"\r\n\r\n", pos)
                if head_end < 0:
                    break
                headers = data[pos:head_end].decode("utf-8", "replace")
                start = head_end + 4
                end = data.find(b"\r\n" + delim, start)
                if end < 0:
                    raise ApiError(400, "unterminated multipart part", "BAD_REQUEST")
                name = re.search(r'(?im)^content-disposition:.*?\bname="([^"]*)"', headers)
                if name and name.group(1) == "file":
                    for off in range(start, end, SPOOL_CHUNK):
                        out.write(data[off : min(off + SPOOL_CHUNK, end)])
                    return
                pos = end + 2
        raise ApiError(400, 'no multipart field "file"', "BAD_REQUEST")

    def download(self, sb):
        path = self.query.get("path")
        host = sandbox_path(sb, path)
        if not os.path.lexists(host):
            raise ApiError(404, f"file not found: {path}", "FILE_NOT_FOUND")
        if os.path.isdir(host):
            raise ApiError(400, f"{path} is a directory", "BAD_REQUEST")
        with tempfile.TemporaryFile(dir=self.fake.spool_dir) as f:
            rc, err = self.fake.fs_run(["cat", "--", host], stdout=f)
            if rc:
                raise ApiError(403, self.sandbox_msg(sb, err), "FILE_ACCESS_DENIED")
            size = f.tell()
            f.seek(0)
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Disposition", 'attachment; filename="%s"' % os.path.basename(host))
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.status = 200
            shutil.copyfileobj(f, self.wfile, SPOOL_CHUNK)

    def delete_file(self, sb):
        path = self.query.get("path")
        host = sandbox_path(sb, path)
        if host == os.path.realpath(sb.root):
            raise ApiError(400, "refusing to delete /", "BAD_REQUEST")
        if not os.path.lexists(host):
            raise ApiError(404, f"file not found: {path}", "FILE_NOT_FOUND")
        recursive = self.query.get("recursive") == "true"
        if os.path.isdir(host) and not os.path.islink(host) and not recursive:
            raise ApiError(400, f"{path} is a directory: set recursive=true", "BAD_REQUEST")
        rc, err = self.fake.fs_run(["rm", "-rf" if recursive else "-f", "--", host])
        if rc:
            raise ApiError(403, self.sandbox_msg(sb, err), "FILE_ACCESS_DENIED")
        self.send_empty(204)

    # --- test control ---

    def control(self, path):
        fake = self.fake
        try:
            if path == "/_fake/state" and self.command == "GET":
                return self.send_json(200, fake.state())
            if path == "/_fake/reset" and self.command == "POST":
                fake.reset()
                return self.send_empty(204)
            if path == "/_fake/faults" and self.command == "POST":
                specs = self.body_json()
                if isinstance(specs, dict):
                    specs = [specs]
                if not isinstance(specs, list):
                    raise ApiError(400, "faults: a list of objects")
                try:
                    faults = [Fault(s) for s in specs]
                except (ValueError, re.error, TypeError) as e:
                    raise ApiError(400, f"faults: {e}")
                with fake.lock:
                    fake.faults.extend(faults)
                return self.send_empty(204)
            if path == "/_fake/config" and self.command == "POST":
                cfg = self.body_json()
                keys = {"toolbox_url", "default", "execute_result_first", "execute_exit_key"}
                if not isinstance(cfg, dict) or set(cfg) - keys:
                    raise ApiError(400, "config: " + ", ".join(sorted(keys)))
                with fake.lock:
                    if "toolbox_url" in cfg:
                        fake.toolbox_url = str(cfg["toolbox_url"])
                        if cfg.get("default"):
                            fake.default_toolbox_url = fake.toolbox_url
                    if "execute_result_first" in cfg:
                        fake.result_first = bool(cfg["execute_result_first"])
                    if "execute_exit_key" in cfg:
                        if cfg["execute_exit_key"] not in ("exitCode", "code"):
                            raise ApiError(400, "execute_exit_key: exitCode or code")
                        fake.exit_key = cfg["execute_exit_key"]
                return self.send_empty(204)
            if path == "/_fake/created" and self.command == "POST":
                # A sandbox made long ago (cordon gc's earlier-boot rule reads createdAt).
                req = self.body_json()
                if not isinstance(req, dict) or not isinstance(req.get("createdAt"), str):
                    raise ApiError(400, "created: {\"id\", \"createdAt\"}")
                with fake.lock:
                    sb = fake.find(str(req.get("id")))
                    sb.created = req["createdAt"]
                return self.send_empty(204)
            raise ApiError(404, f"no control endpoint {self.command} {path}")
        except ApiError as e:
            self.send_error_json(e.status, e.message)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


def main(argv):
    ap = argparse.ArgumentParser(description="Stateful fake of Daytona's API and toolbox, for tests.")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--key", required=True)
    ap.add_argument("--root", required=True, help="directory the sandboxes' files live under")
    ap.add_argument("--toolbox-url", required=True, help="toolboxProxyUrl given in every Sandbox")
    ap.add_argument("--port-file", help="written with the port once the server listens")
    args = ap.parse_args(argv[1:])
    if not os.path.isdir(args.root):
        ap.error(f"--root {args.root}: not a directory")

    fake = Fake(args.key, args.root, args.toolbox_url)
    Handler.fake = fake
    server = Server(("127.0.0.1", args.port), Handler)

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % server.server_address[1])
        os.replace(tmp, args.port_file)
    try:
        server.serve_forever(poll_interval=0.2)
    except SystemExit:
        pass
    finally:
        fake.kill_all()
        server.server_close()
        shutil.rmtree(fake.spool_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
