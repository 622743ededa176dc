"""HTTP/1.1 + JSON over cordond's Unix socket (SPEC section 7), with the standard library only."""

import json
import os
import re
import select
import socket
import struct
import threading
import urllib.parse
import weakref
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

DEFAULT_SOCKET = "/run/cordon/cordon.sock"

# Fields of POST /v1/run the client passes through (cordond rejects anything else with 400).
_RUN_FIELDS = (
    "umask",
    "profile",
    "workdir",
    "env",
    "timeout",
    "max_output",
    "backend",
    "allowed",
    "blocked",
    "ignore",
    "readonly",
    "policy_mode",
    "network",
    "keep",
)


# What every run's answer has (SPEC section 5), and the client reads.
_RESULT_FIELDS = {"output": str, "exit_code": int}


class CordonError(Exception):
    """cordond answered with an error (`status` is the HTTP status), or could not be reached
    (`status` is 0)."""

    def __init__(self, status: int, message: str):
        super().__init__(f"cordond: {message}" + (f" (HTTP {status})" if status else ""))
        self.status = status
        self.message = message


class CordonSessionGone(CordonError):
    """The session is no longer in cordond (404 "id: no such session"): cordond restarted, the
    session expired idle, or it was deleted. Not a missing file: never FileNotFoundError, and
    remove_file(missing_ok=True) does not swallow it."""


class _ProtocolError(ConnectionError):
    """The connection ended, or the answer is not HTTP/1.x, before a whole answer was read."""


class _Answer:
    __slots__ = ("status", "reason", "headers", "body", "close")

    def __init__(self, status: int, reason: str, headers: Dict[str, str], body: bytes, close: bool):
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.close = close


def _digits(text: bytes, base: int) -> int:
    """A Content-Length (decimal) or chunk size (hex): digits only. int() takes a sign, blanks
    and underscores, and a negative length read the answer short and left the rest of it on
    the connection for the next request (found in red team)."""
    allowed = b"0123456789abcdefABCDEF" if base == 16 else b"0123456789"
    if not text or len(text) > 18 or text.strip(allowed):
        raise ValueError(f"bad {'chunk size' if base == 16 else 'Content-Length'}: {text[:20]!r}")
    return int(text, base)


def _has_token(value: str, token: str) -> bool:
    return any(t.strip().lower() == token for t in value.split(","))


