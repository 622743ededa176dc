#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`cordon run --backend daytona`, black box, against the fake behind Prism (tests/daytona/run.sh).

This is the contract the Daytona backend (issue 11, docs/daytona.md) must meet. A build
without the backend fails every test with "cordon has no Daytona backend in this build".

cordon gets DAYTONA_API_KEY and DAYTONA_API_URL = the api proxy; the fake gives its sandboxes
toolboxProxyUrl = the toolbox proxy. So each request cordon sends is checked against the
OpenAPI documents on its way in (Prism answers 422 to an invalid one, and the fake never sees
it), and each answer on its way back. After every test the fake must hold no live sandbox:
cordon deletes its sandbox on every exit path.

Run: tests/daytona/run.sh build -- python3 tests/daytona/test_cli.py [-k NAME]
"""

import hashlib
import hmac
import json
import threading
import socket
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daytona_env import (  # noqa: E402
    API,
    CORDON,
    FAKE,
    KEY,
    fake_config,
    fake_faults,
    fake_requests,
    fake_reset,
    fake_state,
    processes_with,
    request,
    wait_until,
)

NOT_BUILT = "is not available in this build"
ONE_LINE = re.compile(r"cordon: [^\n]+\n?")


class Run:
    def __init__(self, rc, out, err, elapsed):
        self.rc, self.out, self.err, self.elapsed = rc, out, err, elapsed

    def json(self):
        return json.loads(self.out)

    def __repr__(self):
        return "<rc %s after %.1fs, stdout %r, stderr %r>" % (self.rc, self.elapsed, self.out[:500], self.err[:500])


class CliCase(unittest.TestCase):
    def setUp(self):
        fake_reset()
        self.tmp = tempfile.mkdtemp(prefix="cordon-test-dcli.")

    def tearDown(self):
        try:
            st = fake_state()
            self.assertEqual(st["live"], 0, "sandboxes left: %s" % [(s["id"], s["state"]) for s in st["sandboxes"]
                                                                   if s["state"] not in ("destroying", "destroyed")])
            self.assertEqual(sum(s["running"] for s in st["sandboxes"]), 0, "commands still running in the fake")
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # --- running cordon ---

    def env(self, key=KEY, api=API, **extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith("DAYTONA_")}
        # Never through a cordond that may run on this machine (tests/run-all.sh does the same).
        env.setdefault("CORDON_SOCKET", "/nonexistent/cordon.sock")
        if key is not None:
            env["DAYTONA_API_KEY"] = key
        if api is not None:
            env["DAYTONA_API_URL"] = api
        env.update(extra)
        return env

    def spawn(self, args, env=None, **kw):
        return subprocess.Popen([CORDON, "run"] + args, env=env or self.env(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)

    def run_cordon(self, args, env=None, timeout=90, backend="daytona", prefix=()):
        cmd = list(prefix) + [CORDON, "run"] + (["--backend", backend] if backend else []) + args
        t = time.monotonic()
        p = subprocess.run(cmd, env=env or self.env(), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
        r = Run(p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"),
                time.monotonic() - t)
        if backend == "daytona" and NOT_BUILT in r.err:
            self.fail("cordon has no Daytona backend in this build: this contract test waits for it (%s)"
                      % r.err.strip())
        return r

    def profile(self, text, name="p.conf"):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    # --- checks ---

    def assertOneLineError(self, r, *needles):
        """exit 125, nothing on stdout, one line on stderr containing each needle (any case),
        and never the key."""
        self.assertEqual(r.rc, 125, r)
        self.assertEqual(r.out, "", r)
        self.assertRegex(r.err, r"\A" + ONE_LINE.pattern + r"\Z")
        for n in needles:
            self.assertIn(n.lower(), r.err.lower(), r)
        self.assertNotIn(KEY, r.err)

    def assertNoKey(self, r):
        self.assertNotIn(KEY, r.out)
        self.assertNotIn(KEY, r.err)

    def local(self, args, **kw):
        return self.run_cordon(args, backend="local", **kw)

    def execs(self):
        return fake_requests("POST", r"/process/execute$")

    def creates(self):
        return fake_requests("POST", r"^/sandbox$")


class Output(CliCase):
    def test_text_result_as_the_local_backend(self):
        cmd = "printf 'one\\n\\ntwo  \\n'; exit 3"
        want = self.local(["--", cmd])
        self.assertEqual((want.rc, want.out), (3, "one\n\ntwo\n[exit code: 3]\n"))  # the reference itself
        r = self.run_cordon(["--", cmd])
        self.assertEqual((r.rc, r.out, r.err), (want.rc, want.out, ""))

    def test_success_and_exit_codes(self):
        for cmd, rc in (("echo ok", 0), ("echo no; exit 1", 1), ("exit 255", 255)):
            want = self.local(["--", cmd])
            r = self.run_cordon(["--", cmd])
            self.assertEqual((r.rc, r.out), (want.rc, want.out), cmd)
            self.assertEqual(r.rc, rc)

    def test_stderr_comes_back_combined_into_stdout(self):
        r = self.run_cordon(["--", "echo hi; echo err >&2"])
        self.assertEqual((r.rc, r.out, r.err), (0, "hi\nerr\n", ""))
        j = self.run_cordon(["--format", "json", "--", "echo hi; echo err >&2; exit 4"]).json()
        self.assertEqual((j["output"], j["stdout"], j["stderr"], j["exit_code"], j["backend"]),
                         ("hi\nerr\n[exit code: 4]", "hi\nerr\n", "", 4, "daytona"))
        self.assertEqual((j["stdout_bytes"], j["stderr_bytes"], j["timed_out"], j["refused"]), (7, 0, False, None))

    def test_invalid_utf8_becomes_replacement_characters(self):
        r = self.run_cordon(["--", "printf 'a\\377b\\n'"])
        self.assertEqual((r.rc, r.out), (0, "a\ufffdb\n"))

    def test_max_output_as_the_local_backend(self):
        cmd = "i=0; while [ $i -lt 300 ]; do echo line$i; i=$((i+1)); done"
        want = self.local(["--max-output", "50", "--", cmd])
        self.assertIn("[truncated: showing first 50 of ", want.out)
        r = self.run_cordon(["--max-output", "50", "--", cmd])
        self.assertEqual((r.rc, r.out), (want.rc, want.out))

    def test_execute_knobs_of_older_and_other_daemons(self):
        # The daemon's field order is not part of the contract, and daemons before 0.1xx
        # answered "code" instead of "exitCode" (Daytona's SDKs read exitCode ?? code).
        fake_config(execute_result_first=False)
        self.assertEqual(self.run_cordon(["--", "echo x; exit 5"]).out, "x\n[exit code: 5]\n")
        fake_config(execute_result_first=True, execute_exit_key="code")
        r = self.run_cordon(["--", "echo x; exit 6"])
        self.assertEqual((r.rc, r.out), (6, "x\n[exit code: 6]\n"))


class Requests(CliCase):
    def test_the_requests_a_run_sends(self):
        r = self.run_cordon(["--env", "CORDON_K=v a l", "--", 'echo "$CORDON_K"'])
        self.assertEqual((r.rc, r.out), (0, "v a l\n"))
        reqs = fake_requests()
        paths = [(q["method"], re.sub(r"/[0-9a-f-]{36}", "/ID", q["path"])) for q in reqs]
        self.assertEqual(paths[0], ("POST", "/sandbox"))
        self.assertEqual(paths[-1], ("DELETE", "/sandbox/ID"))
        # The sandbox is polled until started before anything runs in it.
        first_toolbox = next(i for i, p in enumerate(paths) if p[1].startswith("/toolbox/"))
        polls = [p for p in paths[1:first_toolbox] if p == ("GET", "/sandbox/ID")]
        self.assertGreaterEqual(len(polls), 2)  # creating -> starting -> started
        # /workspace is made, then the command runs there with the run's environment.
        folder = fake_requests("POST", r"/files/folder$")
        ex = self.execs()
        self.assertEqual(len(ex), 1)
        self.assertTrue(folder and folder[0]["seq"] < ex[0]["seq"], paths)
        self.assertEqual(folder[0]["query"].get("path"), "/workspace")
        body = ex[0]["json"]
        self.assertEqual(body["cwd"], "/workspace")
        self.assertEqual(body["envs"].get("CORDON_K"), "v a l")
        self.assertIsInstance(body.get("timeout"), int)
        self.assertEqual(body["timeout"], 60)  # the default --timeout
        self.assertIn('echo "$CORDON_K"', body["command"])
        # Every request carries the key and the SDK version header (the daemon's output
        # format depends on it: shared/reference/docker-daytona.md B2).
        for q in reqs:
            h = {k.lower(): v for k, v in q["headers"].items()}
            self.assertEqual(h.get("authorization"), "Bearer " + KEY, q["path"])
            self.assertRegex(h.get("x-daytona-sdk-version", ""), r"^\d+\.\d+\.\d+", q["path"])
        self.assertNoKey(r)

    def test_create_carries_session_label_and_orphan_safety(self):
        self.run_cordon(["--", "true"])
        c = self.creates()[0]["json"]
        self.assertIn("cordon.session", c.get("labels", {}))
        self.assertTrue(c["labels"]["cordon.session"])
        # A crashed cordon's sandbox dies on its own (docs/daytona.md, step 2).
        self.assertEqual(c.get("autoDeleteInterval"), 0)
        self.assertIn("autoStopInterval", c)
        self.assertNotIn("buildInfo", c)
        self.assertFalse(any(k in c for k in ("cpu", "memory", "disk")))

    def test_two_runs_two_sessions(self):
        self.run_cordon(["--", "true"])
        self.run_cordon(["--", "true"])
        labels = [c["json"]["labels"]["cordon.session"] for c in self.creates()]
        self.assertEqual(len(set(labels)), 2)

    def test_profile_labels_target_auto_stop(self):
        p = self.profile("[daytona]\nlabels = team=ml\nlabels = env=test run\ntarget = eu\nauto_stop = 7\n")
        r = self.run_cordon(["-p", p, "--", "true"])
        self.assertEqual(r.rc, 0, r)
        c = self.creates()[0]["json"]
        self.assertEqual((c["labels"].get("team"), c["labels"].get("env")), ("ml", "test run"))
        self.assertIn("cordon.session", c["labels"])
        self.assertEqual((c.get("target"), c.get("autoStopInterval")), ("eu", 7))
        st = fake_state()["sandboxes"][0]
        self.assertEqual((st["target"], st["labels"]["team"]), ("eu", "ml"))

    def test_daytona_target_from_the_environment_wins(self):
        p = self.profile("[daytona]\ntarget = eu\n")
        self.assertEqual(self.run_cordon(["-p", p, "--", "true"], env=self.env(DAYTONA_TARGET="us")).rc, 0)
        self.assertEqual(self.creates()[0]["json"].get("target"), "us")

    def test_image_with_resources_is_a_build(self):
        p = self.profile("[daytona]\nimage = python:3.12-slim\ncpu = 2\nmemory = 4\ndisk = 10\n")
        r = self.run_cordon(["-p", p, "--", "echo built"])
        self.assertEqual((r.rc, r.out), (0, "built\n"))
        c = self.creates()[0]["json"]
        self.assertEqual(c.get("buildInfo"), {"dockerfileContent": "FROM python:3.12-slim\n"})
        self.assertNotIn("snapshot", c)
        self.assertEqual((c.get("cpu"), c.get("memory"), c.get("disk")), (2, 4, 10))

    def test_image_option(self):
        r = self.run_cordon(["--image", "debian:12", "--", "true"])
        self.assertEqual(r.rc, 0, r)
        c = self.creates()[0]["json"]
        self.assertEqual(c.get("buildInfo"), {"dockerfileContent": "FROM debian:12\n"})

    def test_snapshot(self):
        p = self.profile("[daytona]\nsnapshot = cordon-snap\n")
        self.assertEqual(self.run_cordon(["-p", p, "--", "true"]).rc, 0)
        c = self.creates()[0]["json"]
        self.assertEqual(c.get("snapshot"), "cordon-snap")
        self.assertNotIn("buildInfo", c)

    def test_image_option_replaces_the_profiles_snapshot(self):
        # docs/daytona.md: "--image replaces the profile's snapshot" (the command line wins, SPEC
        # §2); it was refused as "the profile sets both snapshot ... and image".
        p = self.profile("[daytona]\nsnapshot = cordon-snap\n")
        r = self.run_cordon(["-p", p, "--image", "debian:12", "--", "true"])
        self.assertEqual(r.rc, 0, r)
        c = self.creates()[0]["json"]
        self.assertEqual(c.get("buildInfo"), {"dockerfileContent": "FROM debian:12\n"})
        self.assertNotIn("snapshot", c)

    def test_snapshot_with_resources_is_one_line(self):
        # cordon may refuse it before any request, or pass on the server's 400: one line.
        p = self.profile("[daytona]\nsnapshot = cordon-snap\ncpu = 2\n")
        r = self.run_cordon(["-p", p, "--", "true"])
        self.assertOneLineError(r)
        if self.creates():
            self.assertIn("Cannot specify Sandbox resources when using a snapshot", r.err)
        self.assertEqual(self.execs(), [])

    def test_api_url_from_the_profile_and_the_environment_wins(self):
        p = self.profile("[daytona]\napi_url = %s\n" % API)
        r = self.run_cordon(["-p", p, "--", "echo via-profile"], env=self.env(api=None))
        self.assertEqual((r.rc, r.out), (0, "via-profile\n"))
        dead = self.profile("[daytona]\napi_url = http://127.0.0.1:9\n", "dead.conf")
        r = self.run_cordon(["-p", dead, "--", "echo via-env"])
        self.assertEqual((r.rc, r.out), (0, "via-env\n"))


class Timeout(CliCase):
    def test_timeout_is_124_with_the_timeout_text(self):
        r = self.run_cordon(["--timeout", "2", "--", "sleep 30.601"])
        # Daytona's 408 is the timeout result; the text is the Docker backend's (AG2's
        # DaytonaEnvironment says "Execution timed out: <SDK message>", with no fixed wording).
        self.assertEqual((r.rc, r.out), (124, "Execution timed out after 2s\n[exit code: 124]\n"), r)
        self.assertLess(r.elapsed, 2 + 10)
        self.assertEqual([q["json"]["timeout"] for q in self.execs()], [2])
        self.assertEqual(processes_with("sleep 30.601"), [])
        j = self.run_cordon(["--format", "json", "--timeout", "1", "--", "sleep 30.602"]).json()
        self.assertEqual((j["exit_code"], j["timed_out"], j["backend"]), (124, True, "daytona"))


class Policy(CliCase):
    def test_refused_command_sends_nothing(self):
        want = self.local(["--block", "rm", "--", "rm -rf /"])
        self.assertEqual((want.rc, want.out), (126, "Command not allowed: 'rm -rf /'\n"))
        r = self.run_cordon(["--block", "rm", "--", "rm -rf /"])
        self.assertEqual((r.rc, r.out), (want.rc, want.out), r)
        self.assertEqual(fake_state()["requests"], [])
        r = self.run_cordon(["--block", "rm", "--format", "json", "--", "rm -rf /"])
        self.assertEqual((r.rc, r.json()["refused"]), (126, "Command not allowed: 'rm -rf /'"))
        self.assertEqual(fake_state()["requests"], [])


class Auth(CliCase):
    def test_wrong_key(self):
        wrong = "dtn_" + "0" * 32
        for fmt in ("text", "json"):
            r = self.run_cordon(["--format", fmt, "--", "true"], env=self.env(key=wrong))
            self.assertOneLineError(r)
            self.assertRegex(r.err.lower(), r"401|authenticat|unauthori[sz]ed|api key")
            self.assertNotIn(wrong, r.err + r.out)
        self.assertEqual(len(self.creates()), 2)  # not retried

    def test_no_key(self):
        r = self.run_cordon(["--", "true"], env=self.env(key=None))
        self.assertOneLineError(r, "DAYTONA_API_KEY")
        r = self.run_cordon(["--", "true"], env=self.env(key=""))
        self.assertOneLineError(r, "DAYTONA_API_KEY")
        self.assertEqual(fake_state()["requests"], [])

    def test_403_and_404_are_one_line_not_retried(self):
        for status in (403, 404):
            fake_reset()
            fake_faults({"method": "POST", "path": "^/sandbox$", "status": status, "times": 5})
            r = self.run_cordon(["--", "true"])
            self.assertOneLineError(r, str(status))
            self.assertEqual(len(self.creates()), 1, status)

    def test_404_on_a_poll_is_one_line(self):
        fake_faults({"method": "GET", "path": "^/sandbox/[^/]+$", "status": 404, "times": 100})
        r = self.run_cordon(["--", "true"])
        self.assertOneLineError(r, "404")
        self.assertEqual(len(self.execs()), 0)

    def test_bad_api_url(self):
        # (Never an empty one: cordon would take Daytona's default URL, on the internet.)
        for url in ("ftp://127.0.0.1/x", "not a url"):
            r = self.run_cordon(["--", "true"], env=self.env(api=url))
            self.assertOneLineError(r)
        self.assertEqual(fake_state()["requests"], [])


class Retries(CliCase):
    def test_create_retried_on_429_and_503_then_success(self):
        fake_faults({"method": "POST", "path": "^/sandbox$", "status": 429, "times": 2, "retry_after": 1},
                    {"method": "POST", "path": "^/sandbox$", "status": 503, "times": 2})
        r = self.run_cordon(["--", "echo made"])
        self.assertEqual((r.rc, r.out), (0, "made\n"), r)
        self.assertEqual([q.get("fault") for q in self.creates()], [429, 429, 503, 503, None])
        self.assertGreaterEqual(r.elapsed, 2.0)  # Retry-After: 1, twice
        self.assertEqual(fake_state()["live"], 0)

    def test_a_fault_that_never_stops_ends_in_bounded_time(self):
        fake_faults({"method": "POST", "path": "^/sandbox$", "status": 503, "times": 100})
        r = self.run_cordon(["--", "true"], timeout=120)
        self.assertOneLineError(r, "503")
        self.assertLess(r.elapsed, 60)
        self.assertLessEqual(len(self.creates()), 5)  # at most 5 tries (docs/daytona.md)
        self.assertGreaterEqual(len(self.creates()), 2)

    def test_unreachable_api(self):
        r = self.run_cordon(["--", "true"], env=self.env(api="http://127.0.0.1:9"), timeout=120)
        self.assertOneLineError(r, "127.0.0.1")
        self.assertLess(r.elapsed, 60)

    def test_execute_retried_only_when_the_server_did_not_run_it(self):
        fake_faults({"method": "POST", "path": "/process/execute$", "status": 429, "times": 1, "retry_after": 1},
                    {"method": "POST", "path": "/process/execute$", "status": 503, "times": 1})
        r = self.run_cordon(["--", "echo once >> ../count; cat ../count"])
        self.assertEqual((r.rc, r.out), (0, "once\n"), r)
        self.assertEqual([q.get("fault") for q in self.execs()], [429, 503, None])

    def test_execute_not_retried_on_500_502_504(self):
        for status in (500, 502, 504):
            fake_reset()
            fake_faults({"method": "POST", "path": "/process/execute$", "status": status, "times": 5})
            r = self.run_cordon(["--", "true"])
            self.assertOneLineError(r, str(status))
            self.assertEqual(len(self.execs()), 1, status)
            self.assertEqual(fake_state()["live"], 0)

    def test_execute_not_retried_on_a_dropped_connection(self):
        # Prism answers a hang-up with a 500: here the toolbox is the fake itself.
        fake_config(toolbox_url=FAKE + "/toolbox")
        fake_faults({"method": "POST", "path": "/process/execute$", "drop": True, "times": 5})
        r = self.run_cordon(["--", "true"])
        self.assertOneLineError(r)
        self.assertEqual(len(self.execs()), 1)

    def test_other_calls_retried_on_5xx(self):
        fake_faults({"method": "GET", "path": "^/sandbox/[^/]+$", "status": 502, "times": 1},
                    {"method": "POST", "path": "/files/folder$", "status": 503, "times": 1},
                    {"method": "DELETE", "path": "^/sandbox/", "status": 500, "times": 1})
        r = self.run_cordon(["--", "echo fine"])
        self.assertEqual((r.rc, r.out), (0, "fine\n"), r)
        self.assertEqual([q.get("fault") for q in fake_requests("DELETE")], [500, None])
        self.assertEqual([q.get("fault") for q in fake_requests("POST", "/files/folder$")], [503, None])

    def test_create_and_delete_retried_on_dropped_connections(self):
        # Directly against the fake (Prism turns a hang-up into a 500).
        fake_config(toolbox_url=FAKE + "/toolbox")
        fake_faults({"method": "POST", "path": "^/sandbox$", "drop": True, "times": 1},
                    {"method": "DELETE", "path": "^/sandbox/", "drop": True, "times": 1})
        r = self.run_cordon(["--", "echo fine"], env=self.env(api=FAKE))
        self.assertEqual((r.rc, r.out), (0, "fine\n"), r)
        self.assertEqual(len(self.creates()), 2)
        self.assertEqual([q.get("fault") for q in fake_requests("DELETE")], ["drop", None])


class States(CliCase):
    def reason(self):
        return fake_state()["sandboxes"][0]["errorReason"]

    def test_error_state(self):
        p = self.profile("[daytona]\nsnapshot = fake-error\n")
        r = self.run_cordon(["-p", p, "--", "true"])
        self.assertOneLineError(r, self.reason())
        self.assertEqual(self.execs(), [])

    def test_build_failed(self):
        p = self.profile("[daytona]\nimage = fake-build-failed\n")
        r = self.run_cordon(["-p", p, "--", "true"])
        self.assertOneLineError(r, self.reason())
        self.assertIn("build_failed", fake_state()["sandboxes"][0]["history"])
        self.assertEqual(self.execs(), [])

    def test_never_started(self):
        p = self.profile("[daytona]\nsnapshot = fake-never\nstart_timeout = 3\n")
        r = self.run_cordon(["-p", p, "--", "true"])
        self.assertOneLineError(r, "starting")
        self.assertGreaterEqual(r.elapsed, 3)
        self.assertLess(r.elapsed, 3 + 5)
        self.assertEqual(len(fake_requests("DELETE")), 1)

    def test_slow_start_is_waited_for(self):
        p = self.profile("[daytona]\nsnapshot = fake-slow\n")
        r = self.run_cordon(["-p", p, "--", "echo up"])
        self.assertEqual((r.rc, r.out), (0, "up\n"))

    def test_bad_start_timeout(self):
        for v in ("-1", "x", "2.5.1"):
            p = self.profile("[daytona]\nstart_timeout = %s\n" % v)
            r = self.run_cordon(["-p", p, "--", "true"])
            self.assertOneLineError(r, "start_timeout")
        self.assertEqual(fake_state()["requests"], [])


class Signals(CliCase):
    def interrupt(self, sig, marker, codes, fmt="text"):
        p = self.spawn(["--backend", "daytona", "--timeout", "60", "--format", fmt, "--", "sleep %s" % marker])
        try:
            # Running: the fake has it (cordon's own arguments name the command too).
            running = lambda: sum(s["running"] for s in fake_state()["sandboxes"])  # noqa: E731
            if not wait_until(lambda: running() or p.poll() is not None, 30):
                self.fail("the command never started in the fake")
            self.assertTrue(processes_with("sleep " + marker))
            if p.poll() is not None:
                err = p.stderr.read().decode()
                if NOT_BUILT in err:
                    self.fail("cordon has no Daytona backend in this build: this contract test waits for it")
                self.fail("cordon ended before the signal: %s" % err)
            t = time.monotonic()
            p.send_signal(sig)
            rc = p.wait(15)
            self.assertLess(time.monotonic() - t, 5, "cordon took too long to end after the signal")
            self.assertIn(rc, codes)
            out = p.stdout.read().decode()
            if rc == 128 + sig:
                # The run was terminated by that signal, said as every backend says it
                # (docs/compat.md, "Signals to cordon"); before, the text said 137.
                if fmt == "json":
                    j = json.loads(out)
                    self.assertEqual((j["output"], j["exit_code"], j["signal"], j["timed_out"]),
                                     ("[exit code: -%d]" % sig, -sig, sig, False), out)
                else:
                    self.assertEqual(out, "[exit code: -%d]\n" % sig)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
            p.stderr.close()
        self.assertEqual(fake_state()["live"], 0)
        self.assertEqual(fake_requests("DELETE")[-1]["status"], 200)
        self.assertTrue(wait_until(lambda: processes_with("sleep " + marker) == [], 5))

    def test_sigterm_deletes_the_sandbox(self):
        self.interrupt(signal.SIGTERM, "30.701", (143, 125))

    def test_sigint_deletes_the_sandbox(self):
        self.interrupt(signal.SIGINT, "30.702", (130, 125))

    def test_sigterm_is_the_runs_end_in_json(self):
        # Cut short in the execute call: a result, not an error (125).
        self.interrupt(signal.SIGTERM, "30.703", (143,), fmt="json")


class HostileServer(CliCase):
    """A server that misbehaves (found in review): cordon keeps its deadlines and the key."""

    def test_dripping_answer_ends_at_the_runs_deadline(self):
        # Straight to the fake: Prism would buffer the body. Headers at once, then a byte every
        # 0.2 s: the run's timeout (1 s) + the execute's grace (10 s) + a body's 30 s, not
        # for ever (before: still hanging after 90 s).
        fake_config(toolbox_url=FAKE + "/toolbox")
        r = self.run_cordon(["--timeout", "1", "--", "cordon-fake-drip"], env=self.env(api=FAKE), timeout=120)
        self.assertEqual(r.rc, 124, r)
        self.assertLess(r.elapsed, 60, r)
        self.assertNoKey(r)

    def test_error_reason_never_shows_the_key(self):
        p = self.profile("[daytona]\nsnapshot = fake-error-key\n")
        r = self.run_cordon(["-p", p, "--", "true"])
        self.assertIn(KEY, fake_state()["sandboxes"][0]["errorReason"])  # the fake did echo it
        self.assertOneLineError(r, "quota for key")
        self.assertNotIn(KEY[:8], r.err)

    def test_plain_http_never_goes_through_a_proxy(self):
        # http_proxy from the environment would carry the key in clear text over the network.
        seen = []
        srv = socket.socket(socket.AF_INET)
        srv.bind(("127.0.0.1", 0))
        srv.listen(4)
        srv.settimeout(0.2)
        stop = threading.Event()

        def serve():
            while not stop.is_set():
                try:
                    c, _ = srv.accept()
                except OSError:
                    continue
                seen.append(c.recv(4096))
                c.close()

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        proxy = "http://127.0.0.1:%d" % srv.getsockname()[1]
        try:
            r = self.run_cordon(["--", "echo fine"], env=self.env(http_proxy=proxy, HTTP_PROXY=proxy, ALL_PROXY=proxy))
        finally:
            stop.set()
            t.join()
            srv.close()
        self.assertEqual((r.rc, r.out), (0, "fine\n"), r)
        self.assertEqual(seen, [], "the proxy was sent: %r" % seen[:1])


class HostileCommand(CliCase):
    """What a command (or its text) can make of cordon's own messages (found in red team)."""

    def test_a_signal_death_is_one_clean_line(self):
        # A command killed by a signal is Daytona's exitCode -1 with its output as "result":
        # that output went into cordon's error as is, newlines and terminal escapes included.
        r = self.run_cordon(["--", "printf 'first\\nsecond\\033[2J'; kill -KILL 0"])
        self.assertOneLineError(r, "could not start", "first")
        self.assertNotIn("\x1b", r.err)
        self.assertNotIn("second", r.err)

    def test_invalid_utf8_command_or_env_is_said_so(self):
        # JSON cannot carry it: one line naming the problem (before: "out of memory").
        for args in ([b"--", b"printf '\xff'"], [b"--env", b"X=\xfe", b"--", b"true"]):
            p = subprocess.run([CORDON.encode(), b"run", b"--backend", b"daytona"] + args, env=self.env(),
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=90)
            r = Run(p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"), 0)
            self.assertOneLineError(r, "UTF-8")
            self.assertNotIn("memory", r.err)


# --- what cordon gc compares (backends/daytona/orphan.c), computed here the same way ----------

# cordon's application id: its labels are systemd's app-specific ids under it, so that
# `systemd-id128 machine-id --app-specific=<this>` prints cordon.machine.
APP_ID = bytes.fromhex("4a227b85224b4703913e67e6aa892d91")
DEAD_OWNER = "999999999:1"  # above any pid_max


def app_specific(key):
    d = bytearray(hmac.new(key, APP_ID, hashlib.sha256).digest()[:16])
    d[6] = (d[6] & 0x0F) | 0x40
    d[8] = (d[8] & 0x3F) | 0x80
    return d.hex()


def this_machine():
    """(cordon.machine, whether it comes from /etc/machine-id): else from the hostname."""
    try:
        with open("/etc/machine-id") as f:
            text = f.read(63)
    except OSError:
        text = ""
    if re.fullmatch(r"[0-9a-fA-F]{32}\n?", text) and int(text, 16):
        return app_specific(bytes.fromhex(text.strip())), True
    return "host-" + app_specific((socket.gethostname() or "unknown").encode()), False


def this_boot():
    with open("/proc/sys/kernel/random/boot_id") as f:
        return app_specific(uuid.UUID(f.read().strip()).bytes)


def this_pidns():
    v = str(os.stat("/proc/self/ns/pid").st_ino)
    if os.path.exists("/proc/self/ns/time"):
        v += "-%d" % os.stat("/proc/self/ns/time").st_ino
    return v


def boot_start():
    return time.clock_gettime(time.CLOCK_REALTIME) - time.clock_gettime(time.CLOCK_BOOTTIME)


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t))


