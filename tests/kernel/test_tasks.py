"""``cancel_and_wait`` (how every service stops its tasks) and ``Rerun`` (re-checks on change)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from hostgate.tasks import Rerun, cancel_and_wait


async def test_running_tasks_are_cancelled_and_awaited() -> None:
    """Every task given has ended when the call returns; ``None`` entries are skipped."""
    cleaned: list[str] = []

    async def forever(name: str) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # clean-up that itself awaits must have run too
            cleaned.append(name)

    first = asyncio.create_task(forever("first"))
    second = asyncio.create_task(forever("second"))
    await asyncio.sleep(0)
    await cancel_and_wait(first, None, second)
    assert first.cancelled() and second.cancelled()
    assert sorted(cleaned) == ["first", "second"]


async def test_a_failed_task_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    """A task that had crashed does not stop the others from being stopped."""

    async def crash() -> None:
        raise RuntimeError("worker broke")

    crashed = asyncio.create_task(crash(), name="crashing-worker")
    waiting = asyncio.create_task(asyncio.Event().wait())
    await asyncio.sleep(0)
    with caplog.at_level(logging.ERROR, logger="hostgate.tasks"):
        await cancel_and_wait(crashed, waiting)
    assert waiting.cancelled()
    assert "crashing-worker" in caplog.text and "worker broke" in caplog.text


async def test_the_callers_own_cancellation_propagates() -> None:
    """Cancelling the stopper while it waits cancels it instead of being swallowed."""
    release = asyncio.Event()

    async def slow_to_stop() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await release.wait()  # its clean-up takes a while
            raise

    worker = asyncio.create_task(slow_to_stop())
    await asyncio.sleep(0)
    stopper = asyncio.create_task(cancel_and_wait(worker))
    await asyncio.sleep(0.01)
    assert not stopper.done()
    stopper.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopper
    release.set()
    await asyncio.wait([worker])
    assert worker.cancelled()


async def test_a_task_that_swallowed_the_cancellation_is_cancelled_again() -> None:
    """A loop whose first CancelledError was eaten by a library (SQLAlchemy's pool does,
    in a connection's reset) and that waits again is cancelled at that wait, not
    waited for forever."""
    swallowed: list[int] = []

    async def loop_that_swallows_once() -> None:
        while True:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                if swallowed:
                    raise
                swallowed.append(1)  # what the library did: logged and went on

    task = asyncio.create_task(loop_that_swallows_once())
    await asyncio.sleep(0)
    await asyncio.wait_for(cancel_and_wait(task), 60)
    assert task.cancelled() and swallowed == [1]


async def test_a_rerun_requested_during_a_run_follows_it_once_and_none_overlap() -> None:
    """Requests while the job runs are not lost (one more round) and never run it twice at once."""
    release = asyncio.Event()
    started: list[int] = []
    running = 0
    overlapped = False

    async def job() -> None:
        nonlocal running, overlapped
        running += 1
        overlapped |= running > 1
        started.append(len(started))
        if len(started) == 1:
            await release.wait()
        running -= 1

    tasks: set[asyncio.Task[object]] = set()
    rerun = Rerun(job, tasks)
    rerun.request()
    while not started:
        await asyncio.sleep(0)
    rerun.request()  # during the first round: earns one more
    rerun.request()  # and no third
    release.set()
    while tasks:
        await asyncio.gather(*tasks)
    assert started == [0, 1] and not overlapped
    rerun.request()  # idle again: a new request runs again
    while tasks:
        await asyncio.gather(*tasks)
    assert started == [0, 1, 2]
