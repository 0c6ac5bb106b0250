"""Paste rights in the browser terminal, against a real OpenSSH sshd and bash.

bash asks for bracketed paste, so a browser terminal (xterm.js) wraps each paste in
``ESC[200~`` ... ``ESC[201~``; with ``clipboard.paste`` denied the gateway drops what
is between them (the shell never sees it), tells the socket and audits it.
"""

from __future__ import annotations

from typing import Any

from hostgate.db.models.connections import Connection

from tests.services.sessions.helpers import Screen, socket_path, ticket_for

START, END = "\x1b[200~", "\x1b[201~"


async def ssh_box(kernel: Any, make_connection: Any, user: Any, sshd: Any, **actions: bool) -> Any:
    connection = await make_connection(
        user, "ssh", sshd.host, sshd.port, username=sshd.username, password=sshd.password
    )
    async with kernel.db.session() as session:
        row = await session.get(Connection, connection.id)
        assert row is not None
        row.actions = actions
        session.add(row)
        await session.commit()
    return connection


async def shell(client: Any, kernel: Any, user: Any, connection: Any) -> Any:
    path = socket_path("ssh", ticket_for(kernel, user), connection.id)
    return client.websocket(path)


async def test_a_denied_paste_never_reaches_the_shell(
    client, kernel, make_user, make_connection, sshd
):
    user = await make_user("alice")
    denied = await ssh_box(kernel, make_connection, user, sshd, paste=False)
    async with await shell(client, kernel, user, denied) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.step("PS1='$ '", "$ ")
        # one paste in one message, then one cut across two messages
        await screen.send(f"echo A-{START}PASTED{END}-C")
        await screen.send(f"-{START}PAS")
        await screen.send(f"TED-TOO{END}-D\r")
        await screen.until("A--C--D\r\n")
        await screen.prompt()
        assert b"PASTED" not in screen.output
        refused = [m for m in screen.messages if m.get("type") == "refused"]
        assert [m["action"] for m in refused] == ["paste", "paste"]
        assert "Pasting is not allowed" in refused[0]["message"]
    response = await client.get(
        "/api/v1/audit?eventType=session.action_denied", headers=user.headers
    )
    entries = (await response.get_json())["entries"]
    assert [e["details"]["action"] for e in entries] == ["paste", "paste"]


async def test_an_allowed_paste_is_typed(client, kernel, make_user, make_connection, sshd):
    user = await make_user("bob")
    allowed = await ssh_box(kernel, make_connection, user, sshd)
    async with await shell(client, kernel, user, allowed) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.step("PS1='$ '", "$ ")
        await screen.send(f"echo A-{START}PASTED{END}-C\r")
        await screen.until("A-PASTED-C\r\n")
