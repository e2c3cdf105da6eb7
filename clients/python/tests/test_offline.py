"""Tests that need no server: webhook round trips and the exec-handler
helper's protocol, run as wf runs a handler."""

import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
# WF_CLIENT_INSTALLED=1 tests the copy pip installed (TestPythonClient does);
# otherwise the checkout's src/ is imported.
if not os.environ.get("WF_CLIENT_INSTALLED"):
    sys.path.insert(0, os.path.join(HERE, "..", "src"))

from wf_client import webhooks  # noqa: E402
from wf_client.types import parse_time  # noqa: E402


class WebhookRoundTrip(unittest.TestCase):
    def test_standard_spec_example(self):
        # The example of the Standard Webhooks specification's reference libraries.
        secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        h = {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
             "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}
        webhooks.verify_standard(secret, h, b'{"test": 2432232314}', now=1614265330)

    def test_wf_round_trip(self):
        sig = webhooks.sign_wf("s3cret", "100", b"{}")
        webhooks.verify_wf("s3cret", {"x-wf-timestamp": "100", "x-wf-signature": sig}, b"{}", now=100)
        with self.assertRaises(webhooks.SignatureError):
            webhooks.verify_wf("s3cret", {"x-wf-timestamp": "100"}, b"{}", now=100)


def run_handler(task, records_fd=True):
    """Runs handler_example.py as wf's exec runner does: the task on stdin,
    envelopes on file descriptor 3 (WF_RECORDS_FD)."""
    r, w = os.pipe()
    env = dict(os.environ, WF_RECORDS_FD="3")
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "handler_example.py")], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, pass_fds=tuple({w, 3}),
                         preexec_fn=lambda: os.dup2(w, 3))
    os.close(w)
    out, err = p.communicate(json.dumps(task).encode())
    with os.fdopen(r) as f:
        lines = [json.loads(x) for x in f.read().splitlines() if x.strip()]
    return p.returncode, out.decode(), err.decode(), lines


def task(**inputs):
    return {"task_id": "01890000-0000-7000-8000-000000000001", "task_type": "py_echo", "schema_name": "system",
            "scope": "SYSTEM", "execution_mode": "ASYNCHRONOUS", "status": "ACTIVE", "inputs": inputs,
            "priority": 0, "retry_count": 0, "max_retries": 3, "attempts": 1, "snoozes": 0,
            "timestamp": "2026-01-01T00:00:00.123456789Z", "run_after": "2026-01-01T00:00:00Z"}


class HandlerProtocol(unittest.TestCase):
    def test_outputs_and_records(self):
        code, out, err, lines = run_handler(task(records=3))
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["emitted"], 3)
        self.assertEqual([x["status"] for x in lines], ["SUCCESS", "REJECTED", "SUCCESS"])
        self.assertEqual(lines[1]["message"], "odd")
        for x in lines:
            self.assertEqual(set(x["record"]), {"type", "properties", "stats", "system"} | ({"id"} if "id" in x["record"] else set()))

    def test_exit_statuses(self):
        self.assertEqual(run_handler(task(mode="permanent"))[0], 3)
        code, out, err, _ = run_handler(task(mode="snooze"))
        self.assertEqual((code, out.strip(), err.strip()), (75, "0", "not yet"))
        code, _, err, _ = run_handler(task(mode="crash"))
        self.assertEqual(code, 1)
        self.assertIn("a bug", err)

    def test_parse_time_nanoseconds(self):
        self.assertEqual(parse_time("2026-01-01T00:00:00.123456789Z").microsecond, 123456)

    def test_parse_time_keeps_the_zone(self):
        # Go trims trailing zeros of the fraction, so times of one task come
        # with and without one; all must be aware and comparable.
        with_fraction = parse_time("2026-01-01T00:00:00.5Z")
        whole = parse_time("2026-01-01T00:00:01Z")
        offset = parse_time("2026-01-01T01:00:00.25+01:00")
        for t in (with_fraction, whole, offset):
            self.assertIsNotNone(t.tzinfo, t)
        self.assertEqual((whole - with_fraction).total_seconds(), 0.5)
        self.assertEqual((with_fraction - offset).total_seconds(), 0.25)


@unittest.skipUnless(os.environ.get("WF_CLIENT_INSTALLED"), "WF_CLIENT_INSTALLED is not set: the checkout's src/ is under test")
class InstalledCopy(unittest.TestCase):
    def test_imports_the_installed_package(self):
        # pip install put wf_client in this interpreter's environment, with
        # its type marker, and nothing was imported from a checkout.
        import wf_client

        here = os.path.realpath(wf_client.__file__)
        self.assertTrue(here.startswith(os.path.realpath(sys.prefix) + os.sep), here)
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(here), "py.typed")))
        from importlib import metadata

        self.assertEqual(metadata.version("wf-client"), os.environ["WF_CLIENT_VERSION"])


if __name__ == "__main__":
    unittest.main()
