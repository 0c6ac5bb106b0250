"""Bad input at the door: asyncssh clients that send what OpenSSH would not."""

from __future__ import annotations

import asyncio
import json

import asyncssh
import pytest
from hostgate_sshd.server import FrontDoorServer

from plugins.sshd.tests.door import (
    audit_entries,
    commands_of,
    connect,
    door_of,
    make_key,
    register_key,
)


async def refused_at_sign_in(port: int, login: str, key: asyncssh.SSHKey | None) -> None:
    with pytest.raises(asyncssh.PermissionDenied):
        conn = await connect(port, login, key)
        conn.close()


async def test_malformed_and_huge_login_names_are_refused_and_the_door_keeps_serving(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await make_connection(
        user,
        "ssh",
        sshd.host,
        sshd.port,
        name="box",
        username=sshd.username,
        password=sshd.password,
    )
    key = make_key(tmp_path)
    await register_key(client, user, key)
    port = door_of(kernel).port

    for login in (":box", "  :box", "a" * 1000 + ":box", "alice" + ":" + "b" * 600):
        await refused_at_sign_in(port, login, key.key)

    async with await connect(port, "alice:box", key.key) as conn:
        result = await conn.run("echo still-serving", check=False)
    assert result.exit_status == 0
    assert result.stdout == b"still-serving\n" or result.stdout == "still-serving\n"


async def test_no_target_and_subsystems_get_a_reason(client, kernel, make_user, tmp_path):
    user = await make_user("alice")
    key = make_key(tmp_path)
    await register_key(client, user, key)
    port = door_of(kernel).port

    async with await connect(port, "alice", key.key) as conn:
        result = await conn.run("true", check=False)
    assert result.exit_status == 255
    assert "name the connection in the login" in str(result.stderr)

    async with await connect(port, "alice:box", key.key) as conn:
        # sftp is relayed to the connection's server: an unknown one is refused with why
        with pytest.raises((asyncssh.Error, OSError)):
            async with conn.start_sftp_client():
                pass
        sftp = await conn.run(subsystem="sftp", check=False)
        result = await conn.run(subsystem="netconf", check=False)
    assert sftp.exit_status == 255
    assert "hostgate: Connection not found" in str(sftp.stderr)
    assert result.exit_status == 255
    assert "the netconf subsystem is not offered" in str(result.stderr)
    reasons = [
        e["details"]["reason"] for e in await audit_entries(client, user, "sshd.session_refused")
    ]
    assert any("netconf subsystem is not offered" in r for r in reasons), reasons


async def test_forbidden_connection_is_refused_with_a_reason(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    owner = await make_user("owner")
    await make_connection(
        owner,
        "ssh",
        sshd.host,
        sshd.port,
        name="theirs",
        username=sshd.username,
        password=sshd.password,
    )
    user = await make_user("alice")
    key = make_key(tmp_path)
    await register_key(client, user, key)

    async with await connect(door_of(kernel).port, "alice:theirs", key.key) as conn:
        result = await conn.run("id", check=False)
    assert result.exit_status == 255
    assert "Connection not found" in str(result.stderr)
    sessions = await (await client.get("/api/v1/sessions", headers=owner.headers)).get_json()
    assert sessions["sessions"] == []


async def test_a_deleted_user_cannot_sign_in_and_their_shell_ends(
    client, kernel, admin, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await make_connection(
        user,
        "ssh",
        sshd.host,
        sshd.port,
        name="box",
        username=sshd.username,
        password=sshd.password,
    )
    key = make_key(tmp_path)
    await register_key(client, user, key)
    port = door_of(kernel).port

    async with await connect(port, "alice:box", key.key) as conn:
        process = await conn.create_process(term_type="xterm", term_size=(80, 24), encoding=None)
        process.stdin.write(b"echo ready-$((1+1))\n")
        seen = b""
        while b"ready-2" not in seen:
            seen += await process.stdout.read(4096)
        deleted = await client.delete(f"/api/v1/users/{user.id}", headers=admin.headers)
        assert deleted.status_code == 200, await deleted.get_data()
        await process.wait_closed()
        assert process.exit_status == 255
        assert b"hostgate:" in await process.stderr.read()

    await refused_at_sign_in(port, "alice:box", key.key)


async def test_window_changes_reach_the_server(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await make_connection(
        user,
        "ssh",
        sshd.host,
        sshd.port,
        name="box",
        username=sshd.username,
        password=sshd.password,
    )
    key = make_key(tmp_path)
    await register_key(client, user, key)

    async with await connect(door_of(kernel).port, "alice:box", key.key) as conn:
        process = await conn.create_process(term_type="xterm", term_size=(100, 31), encoding=None)

        async def until(text: bytes) -> None:
            seen = b""
            while text not in seen:
                seen += await process.stdout.read(4096)

        # the command log follows lines typed at a prompt: type at bash's first one
        await until(b"$ ")
        process.stdin.write(b"stty size\n")
        await until(b"31 100")
        process.change_terminal_size(132, 43)
        process.stdin.write(b"stty size\n")
        await until(b"43 132")
        process.stdin.write(b"exit\n")
        await process.wait_closed()
        assert process.exit_status == 0

    # recorded with both sizes, and the commands are in the command log
    [started] = await audit_entries(client, user, "connection.session_started")
    session_id = started["details"]["sessionId"]
    assert "stty size" in await commands_of(client, user, session_id)
    cast = (
        await (
            await client.get(f"/api/v1/sessions/{session_id}/recording", headers=user.headers)
        ).get_data()
    ).decode()
    assert json.loads(cast.splitlines()[0])["width"] == 100 and '"132x43"' in cast


async def test_a_name_two_visible_connections_share_asks_for_the_id(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    for owner_name in ("one", "two"):
        owner = await make_user(owner_name)
        await make_connection(
            owner,
            "ssh",
            sshd.host,
            sshd.port,
            name="dup",
            username=sshd.username,
            password=sshd.password,
            shared=True,
        )
    user = await make_user("alice")
    key = make_key(tmp_path)
    await register_key(client, user, key)
    port = door_of(kernel).port
    async with await connect(port, "alice:dup", key.key) as conn:
        result = await conn.run("true", check=False)
    assert result.exit_status == 255
    assert "Several connections are named 'dup': use its id" in str(result.stderr)

    # one of your own by that name wins
    mine = await make_connection(
        user,
        "ssh",
        sshd.host,
        sshd.port,
        name="dup",
        username=sshd.username,
        password=sshd.password,
    )
    async with await connect(port, "alice:dup", key.key) as conn:
        result = await conn.run("true", check=False)
    assert result.exit_status == 0, result.stderr
    [started] = await audit_entries(client, user, "connection.session_started")
    assert started["details"]["connectionId"] == mine.id


async def test_clients_that_stall_before_the_handshake_do_not_block_the_others(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await make_connection(
        user,
        "ssh",
        sshd.host,
        sshd.port,
        name="box",
        username=sshd.username,
        password=sshd.password,
    )
    key = make_key(tmp_path)
    await register_key(client, user, key)
    port = door_of(kernel).port
    stalled = [await asyncio.open_connection("127.0.0.1", port) for _ in range(50)]
    try:
        async with await connect(port, "alice:box", key.key) as conn:
            result = await conn.run("echo served", check=False)
        assert result.exit_status == 0 and "served" in str(result.stdout)
    finally:
        for _, writer in stalled:
            writer.close()


async def test_the_door_login_session_ends_with_the_connection(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await make_connection(
        user,
        "ssh",
        sshd.host,
        sshd.port,
        name="box",
        username=sshd.username,
        password=sshd.password,
    )
    key = make_key(tmp_path)
    await register_key(client, user, key)

    async def live_logins() -> int:
        response = await client.get("/api/v1/profile/login-sessions", headers=user.headers)
        return len((await response.get_json())["sessions"])

    before = await live_logins()
    async with await connect(door_of(kernel).port, "alice:box", key.key) as conn:
        assert (await conn.run("true", check=False)).exit_status == 0
        assert await live_logins() == before + 1
    for _ in range(100):  # ended once the gateway sees the connection go
        if await live_logins() == before:
            break
        await asyncio.sleep(0.1)
    assert await live_logins() == before


async def test_a_second_gateway_cannot_share_the_port_and_the_first_keeps_serving(
    client, kernel, make_user, config, plugins, monkeypatch, caplog
):
    from hostgate.app import create_app

    port = door_of(kernel).port
    monkeypatch.setenv("HOSTGATE_SSHD_LISTEN", f"127.0.0.1:{port}")
    second = create_app(config.with_overrides(data_dir=config.data_dir / "second"), plugins=plugins)
    async with second.test_app() as running:
        health = await running.app.test_client().get("/api/v1/health")
        assert health.status_code == 200  # HTTP serves although the door could not listen
    assert "cannot listen" in caplog.text
    assert door_of(kernel).port == port


async def test_background_work_that_fails_is_logged_not_lost(caplog):
    door = FrontDoorServer(kernel=None)

    async def fails() -> None:
        raise RuntimeError("inner server broke")

    door.spawn(fails())
    await asyncio.gather(*door._tasks, return_exceptions=True)
    await asyncio.sleep(0)  # the done callback
    assert not door._tasks
    [record] = [r for r in caplog.records if r.name == "hostgate.sshd"]
    assert record.getMessage() == "front-door background work failed"
    assert "inner server broke" in str(record.exc_info[1])
