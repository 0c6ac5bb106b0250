"""The notifications pack's hooks: its routes, its service's life, and every audit event.

``track_event`` hands each committed audit entry (``session.*``, ``auth.*``, every
pack's events) to the rules; the plugin host calls it in isolation, so a failure
here is logged and never reaches the request that caused the event.
"""

from __future__ import annotations

from hostgate import AuditEvent, KernelAPI, hookimpl
from quart import Blueprint

from .routes import blueprint
from .service import STATE_KEY, Notifications


@hookimpl
def register_blueprints() -> list[Blueprint]:
    """``/api/v1/notifications``: channels, rules, recipients, the delivery log."""
    return [blueprint]


@hookimpl
async def startup(kernel: KernelAPI) -> None:
    """Load the rules, resume pending deliveries, start the workers."""
    notifications = Notifications(kernel, kernel.config.plugin("notifications"))
    kernel.state[STATE_KEY] = notifications
    await notifications.start()


@hookimpl
async def shutdown(kernel: KernelAPI) -> None:
    """Store what is still in the intake as pending deliveries, then stop."""
    notifications = kernel.state.get(STATE_KEY)
    if isinstance(notifications, Notifications):
        await notifications.stop()


@hookimpl
async def database_replaced(kernel: KernelAPI) -> None:
    """A restore replaced the database: re-read the rules."""
    notifications = kernel.state.get(STATE_KEY)
    if isinstance(notifications, Notifications):
        await notifications.reload_rules()


@hookimpl
def track_event(event: AuditEvent, kernel: KernelAPI) -> None:
    """Match the event against the rules and queue deliveries (never blocks)."""
    notifications = kernel.state.get(STATE_KEY)
    if isinstance(notifications, Notifications):
        notifications.on_event(event)
