"""Closing the database waits for SQLite's worker threads: a query whose task was cancelled
goes on in its thread, and must hand back its result before the event loop closes (else
the thread dies with "Event loop is closed", as it did at test teardown under load)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

from hostgate.db.engine import Database
from sqlalchemy import event, text


def test_close_waits_for_a_query_whose_task_was_cancelled(tmp_path, monkeypatch):
    failures: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    running, release = threading.Event(), threading.Event()
    threads: list[threading.Thread] = []

    def block() -> int:
        running.set()
        release.wait(10)
        return 1

    async def main() -> None:
        db = Database(f"sqlite+aiosqlite:///{tmp_path / 'close.db'}")

        @event.listens_for(db.engine.sync_engine, "connect")
        def register(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.create_function("hg_block", 0, block)
            threads.append(dbapi_connection._connection._thread)

        async def query() -> None:
            async with db.session() as session:
                await session.exec(text("SELECT hg_block()"))  # type: ignore[call-overload]

        task = asyncio.create_task(query())
        await asyncio.to_thread(running.wait, 10)  # the query runs in its worker thread
        # cancelled, the session rolls back (queued behind the query); cancelled again, as a
        # shut-down may, the task ends with the query still running
        task.cancel()
        await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        closing = asyncio.create_task(db.close())
        await asyncio.sleep(0.1)
        waited = not closing.done()  # it waits for the query still running in the thread
        release.set()
        await closing
        assert waited

    asyncio.run(main())  # the loop is closed from here on
    release.set()
    for thread in threads:
        thread.join(10)
    assert threads and not any(thread.is_alive() for thread in threads)
    assert failures == []