class _UnixConnection:
    """One keep-alive HTTP/1.1 connection to cordond's socket.

    Lean on purpose: http.client parses every answer's headers with the email package, which
    took more of the client's time than the rest of a run's round trip (bench/DAEMON.md).
    cordond's answers carry a Content-Length; chunked and close-delimited bodies are read too.
    """

    _MAX_HEAD = 65536

    def __init__(self, path: str, timeout: Optional[float]):
        self._path = path
        self.timeout = timeout
        self.sock: Optional[socket.socket] = None
        self._buf = bytearray()
        # The process the connection belongs to: a child after os.fork() shares the socket
        # with its parent, and answers would go to whichever reads first.
        self.pid = os.getpid()

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if self.timeout is not None:
                s.settimeout(self.timeout)
            s.connect(self._path)
            # Only a cordond of root's (or our own uid's, a daemon run unprivileged) gets the
            # commands, workdirs and environment: CORDON_SOCKET could name a socket another
            # user listens on.
            cred = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            uid = struct.unpack("3i", cred)[1]
            if uid not in (0, os.geteuid()):
                raise CordonError(
                    0,
                    f"the listener at {self._path} is uid {uid}, neither root nor you; "
                    "not sending it anything",
                )
        except BaseException:
            s.close()
            raise
        self.sock = s
        self._buf = bytearray()

    def close(self) -> None:
        s, self.sock = self.sock, None
        self._buf = bytearray()
        if s is not None:
            s.close()

    def __del__(self) -> None:
        # A finished thread's connection (its threading.local is gone): closed here, not left
        # to the socket's ResourceWarning.
        s = getattr(self, "sock", None)
        if s is not None:
            s.close()

    def _more(self) -> bool:
        assert self.sock is not None
        data = self.sock.recv(65536)
        if not data:
            return False
        self._buf += data
        return True

    def _take(self, n: int) -> bytes:
        while len(self._buf) < n:
            if not self._more():
                raise _ProtocolError("the connection ended in the middle of an answer")
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def _line(self) -> bytes:
        while True:
            i = self._buf.find(b"\r\n")
            if i >= 0:
                return self._take(i + 2)[:-2]
            if len(self._buf) > self._MAX_HEAD or not self._more():
                raise _ProtocolError("the connection ended in the middle of an answer")

    def exchange(self, method: str, path: str, body: Optional[bytes],
                 headers: Mapping[str, str]) -> _Answer:
        """Send one request and read its answer. Raises _ProtocolError (nothing read yet:
        got_nothing is set on it) or OSError."""
        if any(c <= " " or c >= "\x7f" for c in path):
            raise ValueError(f"URL can't contain control characters or spaces: {path!r}")
        if self.sock is None:
            self.connect()
        head = [f"{method} {path} HTTP/1.1", "Host: cordond"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        if body is not None or method in ("POST", "PUT"):
            head.append(f"Content-Length: {len(body or b'')}")
        assert self.sock is not None
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b""))
        while True:
            end = self._buf.find(b"\r\n\r\n")
            if end >= 0:
                break
            if len(self._buf) > self._MAX_HEAD:
                raise _ProtocolError("an answer's head is too large")
            got_any = bool(self._buf)
            if not self._more():
                e = _ProtocolError(
                    "the connection ended in the middle of an answer" if got_any
                    else "Remote end closed connection without response")
                e.got_nothing = not got_any  # type: ignore[attr-defined]
                raise e
        lines = self._take(end + 4)[:-4].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise _ProtocolError(f"not an HTTP answer: {lines[0][:80]!r}")
        status, reason = int(parts[1]), parts[2] if len(parts) > 2 else ""
        hdrs: Dict[str, str] = {}
        for line in lines[1:]:
            k, sep, v = line.partition(":")
            if sep:
                hdrs[k.strip().lower()] = v.strip()
        close = _has_token(hdrs.get("connection", ""), "close") or (
            parts[0] == "HTTP/1.0" and not _has_token(hdrs.get("connection", ""), "keep-alive"))
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            data = b""
        elif _has_token(hdrs.get("transfer-encoding", ""), "chunked"):
            chunks = []
            while True:
                size = _digits(self._line().split(b";", 1)[0].rstrip(b" \t"), 16)
                if size == 0:
                    while self._line():  # trailers, up to the empty line
                        pass
                    break
                chunks.append(self._take(size))
                self._take(2)
            data = b"".join(chunks)
        elif "content-length" in hdrs:
            data = self._take(_digits(hdrs["content-length"].encode("latin-1"), 10))
        else:
            while self._more():
                pass
            data, close = bytes(self._buf), True
            self._buf = bytearray()
        return _Answer(status, reason, hdrs, data, close)


_IDEMPOTENT = ("GET", "HEAD", "PUT", "DELETE")


def _peer_closed(sock: socket.socket) -> bool:
    """Has the other end closed this idle connection (EOF waiting), or sent what nobody asked
    for? Either way it is not one to send a request on."""
    try:
        r, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(r)


