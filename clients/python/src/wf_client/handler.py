"""A helper for exec handlers: programs that wf runs, one per task, with
the task as JSON on stdin, a file descriptor for per-record envelopes
(WF_RECORDS_FD, 3), stdout for the outputs and the exit status for the
outcome (0 done, 3 permanent failure, 75 snooze, anything else a retry).

    from wf_client.handler import run, Permanent, Snooze

    def handle(task, records):
        if "path" not in task.inputs:
            raise Permanent("inputs.path is required")
        for row in read(task.inputs["path"]):
            records.success(properties=row, id=row["id"])
        return {"rows": records.count}

    run(handle)

``handle`` returns the outputs (any JSON value, or None). Raising
Permanent fails the task without a retry; Snooze(delay) puts it off
without counting a retry; any other exception is a failure wf retries.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import IO, Any, Callable, Dict, NoReturn, Optional, Union

from .types import Task

EXIT_PERMANENT = 3
EXIT_SNOOZE = 75


class Permanent(Exception):
    """A failure that retrying cannot fix (bad inputs): the task is FAILED."""


class Snooze(Exception):
    """Come back later, without counting a retry: the task is PENDING again
    after delay (seconds, or a duration such as '90s', '5m')."""

    def __init__(self, delay: Union[float, int, str] = 60, reason: str = "") -> None:
        super().__init__(reason or f"snoozed for {delay}")
        self.delay = delay
        self.reason = reason


class Records:
    """The per-record channel: one envelope (schemas/envelope.schema.json)
    per line on WF_RECORDS_FD, flushed at once so wf's progress moves while
    the handler runs."""

    def __init__(self, stream: Optional[IO[str]]) -> None:
        self._stream = stream
        self.count = 0

    def emit(self, status: str, properties: Optional[Dict[str, Any]] = None, *, message: Optional[str] = None,
             id: Optional[str] = None, geometry: Any = None, stats: Optional[Dict[str, Any]] = None,
             system: Optional[Dict[str, Any]] = None) -> None:
        """Reports one record: status SUCCESS, REJECTED or FAILED."""
        record: Dict[str, Any] = {"type": "Feature", "properties": properties or {}, "stats": stats or {},
                                  "system": system or {}}
        if id is not None:
            record["id"] = id
        if geometry is not None:
            record["geometry"] = geometry
        env: Dict[str, Any] = {"status": status, "record": record}
        if message is not None:
            env["message"] = message
        self.count += 1
        if self._stream is not None:
            self._stream.write(json.dumps(env, separators=(",", ":")) + "\n")
            self._stream.flush()

    def success(self, properties: Optional[Dict[str, Any]] = None, **kw: Any) -> None:
        self.emit("SUCCESS", properties, **kw)

    def rejected(self, properties: Optional[Dict[str, Any]], message: str, **kw: Any) -> None:
        self.emit("REJECTED", properties, message=message, **kw)

    def failed(self, properties: Optional[Dict[str, Any]], message: str, **kw: Any) -> None:
        self.emit("FAILED", properties, message=message, **kw)


def read_task(stdin: Optional[IO[str]] = None) -> Task:
    """Reads the task wf wrote on stdin."""
    return Task.from_json(json.load(stdin or sys.stdin))


def _records_stream() -> Optional[IO[str]]:
    fd = os.environ.get("WF_RECORDS_FD")
    if not fd:
        return None
    try:
        return os.fdopen(int(fd), "w", buffering=1, encoding="utf-8")
    except OSError:
        return None  # run by hand, without the descriptor


def run(handle: Callable[[Task, Records], Any]) -> NoReturn:
    """Runs handle on the task from stdin and exits with the status wf reads."""
    try:
        task = read_task()
    except (ValueError, KeyError) as e:
        print(f"the task on stdin is not a wf task: {e}", file=sys.stderr)
        sys.exit(EXIT_PERMANENT)
    records = Records(_records_stream())
    try:
        outputs = handle(task, records)
    except Permanent as e:
        print(str(e), file=sys.stderr)
        sys.exit(EXIT_PERMANENT)
    except Snooze as e:
        delay = e.delay if isinstance(e.delay, str) else f"{float(e.delay):g}"
        sys.stdout.write(delay + "\n")
        if e.reason:
            print(e.reason, file=sys.stderr)
        sys.exit(EXIT_SNOOZE)
    except Exception:
        traceback.print_exc(file=sys.stderr)
        sys.exit(1)
    if outputs is not None:
        sys.stdout.write(json.dumps(outputs) + "\n")
    sys.stdout.flush()
    sys.exit(0)
