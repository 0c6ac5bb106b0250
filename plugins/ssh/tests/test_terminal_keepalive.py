"""SSH terminal keepalive: requests really go out, and a peer that stops answering is dropped.

``hostgate_ssh.terminal`` passes ``KEEPALIVE_INTERVAL`` and ``KEEPALIVE_COUNT_MAX`` to
asyncssh when it opens a terminal; the tests shorten the interval so they need not wait
30 seconds. Against OpenSSH sshd (logging at DEBUG1) the server's log shows the
``keepalive@openssh.com`` global requests arriving on an idle session that stays usable;
against an asyncssh server that is frozen with SIGSTOP (its TCP connection stays open
but nothing answers), only keepalives can notice, and the browser's socket is closed
with the reason.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from typing import Any

import hostgate_ssh.terminal as ssh_terminal
import pytest

from plugins.ssh.tests.test_terminal import ssh_connection
from tests.services.sessions.helpers import Screen, socket_path, ticket_for
from testsupport.asyncssh_shell import AsyncsshShellServer, start_server
from testsupport.peers import serving
from testsupport.sshd import SshdServer
from testsupport.wire import STEP

INTERVAL = 0.2
"""Seconds between keepalive requests in these tests (30 in production)."""

KEEPALIVE_REQUEST = "keepalive@openssh.com"


@pytest.fixture
def short_keepalive(monkeypatch: pytest.MonkeyPatch) -> None:
    """Terminals opened in this test send a keepalive after ``INTERVAL`` idle seconds."""
    monkeypatch.setattr(ssh_terminal, "KEEPALIVE_INTERVAL", INTERVAL)
    monkeypatch.setattr(ssh_terminal, "KEEPALIVE_COUNT_MAX", 2)


@pytest.fixture
def frozen_shell() -> Iterator[AsyncsshShellServer]:
    """An asyncssh shell server of this test's own (the test stops and resumes it)."""
    yield from serving(*start_server())


def with_signal(server: AsyncsshShellServer, sig: signal.Signals) -> None:
    """Send ``sig`` to the server process if it still runs."""
    if server.process.poll() is None:
        os.kill(server.process.pid, sig)


def open_terminal(client: Any, kernel: Any, user: Any, connection: Any) -> Any:
    """The gateway socket of an ssh terminal on ``connection`` (an async context manager)."""
    return client.websocket(socket_path("ssh", ticket_for(kernel, user), connection.id))


async def test_keepalive_requests_reach_sshd_and_the_session_stays_usable(
    client: Any,
    kernel: Any,
    make_user: Any,
    make_connection: Any,
    private_sshd: SshdServer,
    short_keepalive: None,
) -> None:
    """An idle terminal sends ``keepalive@openssh.com`` requests that sshd logs; it still works."""
    private_sshd.extra_config["LogLevel"] = "DEBUG1"
    private_sshd.stop()
    private_sshd.start()
    user = await make_user("alice")
    connection = await ssh_connection(
        make_connection, user, private_sshd, password=private_sshd.password
    )
    async with open_terminal(client, kernel, user, connection) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.step("PS1='$ '; echo ready-$((40+2))", "ready-42")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 6 * STEP  # a bound against a hang, not a timing check
        while private_sshd.log().count(KEEPALIVE_REQUEST) < 3:
            assert loop.time() < deadline, f"no keepalive reached sshd:\n{private_sshd.log()}"
            await asyncio.sleep(INTERVAL)
        await screen.step("echo still-$((40+2))", "still-42")


async def test_a_peer_that_stops_answering_is_dropped_with_the_reason(
    client: Any,
    kernel: Any,
    make_user: Any,
    make_connection: Any,
    frozen_shell: AsyncsshShellServer,
    short_keepalive: None,
) -> None:
    """SIGSTOP the server: keepalives go unanswered and the socket closes saying so."""
    user = await make_user("bob")
    connection = await ssh_connection(
        make_connection, user, frozen_shell, password=frozen_shell.password
    )
    async with open_terminal(client, kernel, user, connection) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.step("echo ready-$((40+2))", "ready-42")
        with_signal(frozen_shell, signal.SIGSTOP)
        try:
            code = await screen.until_closed(timeout=6 * STEP)  # a bound against a hang
        finally:
            with_signal(frozen_shell, signal.SIGCONT)
    assert code == 4003, screen.messages
    assert "not responding to keepalive" in screen.messages[-1]["message"], screen.messages