MACHINE, MACHINE_FROM_ID = this_machine()


class Gc(CliCase):
    """cordon gc --backend daytona: only the sandboxes it can prove are orphans of this machine
    (found in review: a machine, container or cloned VM with the same hostname in the same
    organisation had its running sandboxes deleted, their pids being absent here)."""

    def labels(self, **change):
        """The labels cordon would write here, for a dead owner, with changes (None: absent)."""
        lab = {
            "cordon.session": uuid.uuid4().hex,
            "cordon.host": socket.gethostname(),
            "cordon.owner": DEAD_OWNER,
            "cordon.machine": MACHINE,
            "cordon.boot": this_boot(),
            "cordon.pidns": this_pidns(),
        }
        for k, v in change.items():
            k = "cordon." + k
            if v is None:
                lab.pop(k, None)
            else:
                lab[k] = v
        return lab

    def make(self, labels, created=None):
        r = request(API, "POST", "/sandbox", {"labels": labels})
        self.assertEqual(r.status, 200, r)
        sid = r.json()["id"]
        if created is not None:
            c = request(FAKE, "POST", "/_fake/created", {"id": sid, "createdAt": iso(created)}, key=None)
            self.assertEqual(c.status, 204, c)
        return sid

    def gc(self):
        p = subprocess.run([CORDON, "gc", "--backend", "daytona"], env=self.env(), capture_output=True, timeout=90)
        out = (p.stdout + p.stderr).decode()
        self.assertEqual(p.returncode, 0, out)
        self.assertNotIn(KEY, out)
        return p.stdout.decode()

    def collect(self, gone, kept, skipped):
        """gc deletes exactly gone of gone + kept, and says how many of this machine's it kept."""
        try:
            out = self.gc()
            live = {s["id"] for s in fake_state()["sandboxes"] if s["state"] not in ("destroying", "destroyed")}
            self.assertEqual({i for i in gone + kept if i not in live}, set(gone), out)
            want = "removed %d orphaned sandbox(es)\n" % len(gone)
            if skipped:
                want += ("kept %d sandbox(es) of this machine that cannot be proven orphans from here "
                         "(another pid namespace, a /proc that hides others' processes, or labels "
                         "cordon did not write)\n" % skipped)
            self.assertEqual(out, want)
        finally:
            for i in kept:
                request(API, "DELETE", "/sandbox/%s" % i)

    def test_another_machine_with_this_hostname_is_left_alone(self):
        # Same hostname, same boot id and pid namespace labels, an owner pid not running here:
        # another machine's (or a container's with its own machine id), not ours to judge.
        kept = [
            self.make(self.labels(machine=app_specific(b"another machine id")), created=time.time() - 86400 * 400),
            self.make(self.labels(machine="host-" + app_specific(socket.gethostname().encode()))
                      if MACHINE_FROM_ID else self.labels(machine=app_specific(b"another machine id"))),
        ]
        self.collect([], kept, 0)

    def test_an_earlier_boot_is_an_orphan(self):
        sid = self.make(self.labels(boot=app_specific(b"an earlier boot")), created=boot_start() - 3600)
        if MACHINE_FROM_ID:
            self.collect([sid], [], 0)
        else:
            # From the hostname only, another boot may be another machine of that name, up now.
            self.collect([], [sid], 1)

    def test_another_boot_made_after_this_boot_began_is_kept(self):
        # Not an earlier boot of this machine: another system with this machine id (a cloned
        # image that was not reset), up at the same time.
        sid = self.make(self.labels(boot=app_specific(b"a clone's boot")))
        self.collect([], [sid], 1)

    def test_this_boot_another_pid_namespace_is_kept(self):
        # Another container of this host, with the same hostname and machine id: its owner may
        # run, unseen from here.
        kept = [self.make(self.labels(pidns="1")), self.make(self.labels(pidns=None))]
        self.collect([], kept, 2)

    def test_this_boot_and_pid_namespace_with_the_owner_gone_is_an_orphan(self):
        self.collect([self.make(self.labels())], [], 0)

    def test_a_live_owner_keeps_its_sandbox(self):
        with open("/proc/self/stat") as f:
            start = f.read().rsplit(")", 1)[1].split()[19]
        self.collect([], [self.make(self.labels(owner="%d:%s" % (os.getpid(), start)))], 0)

    def test_old_labels_and_labels_cordon_did_not_write_are_kept(self):
        host = socket.gethostname()
        # An older cordon's sandbox (no machine label; Daytona deletes it once idle), and labels
        # a user (or anyone with the key) set (found in red team: cordon.host alone was enough).
        foreign = [
            self.make({"cordon.session": "a" * 32, "cordon.host": host, "cordon.owner": DEAD_OWNER}),
            self.make({"cordon.host": host}),
            self.make({"cordon.host": host, "cordon.owner": "garbage"}),
            self.make({"cordon.machine": MACHINE}),
        ]
        # This machine's label, the rest not as cordon writes it: counted as kept.
        ours = [
            self.make(self.labels(session="d" * 31)),
            self.make(self.labels(owner="garbage")),
            self.make(self.labels(owner="0:1")),
            self.make(self.labels(boot=None), created=boot_start() - 3600),
            self.make(self.labels(boot="not hex"), created=boot_start() - 3600),
        ]
        self.collect([], foreign + ours, len(ours) + 1)

    def test_a_killed_run_is_collected(self):
        # The labels cordon writes are the ones gc reads: SIGKILL a run, gc deletes its sandbox.
        p = self.spawn(["--backend", "daytona", "--timeout", "60", "--", "sleep 30.801"])
        try:
            if not wait_until(lambda: sum(s["running"] for s in fake_state()["sandboxes"]) or p.poll() is not None,
                              30):
                self.fail("the command never started in the fake")
            self.assertIsNone(p.poll(), p.stderr.read() if p.poll() is not None else "")
            p.kill()
            p.wait()
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
            p.stderr.close()
        sid = fake_state()["sandboxes"][0]["id"]
        self.collect([sid], [], 0)
        self.assertTrue(wait_until(lambda: processes_with("sleep 30.801") == [], 5))

    def test_create_carries_the_machine_boot_and_pid_namespace(self):
        p = self.profile("[daytona]\nlabels = cordon.boot=forged\nlabels = cordon.machine=forged\n")
        r = self.run_cordon(["-p", p, "--", "true"])
        self.assertEqual(r.rc, 0, r)
        lab = self.creates()[0]["json"]["labels"]
        self.assertEqual((lab["cordon.machine"], lab["cordon.boot"], lab["cordon.pidns"]),
                         (MACHINE, this_boot(), this_pidns()))
        self.assertRegex(lab["cordon.session"], r"^[0-9a-f]{32}$")
        self.assertRegex(lab["cordon.owner"], r"^[1-9][0-9]*:[0-9]+$")
        self.assertEqual(lab["cordon.host"], re.sub(r"[^!-~]", "_", socket.gethostname()))
        # Never the ids themselves (machine-id(5): hash them with an application key).
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot_id = f.read().strip()
        sent = json.dumps(lab)
        self.assertNotIn(boot_id, sent)
        self.assertNotIn(boot_id.replace("-", ""), sent)
        if MACHINE_FROM_ID:
            with open("/etc/machine-id") as f:
                self.assertNotIn(f.read().strip().lower(), sent.lower())
        if shutil.which("systemd-id128") and MACHINE_FROM_ID:
            # systemd's own app-specific ids (sd_id128_get_machine_app_specific).
            for what, want in (("machine-id", MACHINE), ("boot-id", this_boot())):
                out = subprocess.run(["systemd-id128", what, "--app-specific=" + APP_ID.hex()],
                                     capture_output=True, text=True)
                if out.returncode == 0:
                    self.assertEqual(out.stdout.strip(), want, what)