def _umask() -> int:
    """This process's umask, read without changing it (os.umask would, for every thread).
    Read with one read(2) of the raw bytes: it is read for every run, and the text file
    object's machinery (fstat, isatty, lseek, decoding, a line iterator) took half the time."""
    try:
        fd = os.open("/proc/self/status", os.O_RDONLY | os.O_CLOEXEC)
        try:
            data = os.read(fd, 1 << 16)
        finally:
            os.close(fd)
        i = data.index(b"\nUmask:") + 7
        return int(data[i:data.index(b"\n", i)], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _default_socket() -> str:
    return os.environ.get("CORDON_SOCKET") or DEFAULT_SOCKET


_clients: "weakref.WeakSet[Cordon]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for c in list(_clients):
        c._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Cordon:
    """A client of one cordond socket. Thread-safe: each thread keeps its own connection.
    Fork-safe: a child process never uses a connection its parent opened (it opens its own)."""

    def __init__(self, socket: Optional[str] = None, *, timeout: Optional[float] = None):
        # `timeout` bounds the HTTP exchange; None waits as long as the run takes (the run's own
        # timeout, enforced by cordond, ends it).
        self.socket = socket or _default_socket()
        self.timeout = timeout
        self._local = threading.local()
        # Weakly: a thread's connection lives as long as its thread (its threading.local), so
        # a thread-per-request host does not pile up connections against cordond's
        # per-caller limit; close() closes those still alive.
        self._all: "weakref.WeakSet[_UnixConnection]" = weakref.WeakSet()
        self._all_lock = threading.Lock()
        _clients.add(self)

    def _after_fork(self) -> None:
        # In a child: the lock may have been held by another thread of the parent, and the
        # connections are the parent's (each is closed, unused, when found: _conn).
        self._all_lock = threading.Lock()

    # ---- plumbing ----

    def _conn(self) -> _UnixConnection:
        c = getattr(self._local, "conn", None)
        if c is not None and c.pid != os.getpid():
            # Inherited across fork(): the parent's. Nothing is sent on it; closing the child's
            # copy of the descriptor leaves the parent's connection as it is.
            self._local.conn = None
            with self._all_lock:
                self._all.discard(c)
            c.close()
            c = None
        if c is None:
            c = _UnixConnection(self.socket, self.timeout)
            self._local.conn = c
            with self._all_lock:
                self._all.add(c)
        return c

    def _drop(self) -> None:
        """Close this thread's connection (the next request opens a fresh one)."""
        c = getattr(self._local, "conn", None)
        if c is not None:
            c.close()
            self._local.conn = None
            with self._all_lock:
                self._all.discard(c)

    def close(self) -> None:
        """Close every connection this client opened, in any thread, that is still open (a
        thread that goes on using the client opens a new one)."""
        self._drop()
        with self._all_lock:
            conns = list(self._all)
        for c in conns:
            c.close()

    def __deepcopy__(self, memo: Dict[int, Any]) -> "Cordon":
        # Connections are per thread and cannot be copied; a client is shared, as AG2's
        # environments share theirs (AG2's Agent deep-copies its tools).
        return self

    def __enter__(self) -> "Cordon":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        body: Union[None, bytes, Mapping[str, Any]] = None,
        *,
        raw: bool = False,
    ) -> Any:
        """One request; returns the decoded JSON (or bytes with raw=True). Raises CordonError."""
        if isinstance(body, Mapping):
            data: Optional[bytes] = json.dumps(dict(body)).encode()
            headers = {"Content-Type": "application/json"}
        else:
            data = body
            headers = {"Content-Type": "application/octet-stream"} if body is not None else {}
        if any(c <= " " or c >= "\x7f" for c in path):  # the caller's mistake, not cordond's
            raise ValueError(f"URL can't contain control characters or spaces: {path!r}")
        while True:
            conn = self._conn()
            if conn.sock is not None and _peer_closed(conn.sock):
                # A kept-alive connection the daemon closed meanwhile (its idle timeout): a
                # fresh one, before anything is sent on it.
                self._drop()
                conn = self._conn()
            reused = conn.sock is not None
            try:
                resp = conn.exchange(method, path, data, headers)
                payload = resp.body
                break
            except ConnectionError as e:
                self._drop()
                # A kept-alive connection that ended with no answer at all: one retry on a
                # fresh connection, but only of a request that may be sent twice. A POST (a
                # run, a session) may have been read and served before the connection ended
                # (a cordond that died mid-run): sending it again could run a command twice
                # (found in review), so that is an error the caller sees.
                nothing = not isinstance(e, _ProtocolError) or getattr(e, "got_nothing", False)
                if not (reused and nothing and method in _IDEMPOTENT):
                    raise CordonError(0, f"{self.socket}: {e}") from e
            except OSError as e:
                self._drop()
                raise CordonError(0, f"{self.socket}: {e.strerror or e}") from e
            except ValueError as e:
                # A malformed answer (a bad Content-Length, a bad chunk size): the rest of it
                # may still be coming, so not this connection again; and a CordonError, as
                # every failure of cordond's is.
                self._drop()
                raise CordonError(0, f"{self.socket}: malformed answer: {e}") from e
            except BaseException:
                # Anything else in the middle of the exchange (KeyboardInterrupt, ...): the
                # rest of this answer may still be coming, and the next request on this
                # connection would read it as its own.
                self._drop()
                raise
        if resp.close:
            self._drop()
        if resp.status >= 400:
            try:
                msg = json.loads(payload)["error"]
            except Exception:
                msg = payload.decode("utf-8", "replace").strip() or resp.reason
            raise CordonError(resp.status, msg)
        if raw:
            return payload
        try:
            return json.loads(payload) if payload else None
        except ValueError as e:  # not JSON, or not UTF-8
            raise CordonError(0, f"{self.socket}: malformed answer: {e}") from e

    def _expect(self, answer: Any, fields: Mapping[str, Any]) -> Dict[str, Any]:
        """An answer that must be a JSON object with these fields of these types: anything else
        is a CordonError, as every failure of cordond's, never a KeyError or TypeError from
        deep in the caller (found in red team)."""
        if not isinstance(answer, dict):
            raise CordonError(0, f"{self.socket}: malformed answer: not a JSON object")
        for k, t in fields.items():
            v = answer.get(k)
            if not isinstance(v, t) or (t is int and isinstance(v, bool)):
                raise CordonError(0, f"{self.socket}: malformed answer: no {t.__name__} '{k}'")
        return answer

    # ---- runs ----

    @staticmethod
    def _run_body(command: Union[str, Sequence[str]], kw: Mapping[str, Any]) -> Dict[str, Any]:
        unknown = set(kw) - set(_RUN_FIELDS)
        if unknown:
            raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(unknown))}")
        body: Dict[str, Any] = {}
        if isinstance(command, str):
            body["command"] = command
        else:
            body["argv"] = list(command)
        for k, v in kw.items():
            if v is not None:
                body[k] = v
        # The command's files get this process's umask's modes, as in a direct run.
        body.setdefault("umask", _umask())
        return body

    def run_json(self, command: Union[str, Sequence[str]], **kw: Any) -> Dict[str, Any]:
        """Run `command` (a shell string, or an argv list run without a shell); the full result
        (SPEC section 5) as a dict. Keywords: profile, workdir, env, timeout, max_output,
        backend, allowed, blocked, ignore, readonly, policy_mode, network, keep. With
        backend="docker" or "daytona", cordond runs it in a container or sandbox made for
        this run and removed before it answers; the image is the profile's."""
        return self._expect(self.request("POST", "/v1/run", self._run_body(command, kw)),
                            _RESULT_FIELDS)

    def run(self, command: Union[str, Sequence[str]], **kw: Any) -> str:
        """Run `command`; AG2's result string (stdout+stderr stripped, `[exit code: N]`, ...)."""
        return self.run_json(command, **kw)["output"]

    # ---- the rest of the API ----

    def health(self) -> Dict[str, Any]:
        return self._expect(self.request("GET", "/v1/health"), {})

    def profiles(self) -> List[Dict[str, str]]:
        got = self._expect(self.request("GET", "/v1/profiles"), {"profiles": list})["profiles"]
        if not all(isinstance(p, dict) and isinstance(p.get("name"), str) for p in got):
            raise CordonError(0, f"{self.socket}: malformed answer: a profile without a name")
        return got

    def metrics(self) -> str:
        return self.request("GET", "/metrics", raw=True).decode()

    def session(
        self,
        *,
        profile: Optional[str] = None,
        workdir: Optional[str] = None,
        backend: Optional[str] = None,
        image: Optional[str] = None,
    ) -> "Session":
        """A new session. `image` is for a container backend (cordond refuses what it does not
        serve, with a 400 naming the field). A caller other than root may name only the
        profile's image or one cordond allows (`--docker-image`, `--daytona-image`): any other
        raises CordonError with status 403."""
        fields = (("profile", profile), ("workdir", workdir), ("backend", backend), ("image", image))
        body = {k: v for k, v in fields if v is not None}
        info = self._expect(self.request("POST", "/v1/sessions", body),
                            {"id": str, "workdir": str})
        # The id goes into every later request's path as it is: cordond's are hex.
        if not re.fullmatch(r"[0-9A-Za-z_-]{1,128}", info["id"]):
            raise CordonError(0, f"{self.socket}: malformed answer: session id {info['id'][:40]!r}")
        return Session(self, info)

    def profile_inherits_env(self, name: str) -> bool:
        """Whether profile `name` sets `env_inherit` (following `include`), read from the files
        cordond lists in GET /v1/profiles. Anything unreadable counts as no: the profiles that
        scrub the environment do it on purpose (API keys), so it is never sent by mistake."""
        try:
            paths = {p["name"]: p.get("path", "") for p in self.profiles()}
        except CordonError:
            return False
        seen = set()
        value = False
        # Walk the include chain; a file's own setting wins over what it includes.
        chain = []
        path = paths.get(name, "")
        while path and path not in seen and len(chain) < 16:
            seen.add(path)
            settings = _read_profile(path)
            if settings is None:
                return False
            chain.append(settings)
            inc = settings.get("include") or ""
            # As cordon-profile(5): a value with a '/' or ending in .conf is a path relative to
            # the including file, anything else a name on the profile path.
            if "/" in inc or inc.endswith(".conf"):
                path = os.path.join(os.path.dirname(path), inc)
            else:
                path = paths.get(inc, "") if inc else ""
        for settings in reversed(chain):
            v = settings.get("env_inherit")
            if v is not None:
                value = v.lower() in ("true", "yes", "1", "on")
        return value


