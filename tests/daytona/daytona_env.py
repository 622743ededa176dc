# SPDX-License-Identifier: MIT
"""Shared by the Daytona suites (tests/daytona/test_*.py): the environment tests/daytona/run.sh
builds, a small HTTP client (http.client: every status comes back, none raises), and the fake's
control endpoints. Python 3 standard library only."""

import http.client
import json
import os
import sys
import time
import unittest
import urllib.parse

_NAMES = ("API", "TOOLBOX", "FAKE", "MOCK_API", "MOCK_TOOLBOX", "KEY")
_missing = [n for n in _NAMES if not os.environ.get("CORDON_TEST_DAYTONA_" + n)]
if _missing:
    sys.stderr.write(
        "these tests run inside tests/daytona/run.sh BUILD_DIR, which starts the fake and Prism "
        "(missing: %s)\n" % ", ".join("CORDON_TEST_DAYTONA_" + n for n in _missing)
    )
    sys.exit(2)

API = os.environ["CORDON_TEST_DAYTONA_API"]  # prism proxy --errors (api.json) -> fake
TOOLBOX = os.environ["CORDON_TEST_DAYTONA_TOOLBOX"]  # prism proxy --errors (toolbox.json), .../toolbox
FAKE = os.environ["CORDON_TEST_DAYTONA_FAKE"]  # the fake, directly
MOCK_API = os.environ["CORDON_TEST_DAYTONA_MOCK_API"]
MOCK_TOOLBOX = os.environ["CORDON_TEST_DAYTONA_MOCK_TOOLBOX"]
KEY = os.environ["CORDON_TEST_DAYTONA_KEY"]
REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CORDON = os.environ.get("CORDON_BIN") or os.path.join(REPO, "build", "cordon")


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body

    def json(self):
        return json.loads(self.body)

    def violations(self):
        """Prism's findings on this exchange (its sl-violations header), as a list."""
        v = self.headers.get("sl-violations")
        return json.loads(v) if v else []

    def errors(self):
        return [v for v in self.violations() if v.get("severity") == "Error"]

    def __repr__(self):
        return "<%d %s>" % (self.status, self.body[:300])


def request(base, method, path, body=None, raw=None, headers=None, key=KEY, timeout=60):
    """One request to base+path. body: JSON-encoded; raw: bytes as they are. key=None: no
    Authorization header."""
    u = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    h = {}
    if key is not None:
        h["Authorization"] = "Bearer " + key
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    elif raw is not None:
        data = raw
    h.update(headers or {})
    try:
        conn.request(method, u.path.rstrip("/") + path, body=data, headers=h)
        r = conn.getresponse()
        return Response(r.status, r.getheaders(), r.read())
    finally:
        conn.close()


# --- the fake's control endpoints ----------------------------------------------------------------


def fake_reset():
    r = request(FAKE, "POST", "/_fake/reset", key=None)
    assert r.status == 204, r


def fake_state():
    r = request(FAKE, "GET", "/_fake/state", key=None)
    assert r.status == 200, r
    return r.json()


def fake_faults(*faults):
    r = request(FAKE, "POST", "/_fake/faults", body=list(faults), key=None)
    assert r.status == 204, r


def fake_config(**cfg):
    r = request(FAKE, "POST", "/_fake/config", body=cfg, key=None)
    assert r.status == 204, r


def fake_requests(method=None, path_re=None):
    """The requests the fake saw (the control endpoints excluded), oldest first."""
    import re

    out = []
    for q in fake_state()["requests"]:
        if method and q["method"] != method:
            continue
        if path_re and not re.search(path_re, q["path"]):
            continue
        out.append(q)
    return out


def processes_with(marker):
    """pids of the fake's commands (sh -c ..., or a command started as marker...) whose
    command line contains marker: to find commands that outlive what should have killed them.
    Not cordon's own process, whose arguments hold the command too."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if marker in cmd and (cmd.startswith(marker) or cmd.startswith("/bin/sh -c ")) and str(os.getpid()) != d:
            pids.append(int(d))
    return pids


def wait_until(pred, timeout, step=0.05):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= end:
            return v
        time.sleep(step)


def main():
    unittest.main(verbosity=2)
