"""A live gateway for end-to-end tests: the app served by hypercorn on a free port.

Import the fixture into a test package's ``conftest.py``::

    from tests.services.sessions.live import live_server  # noqa: F401

It serves a second app on the test's database (the ``app`` fixture's users,
tokens and connections are valid there) and yields a :class:`LiveServer` with
``url`` (``http://127.0.0.1:<port>``), ``ws_url`` and the served ``kernel``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from hostgate.app import create_app, kernel_of
from hostgate.closereasons import CloseReason
from hostgate.commands.serve import hypercorn_config
from hypercorn.asyncio import serve

from testsupport.peers import free_port


@dataclass
class LiveServer:
    """A served gateway."""

    url: str
    ws_url: str
    kernel: Any


@contextlib.asynccontextmanager
async def serving(config: Any, plugins: list[object]) -> AsyncIterator[LiveServer]:
    """Serve the app on 127.0.0.1 until the block ends."""
    app = create_app(config, plugins=plugins)
    port = free_port()
    # the production settings (message limits, timeouts), on a free port
    hyper = hypercorn_config(config, bind=f"127.0.0.1:{port}")
    stop = asyncio.Event()

    async def shutdown_trigger() -> None:
        await stop.wait()
        await kernel_of(app).live.close_all("server shutting down", CloseReason.SHUTTING_DOWN)

    task = asyncio.create_task(serve(app, hyper, shutdown_trigger=shutdown_trigger))  # type: ignore[arg-type]
    try:
        for _ in range(400):
            if task.done():
                task.result()
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            break
        yield LiveServer(f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}", kernel_of(app))
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


@pytest.fixture
async def live_server(app: Any, config: Any, plugins: list[object]) -> AsyncIterator[LiveServer]:
    """The gateway served by hypercorn (next to the ``app`` fixture, same database)."""
    async with serving(config, plugins) as server:
        yield server
