#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Daytona fake itself (tests/fakes/daytona_fake.py), driven through the Prism proxies that
tests/daytona/run.sh starts: each answer it gives must be valid against the trimmed OpenAPI
documents (Prism's proxy turns an invalid one into 500 VIOLATIONS), and a request Prism finds
invalid must never reach it. Run: tests/daytona/run.sh build -- python3 tests/daytona/test_fake.py
"""

import hashlib
import json
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
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daytona_env import (  # noqa: E402
    API,
    FAKE,
    KEY,
    MOCK_API,
    MOCK_TOOLBOX,
    REPO,
    TOOLBOX,
    fake_config,
    fake_faults,
    fake_requests,
    fake_reset,
    fake_state,
    processes_with,
    request,
    wait_until,
)

SDK = {"X-Daytona-SDK-Version": "0.205.0", "X-Daytona-Source": "cordon-tests"}


class FakeCase(unittest.TestCase):
    def setUp(self):
        fake_reset()

    def ok(self, r, status=200):
        """r has the status, and Prism found nothing wrong with the exchange."""
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.errors(), [], r)
        if 200 <= status < 300:
            self.assertEqual(r.violations(), [], r)
        return r

    def create(self, **body):
        r = self.ok(request(API, "POST", "/sandbox", body=body, headers=SDK))
        return r.json()

    def started(self, **body):
        sb = self.create(**body)
        for _ in range(30):
            if self.ok(request(API, "GET", "/sandbox/" + sb["id"])).json()["state"] == "started":
                return sb["id"]
        self.fail("sandbox never started")

    def execute(self, sid, base=TOOLBOX, **body):
        return request(base, "POST", "/%s/process/execute" % sid, body=body, headers=SDK)

    def box(self, sid):
        return [s for s in fake_state()["sandboxes"] if s["id"] == sid][0]


class ControlPlane(FakeCase):
    def test_snapshot_create_then_starting_then_started(self):
        sb = self.create(
            snapshot="cordon-snap",
            labels={"cordon.session": "s1", "team": "x"},
            env={"A": "1"},
            target="eu",
            autoStopInterval=15,
            autoDeleteInterval=0,
        )
        self.assertEqual(sb["state"], "creating")
        self.assertEqual(sb["toolboxProxyUrl"], TOOLBOX)
        self.assertEqual((sb["snapshot"], sb["target"], sb["labels"], sb["env"]),
                         ("cordon-snap", "eu", {"cordon.session": "s1", "team": "x"}, {"A": "1"}))
        states = [self.ok(request(API, "GET", "/sandbox/" + sb["id"])).json()["state"] for _ in range(3)]
        self.assertEqual(states, ["starting", "started", "started"])
        st = self.box(sb["id"])
        self.assertEqual(
            (st["snapshot"], st["image"], st["target"], st["env"], st["labels"], st["autoStopInterval"],
             st["autoDeleteInterval"]),
            ("cordon-snap", None, "eu", {"A": "1"}, {"cordon.session": "s1", "team": "x"}, 15, 0),
        )
        self.assertEqual(fake_state()["live"], 1)

    def test_get_by_name(self):
        sb = self.create(name="cordon-named")
        self.assertEqual(self.ok(request(API, "GET", "/sandbox/cordon-named")).json()["id"], sb["id"])
        r = request(API, "POST", "/sandbox", body={"name": "cordon-named"})
        self.assertEqual(r.status, 409, r)

    def test_image_create_builds_then_started_with_resources(self):
        sb = self.create(buildInfo={"dockerfileContent": "FROM python:3.12-slim\n"}, cpu=2, memory=4, disk=10)
        self.assertEqual(sb["state"], "pending_build")
        self.assertEqual((sb["cpu"], sb["memory"], sb["disk"]), (2, 4, 10))
        self.assertNotIn("snapshot", sb)
        states = [self.ok(request(API, "GET", "/sandbox/" + sb["id"])).json()["state"] for _ in range(2)]
        self.assertEqual(states, ["building_snapshot", "started"])
        st = self.box(sb["id"])
        self.assertEqual((st["image"], st["snapshot"], st["cpu"], st["memory"], st["disk"]),
                         ("python:3.12-slim", None, 2, 4, 10))

    def test_resources_with_a_snapshot_are_refused_as_the_server_does(self):
        for body in ({"snapshot": "s", "cpu": 2}, {"memory": 4}, {"snapshot": "s", "disk": 5}):
            r = request(API, "POST", "/sandbox", body=body)
            self.assertEqual(r.status, 400, r)
            self.assertEqual(r.errors(), [])
            self.assertEqual(r.json()["message"], "Cannot specify Sandbox resources when using a snapshot")
            self.assertEqual(set(r.json()), {"path", "timestamp", "statusCode", "error", "message"})
        self.assertEqual(fake_state()["live"], 0)

    def test_knob_fake_error(self):
        for body in ({"snapshot": "fake-error"}, {"buildInfo": {"dockerfileContent": "FROM fake-error\n"}}):
            sb = self.create(**body)
            got = self.ok(request(API, "GET", "/sandbox/" + sb["id"])).json()
            self.assertEqual(got["state"], "error")
            self.assertIn("fake-error", got["errorReason"])
            again = self.ok(request(API, "GET", "/sandbox/" + sb["id"])).json()
            self.assertEqual((again["state"], again["errorReason"]), ("error", got["errorReason"]))

    def test_knob_fake_build_failed(self):
        sb = self.create(buildInfo={"dockerfileContent": "FROM fake-build-failed\n"})
        states = [self.ok(request(API, "GET", "/sandbox/" + sb["id"])).json() for _ in range(3)]
        self.assertEqual([s["state"] for s in states], ["building_snapshot", "build_failed", "build_failed"])
        self.assertIn("fake-build-failed", states[1]["errorReason"])
        self.assertNotIn("errorReason", states[0])

    def test_knob_fake_never(self):
        sb = self.create(snapshot="fake-never")
        states = {self.ok(request(API, "GET", "/sandbox/" + sb["id"])).json()["state"] for _ in range(25)}
        self.assertEqual(states, {"starting"})

    def test_knob_fake_slow(self):
        sb = self.create(snapshot="fake-slow")
        states = [self.ok(request(API, "GET", "/sandbox/" + sb["id"])).json()["state"] for _ in range(20)]
        self.assertEqual(states[:19], ["starting"] * 19)
        self.assertEqual(states[19], "started")

    def test_list_by_labels(self):
        a = self.create(labels={"cordon.session": "aaa", "k": "v"})
        b = self.create(labels={"cordon.session": "bbb", "k": "v"})
        c = self.create(labels={"cordon.session": "ccc", "k": "v"})
        self.ok(request(API, "DELETE", "/sandbox/" + c["id"]))
        q = "/sandbox?labels=" + json.dumps({"k": "v"}).replace(" ", "%20").replace('"', "%22")
        ids = sorted(i["id"] for i in self.ok(request(API, "GET", q)).json()["items"])
        self.assertEqual(ids, sorted([a["id"], b["id"]]))
        q = "/sandbox?labels=%7B%22cordon.session%22%3A%22aaa%22%7D"
        got = self.ok(request(API, "GET", q)).json()
        self.assertEqual([i["id"] for i in got["items"]], [a["id"]])
        self.assertIsNone(got["nextCursor"])

    def test_delete_then_404(self):
        sid = self.started()
        d = self.ok(request(API, "DELETE", "/sandbox/" + sid)).json()
        self.assertEqual((d["id"], d["state"]), (sid, "destroying"))
        self.assertEqual(fake_state()["live"], 0)
        for method in ("GET", "DELETE"):
            r = request(API, method, "/sandbox/" + sid)
            self.assertEqual(r.status, 404, r)
            self.assertEqual(r.errors(), [])
            self.assertEqual(r.json()["statusCode"], 404)
        r = self.execute(sid, command="true")
        self.assertEqual(r.status, 404, r)

    def test_created_at_can_be_set(self):
        # For cordon gc's earlier-boot rule (test_cli.Gc): a sandbox made long ago.
        sid = self.create()["id"]
        when = "2020-01-02T03:04:05.000Z"
        self.assertEqual(request(FAKE, "POST", "/_fake/created", {"id": sid, "createdAt": when}, key=None).status, 204)
        self.assertEqual(self.ok(request(API, "GET", "/sandbox/" + sid)).json()["createdAt"], when)
        q = "/sandbox?labels=%7B%7D"
        self.assertEqual([i["createdAt"] for i in self.ok(request(API, "GET", q)).json()["items"]], [when])
        for bad in ({"id": sid}, {"id": sid, "createdAt": 5}, []):
            self.assertEqual(request(FAKE, "POST", "/_fake/created", bad, key=None).status, 400, bad)
        self.assertEqual(request(FAKE, "POST", "/_fake/created", {"id": "nope", "createdAt": when},
                                 key=None).status, 404)

    def test_toolbox_proxy_url(self):
        sid = self.started()
        self.assertEqual(self.ok(request(API, "GET", "/sandbox/%s/toolbox-proxy-url" % sid)).json(), {"url": TOOLBOX})
        self.assertEqual(request(API, "GET", "/sandbox/nope/toolbox-proxy-url").status, 404)


class Auth(FakeCase):
    def test_no_key(self):
        # Prism itself refuses a control-plane call without credentials (the spec's security)...
        r = request(API, "POST", "/sandbox", body={}, key=None)
        self.assertEqual(r.status, 401, r)
        # ...and the toolbox spec attaches its scheme to no operation: the fake refuses.
        sid = self.started()
        r = request(TOOLBOX, "POST", "/%s/process/execute" % sid, body={"command": "touch /tmp/ran"}, key=None)
        self.assertEqual(r.status, 401, r)
        self.assertEqual(r.errors(), [])
        self.assertEqual(r.json()["statusCode"], 401)
        self.assertFalse(os.path.exists(os.path.join(self.box_root(sid), "tmp/ran")))

    def box_root(self, sid):
        # The fake keeps a sandbox's files in <root>/<id>; found from a command's $HOME.
        r = self.ok(self.execute(sid, command='printf %s "$HOME"'))
        return os.path.dirname(os.path.dirname(r.json()["result"]))

    def test_wrong_key_everywhere(self):
        sid = self.started()
        calls = [
            (API, "POST", "/sandbox", {"snapshot": "s"}),
            (API, "GET", "/sandbox/" + sid, None),
            (API, "GET", "/sandbox?labels=%7B%7D", None),
            (API, "DELETE", "/sandbox/" + sid, None),
            (API, "GET", "/sandbox/%s/toolbox-proxy-url" % sid, None),
            (TOOLBOX, "POST", "/%s/process/execute" % sid, {"command": "true"}),
            (TOOLBOX, "GET", "/%s/files/download?path=/tmp" % sid, None),
            (TOOLBOX, "DELETE", "/%s/files?path=/tmp" % sid, None),
            (TOOLBOX, "POST", "/%s/files/folder?path=/w&mode=0755" % sid, None),
        ]
        for base, method, path, body in calls:
            r = request(base, method, path, body=body, key="dtn_wrong")
            self.assertEqual(r.status, 401, (method, path, r))
            self.assertEqual(r.errors(), [], (method, path))
            self.assertNotIn(b"dtn_wrong", r.body)
            if base == API:
                self.assertEqual(set(r.json()), {"path", "timestamp", "statusCode", "error", "message"})
        self.assertEqual(self.box(sid)["state"], "started")
        self.assertEqual(fake_state()["live"], 1)


class PrismGuards(FakeCase):
    """What Prism refuses never reaches the fake."""

    def test_wrong_types_are_refused_before_the_fake(self):
        sid = self.started()
        before = len(fake_requests())
        cases = [
            (API, "POST", "/sandbox", {"snapshot": 5}),
            (API, "POST", "/sandbox", {"autoStopInterval": "never"}),
            (API, "POST", "/sandbox", {"labels": {"a": 1}}),
            (API, "POST", "/sandbox", {"buildInfo": {}}),
            (TOOLBOX, "POST", "/%s/process/execute" % sid, {"command": 5}),
            (TOOLBOX, "POST", "/%s/process/execute" % sid, {"command": "true", "timeout": "10"}),
            (TOOLBOX, "POST", "/%s/process/execute" % sid, {"cwd": "/"}),
            (TOOLBOX, "POST", "/%s/process/execute" % sid, {"command": "true", "envs": {"A": 1}}),
            (TOOLBOX, "POST", "/%s/files/folder?path=/w" % sid, None),  # mode is required
            (TOOLBOX, "GET", "/%s/files/download" % sid, None),  # path is required
        ]
        for base, method, path, body in cases:
            r = request(base, method, path, body=body)
            self.assertEqual(r.status, 422, (path, body, r))
            self.assertIn("UNPROCESSABLE_ENTITY", r.json()["type"])
        # A raw upload body: the spec lists only multipart (the daemon would take it).
        r = request(TOOLBOX, "POST", "/%s/files/upload-v2?path=/tmp/x" % sid, raw=b"abc",
                    headers={"Content-Type": "application/octet-stream"})
        self.assertEqual(r.status, 422, r)
        self.assertEqual(len(fake_requests()), before)

    def test_an_invalid_answer_becomes_500_violations(self):
        # What the whole suite relies on: Prism does check the fake's answers. A fault with
        # status 200 answers the API's error JSON where a Sandbox is due: Prism refuses it.
        fake_faults({"method": "GET", "path": "^/sandbox/bogus$", "status": 200, "times": 1})
        r = request(API, "GET", "/sandbox/bogus")
        self.assertEqual(r.status, 500, r)
        self.assertIn("VIOLATIONS", r.json()["type"])
        self.assertTrue(any("required property 'organizationId'" in v["message"] for v in r.errors()), r)


class Execute(FakeCase):
    def test_combined_output_exit_code_cwd_env(self):
        sid = self.started()
        self.ok(request(TOOLBOX, "POST", "/%s/files/folder?path=/workspace&mode=0755" % sid), 201)
        r = self.ok(self.execute(sid, command='echo hi; echo err >&2; echo "$K"; pwd; exit 3',
                                 cwd="/workspace", envs={"K": "V w"}, timeout=10))
        out = r.json()
        self.assertEqual(out["exitCode"], 3)
        lines = out["result"].split("\n")
        self.assertEqual(lines[:3], ["hi", "err", "V w"])
        self.assertTrue(lines[3].endswith("/" + sid + "/workspace"), lines[3])
        # The default cwd is the user's home, not /workspace.
        r = self.ok(self.execute(sid, command="pwd"))
        self.assertTrue(r.json()["result"].rstrip("\n").endswith(sid + "/home/daytona"), r)

    def test_home_is_reachable_by_its_absolute_path(self):
        sid = self.started()
        r = self.ok(self.execute(sid, command='echo x > "$HOME/f" && cat "$HOME/f" && ls "$HOME"'))
        self.assertEqual(r.json(), {"result": "x\nf\n", "exitCode": 0})

    def test_the_sandbox_env_is_seen_and_envs_win(self):
        sid = self.started(env={"A": "from-create", "B": "b"})
        r = self.ok(self.execute(sid, command='echo "$A $B"', envs={"A": "from-exec"}))
        self.assertEqual(r.json()["result"], "from-exec b\n")

    def test_the_host_environment_stays_out(self):
        sid = self.started()
        os.environ["CORDON_DAYTONA_FAKE_LEAK"] = "leak"
        try:
            r = self.ok(self.execute(sid, command="env"))
        finally:
            del os.environ["CORDON_DAYTONA_FAKE_LEAK"]
        names = sorted(l.split("=")[0] for l in r.json()["result"].splitlines())
        self.assertNotIn("CORDON_TEST_DAYTONA_KEY", names)
        self.assertTrue(set(names) <= {"PATH", "HOME", "USER", "PWD", "SHLVL", "_", "OLDPWD"}, names)

    def test_missing_cwd_is_400(self):
        sid = self.started()
        r = self.ok(self.execute(sid, command="true", cwd="/workspace"), 400)
        self.assertIn("/workspace", r.json()["message"])
        self.assertEqual(r.json()["statusCode"], 400)
        self.assertEqual(self.box(sid)["running"], 0)

    def test_bad_requests_the_daemon_refuses(self):
        sid = self.started()
        for body in ({"command": "   "}, {"command": "true", "envs": {"A=B": "x"}}, {"command": "true", "cwd": "rel"},
                     {"command": "true", "cwd": "/../.."}):
            r = self.ok(self.execute(sid, **body), 400)
            self.assertEqual(r.json()["statusCode"], 400)

    def test_timeout_kills_the_group_408_no_output(self):
        sid = self.started()
        t = time.monotonic()
        r = self.ok(self.execute(sid, command="echo partial; sleep 30.271 & sleep 30.272", timeout=1), 408)
        took = time.monotonic() - t
        self.assertLess(took, 10)
        body = r.json()
        self.assertNotIn("result", body)
        self.assertNotIn(b"partial", r.body)
        self.assertEqual((body["statusCode"], body["code"]), (408, "PROCESS_EXECUTION_TIMEOUT"))
        self.assertEqual(processes_with("sleep 30.27"), [])
        self.assertEqual(self.box(sid)["running"], 0)

    def test_timeout_zero_means_none(self):
        sid = self.started()
        r = self.ok(self.execute(sid, command="sleep 1.2; echo done", timeout=0))
        self.assertEqual(r.json(), {"result": "done\n", "exitCode": 0})

    def test_signal_death_is_minus_one_as_go_reports_it(self):
        sid = self.started()
        r = self.ok(self.execute(sid, command="kill -9 $$"))
        self.assertEqual(r.json()["exitCode"], -1)

    def test_leftover_background_commands_are_killed(self):
        sid = self.started()
        self.ok(self.execute(sid, command="sleep 30.381 >/dev/null 2>&1 & echo started"))
        self.assertEqual(wait_until(lambda: processes_with("sleep 30.381") == [], 5), True)

    def test_runs_as_nobody_when_root(self):
        if os.geteuid() != 0:
            self.skipTest("the fake drops privileges only when it runs as root")
        sid = self.started()
        r = self.ok(self.execute(sid, command="id -u; touch /etc/cordon-fake-probe 2>/dev/null || echo denied"))
        self.assertEqual(r.json()["result"], "65534\ndenied\n")

    def test_output_encoding_as_go(self):
        # Directly against the fake: Prism's proxy re-serialises JSON answers.
        sid = self.started()
        cmd = r"printf 'a\377b\342\202c\342\202\254 \001\t<&>\342\200\250\n'"
        r = request(FAKE, "POST", "/toolbox/%s/process/execute" % sid, body={"command": cmd})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.headers.get("transfer-encoding"), "chunked")
        self.assertEqual(
            r.body,
            b'{"result":"a\\ufffdb\\ufffd\\ufffdc\xe2\x82\xac \\u0001\\t\\u003c\\u0026\\u003e\\u2028\\n","exitCode":0}',
        )
        # The same through Prism: the decoded value is what matters there.
        r = self.ok(self.execute(sid, command=cmd))
        self.assertEqual(r.json()["result"], "a\ufffdb\ufffd\ufffdc\u20ac \x01\t<&>\u2028\n")

    def test_utf8_cut_at_every_chunk_boundary(self):
        # A multi-byte character across the fake's 64 KiB reads must not become U+FFFD.
        sid = self.started()
        cmd = "head -c 65535 /dev/zero | tr '\\0' a; printf '\\342\\202\\254'; head -c 65534 /dev/zero | tr '\\0' b; printf '\\360\\237\\230\\200'"
        r = request(FAKE, "POST", "/toolbox/%s/process/execute" % sid, body={"command": cmd})
        out = json.loads(r.body)["result"]
        self.assertEqual(out, "a" * 65535 + "\u20ac" + "b" * 65534 + "\U0001F600")

    def test_key_order_and_legacy_code_knobs(self):
        sid = self.started()
        fake_config(execute_result_first=False)
        r = request(FAKE, "POST", "/toolbox/%s/process/execute" % sid, body={"command": "echo x; exit 4"})
        self.assertEqual(r.body, b'{"exitCode":4,"result":"x\\n"}')
        fake_config(execute_result_first=True, execute_exit_key="code")
        r = self.ok(self.execute(sid, command="echo x; exit 4"))
        self.assertEqual(r.json(), {"result": "x\n", "code": 4})
        fake_reset()
        sid = self.started()
        r = request(FAKE, "POST", "/toolbox/%s/process/execute" % sid, body={"command": "exit 4"})
        self.assertEqual(r.body, b'{"result":"","exitCode":4}')

    def test_big_output_streams_in_bounded_memory(self):
        sid = self.started()
        pid = fake_pid()
        n = 200 * 1000 * 1000
        before = vm_hwm(pid)
        import http.client
        import urllib.parse

        u = urllib.parse.urlsplit(FAKE)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
        conn.request("POST", "/toolbox/%s/process/execute" % sid,
                     body=json.dumps({"command": "head -c %d /dev/zero | tr '\\0' a" % n}),
                     headers={"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        h = hashlib.sha256()
        total = 0
        while True:
            data = resp.read(1 << 20)
            if not data:
                break
            total += len(data)
            h.update(data)
        conn.close()
        expect = b'{"result":"' + b"a" * n + b'","exitCode":0}'
        self.assertEqual(total, len(expect))
        self.assertEqual(h.hexdigest(), hashlib.sha256(expect).hexdigest())
        grew = vm_hwm(pid) - before
        self.assertLess(grew, 64 << 20, "the fake's peak RSS grew by %d bytes for %d of output" % (grew, n))


def fake_pid():
    # The fake is the process listening on FAKE's port.
    import urllib.parse

    port = urllib.parse.urlsplit(FAKE).port
    inode = None
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port:
                inode = fields[9]
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            for fd in os.listdir("/proc/%s/fd" % d):
                if os.readlink("/proc/%s/fd/%s" % (d, fd)) == "socket:[%s]" % inode:
                    return int(d)
        except OSError:
            continue
    raise AssertionError("no process listens on %s" % FAKE)


def vm_hwm(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


class Files(FakeCase):
    def tb(self, method, sid, path, **kw):
        return request(TOOLBOX, method, "/%s/%s" % (sid, path), **kw)

    def assertSameBytes(self, got, want):
        # Not assertEqual: its diff of large byte strings takes minutes.
        if got != want:
            at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            self.fail("%d bytes, %d expected; first difference at %d: %r vs %r"
                      % (len(got), len(want), at, got[at:at + 16], want[at:at + 16]))

    def upload(self, sid, path, data, name="f", base=TOOLBOX):
        boundary = "cordon-test-boundary-1234"
        body = (
            b"--" + boundary.encode() + b"\r\n"
            b'Content-Disposition: form-data; name="file"; filename="' + name.encode() + b'"\r\n'
            b"Content-Type: application/octet-stream\r\n\r\n" + data + b"\r\n--" + boundary.encode() + b"--\r\n"
        )
        return request(base, "POST", "/%s/files/upload-v2?path=%s" % (sid, path), raw=body,
                       headers={"Content-Type": "multipart/form-data; boundary=" + boundary})

    def test_folder_upload_download_delete(self):
        sid = self.started()
        self.ok(self.tb("POST", sid, "files/folder?path=/workspace&mode=0755"), 201)
        self.ok(self.tb("POST", sid, "files/folder?path=/workspace&mode=0755"), 201)  # exists: fine
        # Prism's proxy passes bodies on as UTF-8 text, both ways (each invalid byte becomes
        # U+FFFD): text goes through Prism, binary content to the fake directly.
        text = "tëxt\r\n--cordon-test-boundary-123\n".encode() * 1000
        r = self.ok(self.upload(sid, "/workspace/d/e/text.txt", text))
        self.assertEqual(r.json(), {"name": "text.txt", "path": "/workspace/d/e/text.txt", "type": "file"})
        r = self.ok(self.tb("GET", sid, "files/download?path=/workspace/d/e/text.txt"))
        self.assertSameBytes(r.body, text)
        self.assertEqual(r.headers["content-type"], "application/octet-stream")
        data = bytes(range(256)) * 1000 + b"\r\n--cordon-test-boundary-123"
        r = self.upload(sid, "/workspace/d/e/data.bin", data, base=FAKE + "/toolbox")
        self.assertEqual(r.status, 200, r)
        r = request(FAKE, "GET", "/toolbox/%s/files/download?path=/workspace/d/e/data.bin" % sid)
        self.assertEqual(r.status, 200, r)
        self.assertSameBytes(r.body, data)
        r = self.ok(self.execute(sid, command="wc -c < d/e/data.bin; stat -c %a d", cwd="/workspace"))
        self.assertEqual(r.json()["result"], "%d\n755\n" % len(data))
        self.ok(self.tb("DELETE", sid, "files?path=/workspace/d/e/data.bin"), 204)
        self.assertEqual(self.tb("GET", sid, "files/download?path=/workspace/d/e/data.bin").status, 404)

    def test_folder_mode(self):
        sid = self.started()
        self.ok(self.tb("POST", sid, "files/folder?path=/w/x&mode=0700"), 201)
        r = self.ok(self.execute(sid, command="stat -c %a x", cwd="/w"))
        self.assertEqual(r.json()["result"], "700\n")
        r = self.ok(self.tb("POST", sid, "files/folder?path=/w/y&mode=rwx"), 400)
        self.assertEqual(r.json()["statusCode"], 400)

    def test_raw_upload_directly(self):
        sid = self.started()
        r = request(FAKE, "POST", "/toolbox/%s/files/upload-v2?path=/tmp/raw.txt" % sid, raw=b"raw body",
                    headers={"Content-Type": "application/octet-stream"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.ok(self.tb("GET", sid, "files/download?path=/tmp/raw.txt")).body, b"raw body")

    def test_errors_are_spec_valid(self):
        sid = self.started()
        self.ok(self.tb("POST", sid, "files/folder?path=/workspace/dir&mode=0755"), 201)
        for method, path, status in [
            ("GET", "files/download?path=/workspace/missing", 404),
            ("GET", "files/download?path=/workspace/dir", 400),
            ("DELETE", "files?path=/workspace/missing", 404),
            ("DELETE", "files?path=/workspace/dir", 400),
            ("GET", "files/download?path=/workspace/../../../etc/passwd", 400),
            ("GET", "files/download?path=relative", 400),
        ]:
            r = self.ok(self.tb(method, sid, path), status)
            self.assertEqual(r.json()["statusCode"], status)
            self.assertEqual(r.headers["content-type"].split(";")[0], "application/json")
        self.ok(self.tb("DELETE", sid, "files?path=/workspace/dir&recursive=true"), 204)

    def test_symlinks_cannot_leave_the_sandbox(self):
        sid = self.started()
        self.ok(self.execute(sid, command="ln -s ../../../../../../../../etc out; ln -s /etc abs; mkdir in; ln -s in ok"))
        for p in ("/home/daytona/out/passwd", "/home/daytona/abs/passwd"):
            r = self.ok(self.tb("GET", sid, "files/download?path=" + p), 400)
            self.assertNotIn(b"root:", r.body)
        r = self.upload(sid, "/home/daytona/out/cordon-fake-escape", b"x")
        self.assertEqual(r.status, 400, r)
        self.assertFalse(os.path.exists("/etc/cordon-fake-escape"))
        self.ok(self.upload(sid, "/home/daytona/ok/f", b"inside"))
        self.assertEqual(self.ok(self.tb("GET", sid, "files/download?path=/home/daytona/in/f")).body, b"inside")


class Lifecycle(FakeCase):
    def test_delete_kills_running_commands(self):
        sid = self.started()
        result = {}

        def run():
            t = time.monotonic()
            result["r"] = self.execute(sid, command="sleep 30.491")
            result["t"] = time.monotonic() - t

        th = threading.Thread(target=run)
        th.start()
        self.assertTrue(wait_until(lambda: processes_with("sleep 30.491"), 5))
        self.ok(request(API, "DELETE", "/sandbox/" + sid))
        th.join(10)
        self.assertFalse(th.is_alive())
        self.assertLess(result["t"], 10)
        # The fake drops the connection (the sandbox is gone); Prism says so with a 500.
        self.assertEqual(result["r"].status, 500, result["r"])
        self.assertEqual(processes_with("sleep 30.491"), [])

    def test_reset_kills_and_forgets(self):
        sid = self.started()
        th = threading.Thread(target=lambda: self.execute(sid, command="sleep 30.492"))
        th.start()
        self.assertTrue(wait_until(lambda: processes_with("sleep 30.492"), 5))
        fake_reset()
        th.join(10)
        self.assertEqual(processes_with("sleep 30.492"), [])
        st = fake_state()
        self.assertEqual((st["sandboxes"], st["live"], st["requests"]), ([], 0, []))

    def test_sigterm_kills_commands_and_leaves_outside_alone(self):
        # A second fake of its own, so that this one can be stopped.
        tmp = tempfile.mkdtemp(prefix="cordon-test-dfake.")
        os.chmod(tmp, 0o711)  # its commands run as nobody
        try:
            root = os.path.join(tmp, "root")
            os.mkdir(root)
            sentinel = os.path.join(tmp, "outside")
            open(sentinel, "w").close()
            port_file = os.path.join(tmp, "port")
            p = subprocess.Popen(
                [sys.executable, os.path.join(REPO, "tests/fakes/daytona_fake.py"), "--port", "0", "--key", "k2",
                 "--root", root, "--toolbox-url", "http://127.0.0.1:9/toolbox", "--port-file", port_file],
                stderr=subprocess.DEVNULL,
            )
            try:
                self.assertTrue(wait_until(lambda: os.path.exists(port_file), 10))
                with open(port_file) as f:
                    base = "http://127.0.0.1:" + f.read().strip()
                sb = request(base, "POST", "/sandbox", body={}, key="k2").json()
                request(base, "GET", "/sandbox/" + sb["id"], key="k2")
                request(base, "GET", "/sandbox/" + sb["id"], key="k2")
                th = threading.Thread(target=lambda: self._swallow(
                    request, base, "POST", "/toolbox/%s/process/execute" % sb["id"],
                    body={"command": "sleep 30.493 & sleep 30.494"}, key="k2"))
                th.start()
                self.assertTrue(wait_until(lambda: len(processes_with("sleep 30.49")) >= 2, 5))
                p.send_signal(signal.SIGTERM)
                self.assertEqual(p.wait(10), 0)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            self.assertEqual(wait_until(lambda: processes_with("sleep 30.49") == [], 5), True)
            self.assertTrue(os.path.exists(sentinel))
            self.assertFalse(os.path.exists(os.path.join(root, ".fake")))
        finally:
            shutil.rmtree(tmp)

    @staticmethod
    def _swallow(f, *a, **kw):
        try:
            f(*a, **kw)
        except OSError:
            pass


class Faults(FakeCase):
    def test_status_times_retry_after(self):
        fake_faults({"method": "POST", "path": "^/sandbox$", "status": 429, "times": 2, "retry_after": 1},
                    {"method": "POST", "path": "^/sandbox$", "status": 503, "times": 1})
        got = []
        for _ in range(4):
            r = request(API, "POST", "/sandbox", body={})
            self.assertEqual(r.errors(), [])
            got.append((r.status, r.headers.get("retry-after")))
        self.assertEqual(got, [(429, "1"), (429, "1"), (503, None), (200, None)])
        self.assertEqual(fake_state()["live"], 1)
        self.assertEqual([q.get("fault") for q in fake_requests("POST", "^/sandbox$")], [429, 429, 503, None])

    def test_method_and_path_must_match(self):
        sid = self.started()
        fake_faults({"method": "DELETE", "path": "^/sandbox/", "status": 500})
        self.ok(request(API, "GET", "/sandbox/" + sid))
        self.assertEqual(request(API, "DELETE", "/sandbox/" + sid).status, 500)
        self.ok(request(API, "DELETE", "/sandbox/" + sid))

    def test_drop_direct_and_through_prism(self):
        sid = self.started()
        fake_faults({"path": "/process/execute$", "drop": True, "times": 2})
        import http.client

        with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
            request(FAKE, "POST", "/toolbox/%s/process/execute" % sid, body={"command": "touch ran1"})
        r = self.execute(sid, command="touch ran2")
        self.assertEqual(r.status, 500, r)  # Prism's answer to a hang-up
        r = self.ok(self.execute(sid, command="ls"))
        self.assertEqual(r.json()["result"], "")  # the dropped commands never ran

    def test_delay(self):
        fake_faults({"method": "GET", "path": "^/sandbox$", "delay": 1.5})
        t = time.monotonic()
        self.ok(request(API, "GET", "/sandbox"))
        self.assertGreaterEqual(time.monotonic() - t, 1.5)
        t = time.monotonic()
        self.ok(request(API, "GET", "/sandbox"))
        self.assertLess(time.monotonic() - t, 1.5)

    def test_bad_fault_specs(self):
        for spec in ({"status": 99}, {"times": 0, "status": 500}, {"path": "("}, {"bogus": 1}, {}):
            r = request(FAKE, "POST", "/_fake/faults", body=[spec], key=None)
            self.assertEqual(r.status, 400, (spec, r))
        self.assertEqual(fake_state()["faults"], [])


class RequestLog(FakeCase):
    def test_headers_query_json_kept(self):
        sid = self.started()
        request(TOOLBOX, "POST", "/%s/files/folder?path=/workspace&mode=0755" % sid, headers=SDK)
        q = fake_requests("POST", "/files/folder$")[-1]
        self.assertEqual(q["query"], {"path": "/workspace", "mode": "0755"})
        self.assertEqual(q["headers"].get("X-Daytona-SDK-Version") or q["headers"].get("x-daytona-sdk-version"), "0.205.0")
        auth = {k.lower(): v for k, v in q["headers"].items()}["authorization"]
        self.assertEqual(auth, "Bearer " + KEY)
        c = fake_requests("POST", "^/sandbox$")[-1]
        self.assertEqual(c["json"], {})
        self.assertEqual(c["status"], 200)

    def test_last_500(self):
        for _ in range(510):
            request(FAKE, "GET", "/sandbox/none")
        reqs = fake_state()["requests"]
        self.assertEqual(len(reqs), 500)
        self.assertEqual(reqs[-1]["seq"] - reqs[0]["seq"], 499)


class Mocks(unittest.TestCase):
    """The trimmed documents as Prism mocks serve them: what cordon calls is there, the rest not."""

    def test_kept_operations_answer(self):
        r = request(MOCK_API, "POST", "/sandbox", body={"snapshot": "s"})
        self.assertEqual(r.status, 200, r)
        self.assertIn("toolboxProxyUrl", r.json())
        for method, path in (("GET", "/sandbox/x"), ("DELETE", "/sandbox/x"), ("GET", "/sandbox/x/toolbox-proxy-url"),
                             ("GET", "/sandbox?labels=%7B%7D")):
            self.assertEqual(request(MOCK_API, method, path).status, 200, path)
        r = request(MOCK_TOOLBOX, "POST", "/x/process/execute", body={"command": "true", "cwd": "/workspace",
                                                                        "envs": {"A": "1"}, "timeout": 5})
        self.assertEqual(r.status, 200, r)
        self.assertIn("result", r.json())
        self.assertEqual(request(MOCK_TOOLBOX, "POST", "/x/files/folder?path=/w&mode=0755").status, 201)
        self.assertEqual(request(MOCK_TOOLBOX, "DELETE", "/x/files?path=/w").status, 204)
        self.assertEqual(request(MOCK_TOOLBOX, "GET", "/x/files/download?path=/w").status, 200)

    def test_trimmed_operations_are_gone(self):
        for base, method, path in ((MOCK_API, "POST", "/sandbox/x/start"), (MOCK_API, "GET", "/snapshots"),
                                   (MOCK_TOOLBOX, "POST", "/x/process/session"), (MOCK_TOOLBOX, "GET", "/x/files/info")):
            r = request(base, method, path)
            self.assertEqual(r.status, 404, (path, r))
            self.assertIn("NO_PATH_MATCHED", r.body.decode())

    def test_documents_say_where_they_come_from(self):
        for name in ("api.json", "toolbox.json"):
            with open(os.path.join(REPO, "backends/daytona/openapi", name)) as f:
                origin = json.load(f)["x-cordon-origin"]
            self.assertEqual((origin["tag"], origin["commit"]), ("v0.205.1", "d94a1281"))
            self.assertTrue(re.fullmatch(r"[0-9a-f]{64}", origin["sha256"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
