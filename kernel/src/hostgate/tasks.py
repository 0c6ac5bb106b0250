"""Stopping the kernel's background tasks: one way for every service."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("hostgate.tasks")

RECANCEL_SECONDS = 0.5
"""How long a cancelled task has to end before it is cancelled again."""


async def cancel_and_wait(*tasks: asyncio.Task[Any] | None) -> None:
    """Cancel background tasks (``None`` entries are skipped) and wait until each has ended.

    A task that had failed is logged, not raised: its service is stopping anyway,
    and the other tasks must still be stopped. A cancellation of the caller
    itself still propagates (``asyncio.wait`` does not swallow it, unlike
    ``suppress(CancelledError)`` around ``await task``).
    """
    present = [task for task in tasks if task is not None]
    pending = set(present)
    while pending:
        for task in pending:
            task.cancel()
        # a library may swallow the CancelledError (SQLAlchemy's pool logs one thrown
        # into a connection's reset and goes on), so a task still running is cancelled
        # again at its next wait instead of being waited for forever
        _, pending = await asyncio.wait(pending, timeout=RECANCEL_SECONDS)
    for task in present:
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s had failed", task.get_name(), exc_info=task.exception())


async def finish_anyway(cleanup: Awaitable[Any], timeout: float) -> None:
    """Run a clean-up to its end (at most ``timeout`` s) even if the caller is cancelled meanwhile.

    ``asyncio.shield`` alone keeps the clean-up running but lets the caller go on at
    once: a transfer cancelled while it discards its temporary file would give its
    session back, and the session be closed, under the discard still running. The
    cancellation propagates once the clean-up is done; clean-up errors are ignored.
    """
    task = asyncio.ensure_future(cleanup)
    try:
        await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:
        await asyncio.wait({task}, timeout=timeout)
        raise
    finally:
        if not task.done():
            task.cancel()
        elif not task.cancelled():
            task.exception()


class Rerun:
    """Run an async job soon after each request, never two at once, and lose no request.

    A request while the job runs (say, a second access change arriving while the
    first is being re-checked) earns exactly one more round after it, so what
    changed during a round is still seen. The running task is kept in ``tasks``
    (the owner's set, which it waits for or cancels when it stops).
    """

    def __init__(self, job: Callable[[], Awaitable[Any]], tasks: set[asyncio.Task[Any]]) -> None:
        self._job = job
        self._tasks = tasks
        self._running = False
        self._again = False

    def request(self) -> None:
        """Ask for a run: one starts now, or one more follows the run under way."""
        self._again = True
        if self._running:
            return
        self._running = True
        task = asyncio.ensure_future(self._rounds())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _rounds(self) -> None:
        try:
            while self._again:
                self._again = False
                await asyncio.sleep(0)
                await self._job()
        finally:
            self._running = False
