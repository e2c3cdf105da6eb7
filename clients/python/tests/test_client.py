"""The client against a real wf run (started by the Go test
TestPythonClient in cli/, which sets WF_URL and the tokens)."""

import asyncio
import json
import os
import sys
import time
import unittest

# WF_CLIENT_INSTALLED=1 tests the copy pip installed (TestPythonClient does);
# otherwise the checkout's src/ is imported.
if not os.environ.get("WF_CLIENT_INSTALLED"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from wf_client import AsyncClient, Client, Conflict, NotFound, WaitTimeout, WFError  # noqa: E402
from wf_client import webhooks  # noqa: E402

URL = os.environ.get("WF_URL")
# How long a test waits for a task to end: generous, since a loaded machine
# (make test beside other work) can take minutes to run a Python handler.
WAIT = 300

SKIP = "WF_URL is not set: these tests run against a wf server (go test ./cli -run TestPythonClient starts one)"


@unittest.skipUnless(URL, SKIP)
class ClientTest(unittest.TestCase):
    def setUp(self):
        self.admin = Client(URL, os.environ["WF_ADMIN_TOKEN"])
        self.client = Client(URL, os.environ["WF_CLIENT_TOKEN"])

    def test_enqueue_wait_outputs_and_records(self):
        sub = self.admin.enqueue("py_echo", {"records": 5, "word": "hi"})
        self.assertEqual(sub.status, "PENDING")
        self.assertFalse(sub.deduplicated)
        t = self.admin.wait(sub.task_id, timeout=WAIT)
        self.assertEqual(t.status, "COMPLETED", t.error)
        self.assertEqual(t.outputs["echo"], {"records": 5, "word": "hi"})
        self.assertEqual(t.outputs["emitted"], 5)
        self.assertEqual(t.outputs["records"]["rejected"], 2, "the database reporter's counts")
        self.assertEqual(t.progress["total"], 5)
        self.assertIsNotNone(t.finished_at)

    def test_permanent_failure(self):
        t = self.admin.wait(self.admin.enqueue("py_echo", {"mode": "permanent"}).task_id, timeout=WAIT)
        self.assertEqual(t.status, "FAILED")
        self.assertIn("fail for good", t.error)
        self.assertEqual(t.retry_count, 0)

    def test_retryable_failure(self):
        t = self.admin.wait(self.admin.enqueue("py_crash", {"mode": "crash"}).task_id, timeout=WAIT)
        self.assertEqual(t.status, "DEAD_LETTER")
        self.assertIn("a bug", t.error)

    def test_snooze_counts_no_retry(self):
        t = self.admin.wait(self.admin.enqueue("py_echo", {"mode": "snooze"}).task_id, timeout=WAIT)
        self.assertEqual(t.status, "COMPLETED", t.error)
        self.assertEqual(t.snoozes, 1)
        self.assertEqual(t.retry_count, 0)
        self.assertEqual(t.outputs["snoozes"], 1)

    def test_get_list_cancel(self):
        with self.assertRaises(NotFound):
            self.admin.get("01890000-0000-7000-8000-000000000000")
        sub = self.admin.enqueue("noop", run_in="1h", dedup_key=f"later-{time.time_ns()}")
        t = self.admin.get(sub.task_id)
        self.assertEqual(t.status, "PENDING")
        self.assertGreater((t.run_after - t.created_at).total_seconds(), 3500)
        page = self.admin.list(task_type=["noop"], status=["PENDING"], limit=100)
        self.assertIn(sub.task_id, [x.task_id for x in page.items])
        self.assertIn(sub.task_id, [x.task_id for x in self.admin.iter_tasks(task_type=["noop"], limit=1)])
        self.assertEqual(self.admin.cancel(sub.task_id).status, "CANCELLED")
        with self.assertRaises(Conflict):
            self.admin.cancel(sub.task_id)
        with self.assertRaises(WaitTimeout):
            self.admin.wait(self.admin.enqueue("noop", run_in=3600).task_id, timeout=0.2)

    def test_bad_request_is_a_problem(self):
        with self.assertRaises(WFError) as cm:
            self.admin.enqueue("no_such_type")
        self.assertIn(cm.exception.status, (400, 404))
        with self.assertRaises(WFError) as cm:
            Client(URL, "not-a-token").get("01890000-0000-7000-8000-000000000000")
        self.assertEqual(cm.exception.status, 401)

    def test_emit_event_and_ingestion(self):
        ev = self.client.emit_event("py.test", {"n": 1})
        self.assertEqual(ev.event_type, "py.test")
        self.assertEqual(ev.status, "PENDING")
        cat = f"py-{time.time_ns() % 10**9}"
        self.client.request("POST", "/catalogs", {"catalog_id": cat})
        self.client.request("POST", f"/catalogs/{cat}/collections", {"collection_id": "roads"})
        sub = self.client.submit_ingestion(cat, "roads", "roads.geojson", format="geojson",
                                           id_attribute="id", asset_id="roads-1")
        self.assertTrue(sub.task_id)
        self.assertEqual(self.client.get(sub.task_id).task_type, "ingestion")
        with self.assertRaises(WFError) as cm:
            self.client.submit_ingestion(cat, "roads", "file:///etc/passwd", format="geojson", id_attribute="id",
                                         asset_id="a")
        self.assertEqual(cm.exception.status, 400, "a file outside the tenant's folder")
        self.assertTrue(any(e.get("pointer") == "/source" for e in cm.exception.errors), cm.exception.errors)
        with self.assertRaises(NotFound):
            self.client.submit_ingestion(cat, "nope", "x.geojson", format="geojson", id_attribute="id",
                                         asset_id="a")

    def test_admin_pause_and_bulk(self):
        p = self.admin.pause("task_type", "sleep", reason="python test")
        self.assertEqual(p.paused_by, "admin")
        self.assertIn("sleep", [x.name for x in self.admin.pauses()])
        with self.assertRaises(WFError) as cm:
            self.client.pause("task_type", "sleep")
        self.assertEqual(cm.exception.status, 403)
        self.admin.resume("task_type", "sleep")
        with self.assertRaises(NotFound):
            self.admin.resume("task_type", "sleep")
        res = self.admin.bulk_cancel(dry_run=True, task_type=["sleep"])
        self.assertTrue(res["dry_run"])
        self.assertEqual(res["matched"], 0)

    def test_async(self):
        async def go():
            c = AsyncClient(URL, os.environ["WF_ADMIN_TOKEN"])
            subs = await asyncio.gather(*[c.enqueue("py_echo", {"records": 1, "n": i}) for i in range(3)])
            done = await asyncio.gather(*[c.wait(s.task_id, timeout=WAIT) for s in subs])
            return [t.status for t in done], [t.outputs["echo"]["n"] for t in done]

        statuses, ns = asyncio.run(go())
        self.assertEqual(statuses, ["COMPLETED"] * 3)
        self.assertEqual(sorted(ns), [0, 1, 2])


VECTORS = os.environ.get("WF_WEBHOOK_VECTORS")


@unittest.skipUnless(VECTORS, "WF_WEBHOOK_VECTORS is not set: signatures made by wf's Go signer come from TestPythonClient")
class WebhookVectorsTest(unittest.TestCase):
    """Signatures made by wf itself (catalog/webhooks) verify here."""

    def setUp(self):
        with open(VECTORS) as f:
            self.v = json.load(f)
        self.body = self.v["body"].encode()
        self.now = int(self.v["timestamp"])

    def test_wf_scheme(self):
        h = {"X-WF-Timestamp": self.v["timestamp"], "X-WF-Signature": self.v["wf_signature"]}
        webhooks.verify_wf(self.v["wf_secret"], h, self.body, now=self.now)
        webhooks.verify(self.v["wf_secret"], {k.lower(): v for k, v in h.items()}, self.body, now=self.now)
        with self.assertRaises(webhooks.SignatureError):
            webhooks.verify_wf(self.v["wf_secret"], h, self.body + b" ", now=self.now)
        with self.assertRaises(webhooks.SignatureError):
            webhooks.verify_wf(self.v["wf_secret"], h, self.body, now=self.now + 301)
        with self.assertRaises(webhooks.SignatureError):
            webhooks.verify_wf("another secret", h, self.body, now=self.now)

    def test_standard_scheme(self):
        h = {"webhook-id": self.v["id"], "webhook-timestamp": self.v["timestamp"],
             "webhook-signature": "v1,bm90IGl0 " + self.v["standard_signature"]}
        webhooks.verify_standard(self.v["standard_secret"], h, self.body, now=self.now)
        webhooks.verify(self.v["standard_secret"], h, self.body, now=self.now)
        with self.assertRaises(webhooks.SignatureError):
            webhooks.verify_standard(self.v["standard_secret"], {**h, "webhook-id": "msg_other"}, self.body, now=self.now)
        with self.assertRaises(webhooks.SignatureError):
            webhooks.verify_standard(self.v["standard_secret"], h, self.body, now=self.now - 400)
        with self.assertRaises(webhooks.SignatureError):
            webhooks.verify_standard("not-whsec", h, self.body, now=self.now)


if __name__ == "__main__":
    unittest.main()
