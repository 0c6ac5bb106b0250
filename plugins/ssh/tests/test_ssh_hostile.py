"""A hostile SSH server: banners without end, endless keyboard-interactive, an output flood.

The gateway ends each login with a reason the user sees (the socket's error message
and the ``session_failed`` audit entry), keeps its memory bounded while a shell
floods it (the SSH window holds the server back while the browser reads slowly),
and answers ``/health`` meanwhile.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import websockets
from hostgate_ssh.client import MAX_BANNER_CHARS, MAX_KBDINT_ROUNDS

from plugins.ssh.tests.test_terminal import ssh_path
from tests.services.sessions.helpers import Screen
from testsupport.hostile.memory import MIB, peak_growth
from testsupport.hostile.ssh import BANNERS, TEXT, HostileSsh


async def hostile_connection(
    make_connection: Any, owner: Any, server: HostileSsh, user: str, port: int | None = None
) -> Any:
    return await make_connection(
        owner,
        "ssh",
        server.host,
        port or server.port,
        name=f"hostile {user}",
        username=user,
        password=server.password,
    )


async def failed_login(client: Any, kernel: Any, owner: Any, connection: Any) -> tuple[int, str]:
    """Open the terminal; the close code and the error message the user is shown."""
    async with client.websocket(ssh_path(kernel, owner, connection.id)) as socket:
        screen = Screen(socket)
        code = await screen.until_closed()
        errors = [m["message"] for m in screen.messages if m.get("type") == "error"]
    return code, errors[-1] if errors else ""


async def audit_errors(client: Any, owner: Any) -> list[str]:
    response = await client.get(
        "/api/v1/audit?eventType=connection.session_failed", headers=owner.headers
    )
    return [entry["details"]["error"] for entry in (await response.get_json())["entries"]]


@pytest.mark.parametrize(
    ("user", "reason"),
    [
        ("banners", f"more than {MAX_BANNER_CHARS // 1024} KiB of login banners"),
        ("prompts", f"more than {MAX_KBDINT_ROUNDS} keyboard-interactive challenges"),
        ("raw", "Too many banner lines"),
    ],
)
async def test_a_login_the_server_drags_on_ends_with_a_reason(
    client,
    kernel,
    make_user,
    make_connection,
    hostile_ssh,
    user,
    reason,
):
    owner = await make_user("alice")
    port = hostile_ssh.raw_port if user == "raw" else hostile_ssh.port
    connection = await hostile_connection(make_connection, owner, hostile_ssh, user, port)
    with peak_growth() as growth:
        task = asyncio.ensure_future(failed_login(client, kernel, owner, connection))
        while not task.done():
            assert (await client.get("/health")).status_code == 200
            await asyncio.sleep(0.05)
        code, message = task.result()
    assert code == 4003
    assert reason in message
    assert any(reason in error for error in await audit_errors(client, owner))
    # the banners' 32 MB were never held: the guard stopped reading them at its bound
    assert BANNERS * len(TEXT) > 30 * MIB
    assert growth.grown < 30 * MIB, growth
    assert hostile_ssh.password not in json.dumps(await audit_errors(client, owner))


async def test_a_shell_that_never_stops_writing_is_held_back_by_the_browser(
    live_server,
    make_user,
    make_connection,
    hostile_ssh,
):
    owner = await make_user("alice")
    connection = await hostile_connection(make_connection, owner, hostile_ssh, "flood")
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        ticket = (await http.post("/api/v1/auth/ws-ticket", headers=owner.headers)).json()["ticket"]
        url = f"{live_server.ws_url}/ws/ssh?ticket={ticket}&connectionId={connection.id}"
        with peak_growth() as growth:
            async with websockets.connect(
                url, max_queue=4, max_size=None, close_timeout=1
            ) as socket:
                received = 0
                while received < 2 * MIB:
                    frame = await socket.recv()
                    if isinstance(frame, bytes):
                        received += len(frame)
                # the browser stops reading: the window and the sockets' buffers fill,
                # and the gateway stops reading from the server instead of buffering it:
                # the server's count comes to rest (checked while /health answers)
                previous = -1
                for _ in range(200):
                    assert (await http.get("/health")).status_code == 200
                    await asyncio.sleep(0.1)
                    sent = hostile_ssh.flood_sent()
                    if sent == previous:
                        break
                    previous = sent
                else:
                    raise AssertionError(f"the server never stopped writing ({sent} bytes)")
                assert sent - received < 32 * MIB
    assert growth.grown < 64 * MIB, growth
