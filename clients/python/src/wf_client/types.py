"""The API's resources as typed values (schemas Task, Submission, ...)."""

from __future__ import annotations

import itertools

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Literal, Optional

TaskStatus = Literal["PENDING", "ACTIVE", "COMPLETED", "FAILED", "DEAD_LETTER", "CANCELLED"]
Scope = Literal["CATALOG", "SYSTEM", "ASSET"]
EventScope = Literal["PLATFORM", "CATALOG", "COLLECTION", "ASSET"]
PauseKind = Literal["task_type", "tenant"]

TERMINAL = ("COMPLETED", "FAILED", "DEAD_LETTER", "CANCELLED")


def parse_time(value: Optional[str]) -> Optional[datetime]:
    """Parses an RFC 3339 time as wf writes it (UTC, 'Z', nanoseconds)."""
    if not value:
        return None
    text = value.replace("Z", "+00:00")
    # Python before 3.11 takes at most 6 fractional digits.
    if "." in text:
        head, _, rest = text.partition(".")
        digits = "".join(itertools.takewhile(str.isdigit, rest))
        zone = rest[len(digits):]
        text = head + "." + digits[:6].ljust(6, "0") + zone
    return datetime.fromisoformat(text)


@dataclass
class Task:
    """One task (schema Task)."""

    task_id: str
    task_type: str
    schema_name: str
    scope: str
    execution_mode: str
    status: str
    inputs: Dict[str, Any]
    priority: int
    attempts: int
    retry_count: int
    max_retries: int
    created_at: Optional[datetime]
    run_after: Optional[datetime]
    status_url: str
    snoozes: int = 0
    outputs: Any = None
    progress: Any = None
    error: Optional[str] = None
    dedup_key: Optional[str] = None
    owner_id: Optional[str] = None
    started_at: Optional[datetime] = None
    finished_at: Optional[datetime] = None
    attempt_history: List[Dict[str, Any]] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def terminal(self) -> bool:
        """True once no runner will pick the task up again."""
        return self.status in TERMINAL

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Task":
        return cls(
            task_id=d["task_id"], task_type=d["task_type"], schema_name=d["schema_name"], scope=d["scope"],
            execution_mode=d["execution_mode"], status=d["status"], inputs=d.get("inputs") or {},
            priority=d.get("priority", 0), attempts=d.get("attempts", 0), retry_count=d.get("retry_count", 0),
            max_retries=d.get("max_retries", 0), created_at=parse_time(d.get("created_at")),
            run_after=parse_time(d.get("run_after")), status_url=d.get("status_url", ""),
            snoozes=d.get("snoozes", 0), outputs=d.get("outputs"), progress=d.get("progress"), error=d.get("error"),
            dedup_key=d.get("dedup_key"), owner_id=d.get("owner_id"), started_at=parse_time(d.get("started_at")),
            finished_at=parse_time(d.get("finished_at")), attempt_history=d.get("attempt_history") or [], raw=d,
        )


@dataclass
class Submission:
    """The answer to a task creation or an ingestion (schema Submission)."""

    task_id: str
    status: str
    status_url: str
    deduplicated: bool
    outputs: Any = None
    error: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Submission":
        return cls(task_id=d["task_id"], status=d["status"], status_url=d.get("status_url", ""),
                   deduplicated=bool(d.get("deduplicated")), outputs=d.get("outputs"), error=d.get("error"))


@dataclass
class TaskPage:
    """One page of a task list; pass next_cursor to get the next."""

    items: List[Task]
    next_cursor: Optional[str]


@dataclass
class Event:
    """An emitted event (schema EmittedEvent)."""

    event_id: str
    event_type: str
    scope: str
    schema_name: str
    payload: Dict[str, Any]
    status: str
    deduplicated: bool
    created_at: Optional[datetime]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Event":
        return cls(event_id=d["event_id"], event_type=d["event_type"], scope=d["scope"], schema_name=d["schema_name"],
                   payload=d.get("payload") or {}, status=d["status"], deduplicated=bool(d.get("deduplicated")),
                   created_at=parse_time(d.get("created_at")))


@dataclass
class Pause:
    """A paused task type or tenant (schema Pause)."""

    kind: str
    name: str
    paused_at: Optional[datetime]
    reason: Optional[str] = None
    paused_by: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Pause":
        return cls(kind=d["kind"], name=d["name"], paused_at=parse_time(d.get("paused_at")),
                   reason=d.get("reason"), paused_by=d.get("paused_by"))