class HugeOutput(CliCase):
    def test_a_gigabyte_in_bounded_memory(self):
        # Directly against the fake: Prism buffers whole bodies (and is slow at a gigabyte).
        fake_config(toolbox_url=FAKE + "/toolbox")
        n = 1000 * 1000 * 1000
        cmd = "head -c %d /dev/zero | tr '\\0' a" % n
        want = self.local(["--format", "json", "--timeout", "300", "--", cmd], timeout=400).json()
        rss = os.path.join(self.tmp, "rss")
        r = self.run_cordon(["--format", "json", "--timeout", "300", "--", cmd], env=self.env(api=FAKE), timeout=400,
                            prefix=("/usr/bin/time", "-o", rss, "-f", "%M"))
        self.assertEqual(r.rc, 0, r)
        j = r.json()
        self.assertEqual((j["output"], j["truncated"], j["stdout_bytes"], j["exit_code"]),
                         (want["output"], True, n, 0))
        self.assertTrue(j["output"].endswith("\n[truncated: showing first 100000 of %d chars]" % n))
        with open(rss) as f:
            kb = int(f.read().split()[-1])
        self.assertLess(kb, 64 * 1024, "cordon's peak RSS was %d KB for 1 GB of output" % kb)


if __name__ == "__main__":
    unittest.main(verbosity=2)
