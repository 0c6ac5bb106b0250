"""Default plugin: the ``track_event`` hook feeds every audit event to the notification rules.

Listed in ``hostgate.plugins.DEFAULT_PLUGINS``; the plugin host calls it in
isolation, so a failure here is logged and never reaches the request that
caused the event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...markers import hookimpl

if TYPE_CHECKING:
    from ...contract import KernelAPI
    from ...descriptors import AuditEvent


@hookimpl
def track_event(event: AuditEvent, kernel: KernelAPI) -> None:
    """Match the event against the rules and queue deliveries (never blocks)."""
    notifications = getattr(kernel, "notifications", None)
    if notifications is not None:
        notifications.on_event(event)
