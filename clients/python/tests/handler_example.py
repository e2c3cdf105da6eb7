"""An exec handler written with wf_client.handler, run by wf in the tests
(task types py_echo, py_permanent, py_snooze)."""

import os
import sys

# WF_CLIENT_INSTALLED=1 tests the copy pip installed (TestPythonClient does);
# otherwise the checkout's src/ is imported.
if not os.environ.get("WF_CLIENT_INSTALLED"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from wf_client.handler import Permanent, Snooze, run  # noqa: E402


def handle(task, records):
    mode = task.inputs.get("mode", "echo")
    if mode == "permanent":
        raise Permanent("inputs.mode says: fail for good")
    if mode == "snooze" and task.snoozes == 0:
        raise Snooze(0, "not yet")
    if mode == "crash":
        raise RuntimeError("a bug")
    for i in range(int(task.inputs.get("records", 0))):
        if i % 2:
            records.rejected({"i": i}, "odd")
        else:
            records.success({"i": i}, id=str(i))
    return {"echo": task.inputs, "emitted": records.count, "snoozes": task.snoozes}


run(handle)
