"""The asyncio client: the synchronous client's calls, run in a worker
thread each (the standard library has no asynchronous HTTP client), so an
event loop is never blocked."""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Dict, List, Optional

from .client import Client
from .errors import WaitTimeout
from .types import Event, Pause, Submission, Task, TaskPage


class AsyncClient:
    """An asyncio client of one wf server; the same methods as Client, as
    coroutines."""

    def __init__(self, base_url: str, token: str, timeout: float = 30.0) -> None:
        self._sync = Client(base_url, token, timeout)

    async def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args, **kwargs))

    async def enqueue(self, task_type: str, inputs: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Submission:
        return await self._call(self._sync.enqueue, task_type, inputs, **kwargs)

    async def get(self, task_id: str) -> Task:
        return await self._call(self._sync.get, task_id)

    async def wait(self, task_id: str, timeout: float = 60.0, poll: float = 0.25) -> Task:
        """Polls with asyncio.sleep, so waiting holds no thread."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = min(poll, 0.05)
        while True:
            t = await self.get(task_id)
            if t.terminal:
                return t
            if loop.time() >= deadline:
                raise WaitTimeout(f"task {task_id} is still {t.status} after {timeout:g}s")
            await asyncio.sleep(delay)
            delay = min(delay * 2, poll)

    async def list(self, **kwargs: Any) -> TaskPage:
        return await self._call(self._sync.list, **kwargs)

    async def cancel(self, task_id: str) -> Task:
        return await self._call(self._sync.cancel, task_id)

    async def submit_ingestion(self, catalog_id: str, collection_id: str, source: str, **kwargs: Any) -> Submission:
        return await self._call(self._sync.submit_ingestion, catalog_id, collection_id, source, **kwargs)

    async def emit_event(self, event_type: str, payload: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Event:
        return await self._call(self._sync.emit_event, event_type, payload, **kwargs)

    async def pause(self, kind: str, name: str, reason: Optional[str] = None) -> Pause:
        return await self._call(self._sync.pause, kind, name, reason)

    async def resume(self, kind: str, name: str) -> Pause:
        return await self._call(self._sync.resume, kind, name)

    async def pauses(self) -> List[Pause]:
        return await self._call(self._sync.pauses)
