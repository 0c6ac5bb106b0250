"""A socket opened while the database cannot take a write is told so, and leaves nothing.

As the HTTP API answers 503 ``storage_busy``, a session socket closes with 1013 (try
again later) and an ``error`` frame whose reason is ``unavailable``: the shell that was
started is closed again, no session stays live, no history row or recording is kept,
and the same socket opens once the database is free. A refusal raised late in an
opening closes as that refusal; anything else that breaks an opening is a bug: 1011,
and the log has its traceback.
"""

from __future__ import annotations

from typing import Any

import pytest
from hostgate.config import Config
from hostgate.errors import NotFound

from tests.services.sessions.helpers import Screen, socket_path, ticket_for
from testsupport.dblock import write_lock

BUSY_MS = 300


@pytest.fixture
def config(config: Config) -> Config:
    return config.with_overrides(database_busy_timeout_ms=BUSY_MS)


def recordings(kernel: Any) -> list[str]:
    directory = kernel.recordings.directory
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


async def test_a_terminal_opened_while_the_database_is_locked_says_try_again(
    client: Any, kernel: Any, config: Config, shell_connection: Any, caplog: Any
) -> None:
    user, connection = shell_connection
    with write_lock(config.data_dir / "hostgate.db"):
        path = socket_path("localshell", ticket_for(kernel, user), connection.id)
        async with client.websocket(path) as socket:
            screen = Screen(socket)
            assert await screen.until_closed() == 1013
    assert screen.messages[-1] == {
        "type": "error",
        "message": "The database is busy; try again in a moment",
        "reason": "unavailable",
    }
    assert "socket refused (storage_busy)" in caplog.text
    assert "unhandled error" not in caplog.text
    assert kernel.live.count() == 0
    assert recordings(kernel) == []
    listed = await client.get("/api/v1/sessions", headers=user.headers)
    assert (await listed.get_json())["sessions"] == []

    # the database is free again: the same connection opens
    path = socket_path("localshell", ticket_for(kernel, user), connection.id)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.run("echo back-$((6*7))", "back-42")
        await screen.send("exit\r")
        assert await screen.until_closed() == 1000


async def opening_that_raises(
    client: Any, kernel: Any, shell_connection: Any, monkeypatch: Any, error: Exception
) -> tuple[int, dict[str, Any]]:
    """A terminal socket whose opening raises ``error``: its close code and last frame."""

    async def raising(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(kernel.terminal_sessions, "open_terminal", raising)
    user, connection = shell_connection
    path = socket_path("localshell", ticket_for(kernel, user), connection.id)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        code = await screen.until_closed()
    return code, screen.messages[-1]


async def test_a_bug_while_opening_a_terminal_closes_it_as_an_internal_error(
    client: Any, kernel: Any, shell_connection: Any, monkeypatch: Any, caplog: Any
) -> None:
    failure = RuntimeError("a bug while opening")
    code, last = await opening_that_raises(client, kernel, shell_connection, monkeypatch, failure)
    assert code == 1011
    assert last == {"type": "error", "message": "Internal error"}
    assert "unhandled error while opening a socket" in caplog.text
    assert "a bug while opening" in caplog.text


async def test_a_refusal_raised_late_in_an_opening_closes_as_the_refusal(
    client: Any, kernel: Any, shell_connection: Any, monkeypatch: Any, caplog: Any
) -> None:
    refusal = NotFound("Connection not found")
    code, last = await opening_that_raises(client, kernel, shell_connection, monkeypatch, refusal)
    assert code == 4002
    assert last == {"type": "error", "message": "Connection not found", "reason": "not_found"}
    assert "unhandled error" not in caplog.text
