"""What a service registers to run when the gateway starts, stops or reloads its state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol


class Lifecycle(Protocol):
    """The kernel's start, stop and reload hooks (``hostgate.kernel.Kernel`` provides them)."""

    def on_start(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Run ``hook`` at start-up, after the database and settings are ready."""

    def on_stop(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Run ``hook`` at shut-down, before the database closes (reverse order)."""

    def on_reload(self, hook: Callable[[], Awaitable[object]]) -> None:
        """Run ``hook`` whenever the database was replaced (a restore) to re-read state."""
