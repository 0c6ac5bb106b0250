"""The ``event`` hook that feeds every audit event to the notification rules.

``builtin.py`` re-exports ``event``, so it is registered with the kernel's own
plugin; the plugin host calls it in isolation, so a failure here is logged and
never reaches the request that caused the event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...markers import hookimpl

if TYPE_CHECKING:
    from ...descriptors import AuditEvent
    from ...kernel import Kernel


@hookimpl
def event(event: AuditEvent, kernel: Kernel) -> None:
    """Match the event against the rules and queue deliveries (never blocks)."""
    notifications = getattr(kernel, "notifications", None)
    if notifications is not None:
        notifications.on_event(event)