def _read_profile(path: str) -> Optional[Dict[str, str]]:
    """`include` ([profile]) and `env_inherit` ([sandbox]) of a profile file, or None."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    out: Dict[str, str] = {}
    section = ""
    for line in lines:
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        key, eq, value = line.partition("=")
        if not eq:
            continue
        key, value = key.strip(), value.strip()
        if (section, key) in (("profile", "include"), ("sandbox", "env_inherit")):
            out[key] = value
    return out


def _quote_path(path: str) -> str:
    if "\0" in path:
        raise ValueError("path contains a NUL byte")
    return urllib.parse.quote(path, safe="/")


class Session:
    """A persistent workdir in cordond: several runs, files that persist between them."""

    def __init__(self, client: Cordon, info: Mapping[str, Any]):
        self.client = client
        self.id: str = info["id"]
        self.workdir: str = info["workdir"]
        self.profile: str = info.get("profile", "default")
        self.backend: str = info.get("backend", "local")
        # The workdir on this host: a local session's is its workdir; a container backend's
        # is the host side cordond names, if any.
        self.host_workdir: Optional[str] = info.get(
            "host_workdir", self.workdir if self.backend == "local" else None
        )
        self.closed = False
        # The process that made it: only that one deletes it unasked (at exit, or when its
        # sandbox is collected), never a child after fork() that exits.
        self.pid = os.getpid()

    def __deepcopy__(self, memo: Dict[int, Any]) -> "Session":
        return self

    def _url(self, suffix: str = "") -> str:
        return f"/v1/sessions/{self.id}{suffix}"

    def _request(self, method: str, suffix: str, body: Any = None, **kw: Any) -> Any:
        try:
            return self.client.request(method, self._url(suffix), body, **kw)
        except CordonError as e:
            # cordond names the session ("id: ...") or the file ("path: ...") in a 404.
            if e.status == 404 and e.message.startswith("id:"):
                raise CordonSessionGone(
                    404,
                    f"session {self.id} is gone (cordond restarted, or the session expired "
                    f"or was deleted): {e.message}",
                ) from e
            raise

    def run_json(self, command: Union[str, Sequence[str]], **kw: Any) -> Dict[str, Any]:
        for k in ("profile", "workdir", "backend"):
            if k in kw:
                raise TypeError(f"{k} is fixed when the session is created")
        return self.client._expect(self._request("POST", "/run", Cordon._run_body(command, kw)),
                                   _RESULT_FIELDS)

    def run(self, command: Union[str, Sequence[str]], **kw: Any) -> str:
        return self.run_json(command, **kw)["output"]

    def put_file(self, path: str, data: Union[bytes, str]) -> None:
        if isinstance(data, str):
            data = data.encode()
        self._request("PUT", "/files/" + _quote_path(path), bytes(data))

    def get_file(self, path: str) -> bytes:
        return self._request("GET", "/files/" + _quote_path(path), raw=True)

    def remove_file(self, path: str, *, missing_ok: bool = True) -> None:
        """Remove a file of the workdir; a missing one is fine with missing_ok. A session that
        is gone raises CordonSessionGone either way."""
        try:
            self._request("DELETE", "/files/" + _quote_path(path))
        except CordonError as e:
            if not (missing_ok and e.status == 404 and not isinstance(e, CordonSessionGone)):
                raise

    def info(self) -> Dict[str, Any]:
        return self._request("GET", "")

    def close(self) -> None:
        """Tear the session down (its temporary workdir is removed). Idempotent."""
        if self.closed:
            return
        try:
            self.client.request("DELETE", self._url())
        except CordonError as e:
            if e.status != 404:
                raise
        self.closed = True

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
