"""The synchronous client of wf's HTTP API (urllib, standard library only)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from .errors import Conflict, NotFound, WaitTimeout, WFError
from .types import Event, Pause, Submission, Task, TaskPage

Duration = Union[str, float, int]


def _duration(d: Duration) -> str:
    """A delay as wf reads it: '5m' as is, a number as seconds."""
    if isinstance(d, str):
        return d
    return f"{float(d):g}s"


def _rfc3339(t: Union[str, datetime]) -> str:
    if isinstance(t, str):
        return t
    if t.tzinfo is None:
        raise ValueError("a datetime for wf needs a time zone (e.g. timezone.utc)")
    return t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


class Client:
    """A client of one wf server.

    ``base_url`` is the server's root (``http://127.0.0.1:8080``), ``token``
    a bearer token whose role allows the calls made (client, worker or
    admin). Every method raises WFError (NotFound, Conflict) when wf
    answers with a problem, and WFError with status 0 when no answer came.
    """

    def __init__(self, base_url: str, token: str, timeout: float = 30.0, user_agent: str = "wf-client-python/0.1") -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.user_agent = user_agent

    # --- transport ----------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, query: Optional[Dict[str, Any]] = None) -> Any:
        """Sends one request and returns its decoded JSON answer (None when empty)."""
        url = self.base_url + path
        if query:
            pairs = []
            for k, v in query.items():
                if v is None:
                    continue
                for item in (v if isinstance(v, (list, tuple)) else [v]):
                    pairs.append((k, str(item)))
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        data = None
        headers = {"Authorization": "Bearer " + self.token, "Accept": "application/json", "User-Agent": self.user_agent}
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raise _problem(e.code, e.read()) from None
        except (urllib.error.URLError, OSError) as e:
            raise WFError(0, "No answer", f"{method} {url}: {e}") from None
        return json.loads(raw) if raw.strip() else None

    # --- tasks ----------------------------------------------------------------

    def enqueue(self, task_type: str, inputs: Optional[Dict[str, Any]] = None, *, schema_name: Optional[str] = None,
                dedup_key: Optional[str] = None, priority: Optional[int] = None,
                run_at: Optional[Union[str, datetime]] = None, run_in: Optional[Duration] = None) -> Submission:
        """Creates a task (POST /tasks). run_at or run_in delay it; a
        SYNCHRONOUS type runs at once and its outputs come back."""
        body: Dict[str, Any] = {"task_type": task_type, "inputs": inputs or {}}
        if schema_name is not None:
            body["schema_name"] = schema_name
        if dedup_key is not None:
            body["dedup_key"] = dedup_key
        if priority is not None:
            body["priority"] = priority
        if run_at is not None:
            body["run_at"] = _rfc3339(run_at)
        if run_in is not None:
            body["run_in"] = _duration(run_in)
        return Submission.from_json(self.request("POST", "/tasks", body))

    def get(self, task_id: str) -> Task:
        """Reads one task, with its attempt history (GET /tasks/{id})."""
        return Task.from_json(self.request("GET", "/tasks/" + urllib.parse.quote(task_id, safe="")))

    def wait(self, task_id: str, timeout: float = 60.0, poll: float = 0.25) -> Task:
        """Polls a task until it ends (COMPLETED, FAILED, DEAD_LETTER,
        CANCELLED) and returns it; raises WaitTimeout after timeout seconds."""
        deadline = time.monotonic() + timeout
        delay = min(poll, 0.05)
        while True:
            t = self.get(task_id)
            if t.terminal:
                return t
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"task {task_id} is still {t.status} after {timeout:g}s")
            time.sleep(delay)
            delay = min(delay * 2, poll)

    def list(self, *, status: Sequence[str] = (), task_type: Sequence[str] = (), schema_name: Sequence[str] = (),
             created_from: Optional[Union[str, datetime]] = None, created_to: Optional[Union[str, datetime]] = None,
             limit: Optional[int] = None, cursor: Optional[str] = None) -> TaskPage:
        """One page of tasks, newest first (GET /tasks)."""
        q: Dict[str, Any] = {"status": list(status), "task_type": list(task_type), "schema_name": list(schema_name),
                             "limit": limit, "cursor": cursor,
                             "created_from": _rfc3339(created_from) if created_from else None,
                             "created_to": _rfc3339(created_to) if created_to else None}
        d = self.request("GET", "/tasks", query=q)
        return TaskPage(items=[Task.from_json(x) for x in d["items"]], next_cursor=d.get("next_cursor"))

    def iter_tasks(self, **filters: Any) -> Iterator[Task]:
        """Every task the filters match, page after page."""
        cursor = None
        while True:
            page = self.list(cursor=cursor, **filters)
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def cancel(self, task_id: str) -> Task:
        """Cancels a PENDING or ACTIVE task (POST /tasks/{id}/cancel)."""
        return Task.from_json(self.request("POST", "/tasks/" + urllib.parse.quote(task_id, safe="") + "/cancel"))

    # --- ingestion and events --------------------------------------------------

    def submit_ingestion(self, catalog_id: str, collection_id: str, source: str, *, format: str, id_attribute: str,
                         asset_id: str, **options: Any) -> Submission:
        """Submits an ingestion (POST /ingestion/{catalog}/{collection});
        options are the other IngestionRequest members (layer, source_crs,
        validity_start, csv)."""
        body = {"source": source, "format": format, "id_attribute": id_attribute, "asset_id": asset_id, **options}
        path = "/ingestion/" + urllib.parse.quote(catalog_id, safe="") + "/" + urllib.parse.quote(collection_id, safe="")
        return Submission.from_json(self.request("POST", path, body))

    def emit_event(self, event_type: str, payload: Optional[Dict[str, Any]] = None, *, scope: Optional[str] = None,
                   schema_name: Optional[str] = None, dedup_key: Optional[str] = None) -> Event:
        """Emits an event of the caller's tenant (POST /events)."""
        body: Dict[str, Any] = {"event_type": event_type, "payload": payload or {}}
        for k, v in (("scope", scope), ("schema_name", schema_name), ("dedup_key", dedup_key)):
            if v is not None:
                body[k] = v
        return Event.from_json(self.request("POST", "/events", body))

    # --- admin -------------------------------------------------------------------

    def pause(self, kind: str, name: str, reason: Optional[str] = None) -> Pause:
        """Pauses a task type (kind 'task_type') or tenant ('tenant', its schema_name)."""
        body: Dict[str, Any] = {"kind": kind, "name": name}
        if reason:
            body["reason"] = reason
        return Pause.from_json(self.request("POST", "/admin/pauses", body))

    def resume(self, kind: str, name: str) -> Pause:
        """Lifts a pause."""
        path = "/admin/pauses/" + urllib.parse.quote(kind, safe="") + "/" + urllib.parse.quote(name, safe="")
        return Pause.from_json(self.request("DELETE", path))

    def pauses(self) -> List[Pause]:
        """What is paused."""
        return [Pause.from_json(x) for x in self.request("GET", "/admin/pauses")["items"]]

    def bulk_cancel(self, *, dry_run: bool = False, **match: Any) -> Dict[str, Any]:
        """Cancels the tasks a filter matches (POST /admin/tasks/cancel):
        status, task_type, schema_name, created_from, created_to, limit, all."""
        return self.request("POST", "/admin/tasks/cancel", {**match, "dry_run": dry_run})

    def bulk_requeue(self, *, dry_run: bool = False, **match: Any) -> Dict[str, Any]:
        """Requeues the dead letters (or FAILED, CANCELLED tasks) a filter
        matches (POST /admin/tasks/requeue)."""
        return self.request("POST", "/admin/tasks/requeue", {**match, "dry_run": dry_run})


def _problem(status: int, raw: bytes) -> WFError:
    """Turns an error answer (a problem document, or anything) into a WFError."""
    try:
        p = json.loads(raw)
    except ValueError:
        p = {}
    if not isinstance(p, dict):
        p = {}
    cls = {404: NotFound, 409: Conflict}.get(status, WFError)
    return cls(status, p.get("title") or "HTTP error", p.get("detail") or raw[:500].decode("utf-8", "replace"),
               p.get("type") or "", p.get("errors"))
