"""Default plugin: role, user and connection changes make open sessions re-check access."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .markers import hookimpl
from .services.sessions.session_service import ACCESS_EVENT_PREFIXES

if TYPE_CHECKING:
    from .contract import KernelAPI
    from .descriptors import AuditEvent


@hookimpl
def track_event(event: AuditEvent, kernel: KernelAPI) -> None:
    """Tell open terminal and desktop sessions to re-check their access at once (every node)."""
    kind = event.event_type
    if kind.startswith("connection.session_") or not kind.startswith(ACCESS_EVENT_PREFIXES):
        return
    live = getattr(kernel, "live", None)
    if live is not None:
        live.access_changed()
