"""Errors raised by the wf client."""

from __future__ import annotations

from typing import Any, Dict, List, Optional


class WFError(Exception):
    """A request wf refused or could not answer: an RFC 9457 problem.

    ``status`` is the HTTP status (0 when no answer came), ``type`` and
    ``title`` the problem's, ``detail`` what was wrong, ``errors`` the
    field errors (each with a JSON ``pointer`` or a ``parameter``).
    """

    def __init__(self, status: int, title: str, detail: str = "", type: str = "",
                 errors: Optional[List[Dict[str, Any]]] = None) -> None:
        super().__init__(f"{status} {title}: {detail}" if detail else f"{status} {title}")
        self.status = status
        self.title = title
        self.detail = detail
        self.type = type
        self.errors = errors or []


class NotFound(WFError):
    """404: no such task, catalog or operation (or another tenant's)."""


class Conflict(WFError):
    """409: the change does not apply to the resource's current state."""


class WaitTimeout(Exception):
    """wait() gave up before the task ended."""
