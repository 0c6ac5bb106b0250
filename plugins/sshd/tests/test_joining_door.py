"""Joining and moderation at the SSH front door (real sshd behind it): the owner's shell
prints who joined and left; a moderated connection's shell waits for a moderator, and
its ``exec`` commands are refused."""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

import asyncssh

from plugins.sshd.tests.door import connect, door_of, make_key, register_key
from tests.services.sessions.helpers import Screen, ticket_for


def join_path(session_id: str, ticket: str, mode: str) -> str:
    return f"/ws/sessions/{session_id}/watch?{urlencode({'ticket': ticket, 'mode': mode})}"


async def read_until(process: asyncssh.SSHClientProcess, wanted: bytes, seen: bytes) -> bytes:
    """Read the shell's output until ``wanted`` is in it (60 s: a hang guard)."""
    async with asyncio.timeout(60):
        while wanted not in seen:
            chunk = await process.stdout.read(4096)
            assert chunk, seen
            seen += chunk
    return seen


async def box_for(make_user, make_connection, sshd):
    user = await make_user("alice")
    row = await make_connection(
        user,
        "ssh",
        sshd.host,
        sshd.port,
        name="box",
        username=sshd.username,
        password=sshd.password,
    )
    return user, row


async def test_the_owner_s_door_shell_prints_who_joined_and_left(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user, _ = await box_for(make_user, make_connection, sshd)
    bob = await make_user("bob", permissions=["sessions.join"])
    key = make_key(tmp_path)
    await register_key(client, user, key)
    async with await connect(door_of(kernel).port, "alice:box", key.key) as conn:
        process = await conn.create_process(term_type="xterm", term_size=(80, 24), encoding=None)
        process.stdin.write(b"echo ready-$((1+1))\n")
        seen = await read_until(process, b"ready-2", b"")
        [session] = kernel.terminal_sessions.all()
        async with client.websocket(
            join_path(session.id, ticket_for(kernel, bob), "participant")
        ) as socket:
            joined = Screen(socket)
            seen = await read_until(process, b"[hostgate] Bob joined as participant\r\n", seen)
            await joined.send("echo bob-typed-$((6*7))\r")
            seen = await read_until(process, b"bob-typed-42", seen)
        await read_until(process, b"[hostgate] Bob left\r\n", seen)
        process.stdin.write(b"exit\n")
        await process.wait_closed()


async def test_a_moderated_door_shell_waits_for_a_moderator_and_exec_is_refused(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user, row = await box_for(make_user, make_connection, sshd)
    response = await client.put(
        f"/api/v1/connections/{row.id}", json={"moderation": "required"}, headers=user.headers
    )
    assert response.status_code == 200
    mia = await make_user("mia", permissions=["sessions.moderate"])
    key = make_key(tmp_path)
    await register_key(client, user, key)
    port = door_of(kernel).port
    async with await connect(port, "alice:box", key.key) as conn:
        result = await conn.run("echo never", check=False)
        assert result.exit_status == 255
        assert "needs a moderator" in str(result.stderr)
        assert "never" not in str(result.stdout)

        process = await conn.create_process(term_type="xterm", term_size=(80, 24), encoding=None)
        seen = await read_until(process, b"[hostgate] This connection needs a moderator", b"")
        process.stdin.write(b"echo held-$((1+1))\n")  # held: never reaches the shell
        [session] = [s for s in kernel.terminal_sessions.all() if not s.ended]
        async with client.websocket(
            join_path(session.id, ticket_for(kernel, mia), "observer")
        ) as socket:
            watching = Screen(socket)
            seen = await read_until(process, b"Mia moderates this session", seen)
            process.stdin.write(b"echo open-$((2+2))\n")
            seen = await read_until(process, b"open-4", seen)
            assert b"held-2" not in seen
            await watching.until("open-4")
        await read_until(process, b"[hostgate] The moderator left: input is held", seen)
