"""An aiosqlite connection's worker thread, for a shut-down that waits for it.

aiosqlite runs each connection's queries in a thread of its own and offers no
public way to reach it; ``db.engine`` waits for those threads while the event
loop still runs, so none dies with "Event loop is closed" after it.

Private names used: aiosqlite's ``Connection._thread`` and ``Connection._running``.
Guarded by ``RANGES``; outside them no thread is known, and the shut-down does not
wait (the stock behaviour).
"""

from __future__ import annotations

import threading
from typing import Any

from . import VersionRange, applies

RANGES = (VersionRange("aiosqlite", "0.22.1", "0.23"),)
"""The versions this was written and tested against."""


def worker_thread(connection: Any) -> threading.Thread | None:
    """The thread running ``connection``'s queries (None outside ``RANGES``)."""
    if not applies("aiosqlite.worker_thread", *RANGES):
        return None
    thread = getattr(connection, "_thread", None)
    return thread if isinstance(thread, threading.Thread) else None


def still_working(connection: Any) -> bool:
    """Whether ``connection`` was not stopped and its thread runs (False outside ``RANGES``)."""
    thread = worker_thread(connection)
    return thread is not None and bool(connection._running) and thread.is_alive()
