"""Client of wf, the declarative task and event engine: its HTTP API (sync
and asyncio), webhook signature verification (wf's scheme and Standard
Webhooks) and a helper for exec handlers. Standard library only."""

from .aio import AsyncClient
from .client import Client
from .errors import Conflict, NotFound, WaitTimeout, WFError
from .types import Event, Pause, Submission, Task, TaskPage

__all__ = ["AsyncClient", "Client", "Conflict", "Event", "NotFound", "Pause", "Submission", "Task", "TaskPage",
           "WaitTimeout", "WFError"]
__version__ = "0.1.0"
