"""The browser's session rules hold at the door: approvals, host keys, revocation, ending."""

from __future__ import annotations

import asyncio

import asyncssh

from plugins.sshd.tests.door import audit_entries, connect, door_of, make_key, register_key


async def signed_in(client, kernel, user, tmp_path):
    key = make_key(tmp_path)
    stored = await register_key(client, user, key)
    return key, stored, door_of(kernel).port


async def shell_ready(conn: asyncssh.SSHClientConnection) -> asyncssh.SSHClientProcess:
    process = await conn.create_process(term_type="xterm", term_size=(80, 24), encoding=None)
    process.stdin.write(b"echo ready-$((1+1))\n")
    seen = b""
    while b"ready-2" not in seen:
        chunk = await process.stdout.read(4096)
        assert chunk, seen
        seen += chunk
    return process


async def test_an_approval_required_connection_refuses_until_approved(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    owner = await make_user("owner", role="admin")
    row = await make_connection(
        owner,
        "ssh",
        sshd.host,
        sshd.port,
        name="guarded",
        username=sshd.username,
        password=sshd.password,
        shared=True,
    )
    async with kernel.db.session() as session:
        stored = await session.get(type(row), row.id)
        stored.approval_required = True
        await session.commit()
    user = await make_user("alice")
    key, _, port = await signed_in(client, kernel, user, tmp_path)
    async with await connect(port, "alice:guarded", key.key) as conn:
        result = await conn.run("true", check=False)
    assert result.exit_status == 255
    assert "approved access request" in str(result.stderr)


async def test_a_changed_host_key_is_refused_with_the_reason(
    client, kernel, make_user, make_connection, private_sshd, tmp_path
):
    user = await make_user("alice")
    await make_connection(
        user,
        "ssh",
        private_sshd.host,
        private_sshd.port,
        name="box",
        username=private_sshd.username,
        password=private_sshd.password,
    )
    key, _, port = await signed_in(client, kernel, user, tmp_path)
    async with await connect(port, "alice:box", key.key) as conn:
        assert (await conn.run("true", check=False)).exit_status == 0
    private_sshd.restart_with_new_host_key()
    async with await connect(port, "alice:box", key.key) as conn:
        result = await conn.run("true", check=False)
    assert result.exit_status == 255
    assert "host key" in str(result.stderr).lower()
    [failed] = await audit_entries(client, user, "connection.session_failed")
    assert failed["details"]["via"] == "ssh"


async def test_removing_the_key_closes_its_connection(
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
    key, stored, port = await signed_in(client, kernel, user, tmp_path)
    conn = await connect(port, "alice:box", key.key)
    await shell_ready(conn)
    removed = await client.delete(f"/api/v1/profile/ssh-keys/{stored['id']}", headers=user.headers)
    assert removed.status_code == 200
    await asyncio.wait_for(conn.wait_closed(), 30)
    # the gateway ends the session once it sees the connection go
    for _ in range(100):
        ended = await audit_entries(client, user, "connection.session_ended")
        if ended:
            break
        await asyncio.sleep(0.1)
    assert len(ended) == 1
    assert kernel.live.count(user_id=user.id) == 0


async def test_an_admin_ending_the_session_tells_the_client(
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
    key, _, port = await signed_in(client, kernel, user, tmp_path)
    async with await connect(port, "alice:box", key.key) as conn:
        process = await shell_ready(conn)
        [started] = await audit_entries(client, user, "connection.session_started")
        ended = await kernel.terminal_sessions.terminate(
            started["details"]["sessionId"], "Ended by an administrator"
        )
        assert ended
        await asyncio.wait_for(process.wait_closed(), 30)
        assert process.exit_status == 255
        assert b"hostgate: Ended by an administrator" in await process.stderr.read()


async def test_a_node_shutting_down_tells_its_clients(
    config, plugins, make_connection, sshd, tmp_path
):
    from hostgate.app import create_app, kernel_of

    from testsupport.fixtures import PASSWORD

    application = create_app(config, plugins=plugins)
    async with application.test_app() as test_app:
        kernel = kernel_of(test_app.app)
        client = test_app.app.test_client()

        await client.post(
            "/api/v1/auth/setup",
            json={"username": "alice", "password": PASSWORD, "displayName": "Alice"},
        )
        login = await client.post(
            "/api/v1/auth/login", json={"username": "alice", "password": PASSWORD}
        )
        token = (await login.get_json())["token"]
        headers = {"Authorization": f"Bearer {token}"}
        key = make_key(tmp_path)
        added = await client.post(
            "/api/v1/profile/ssh-keys", json={"publicKey": key.public_line}, headers=headers
        )
        assert added.status_code == 200
        created = await client.post(
            "/api/v1/connections",
            json={
                "name": "box",
                "protocol": "ssh",
                "host": sshd.host,
                "port": sshd.port,
                "username": sshd.username,
                "password": sshd.password,
            },
            headers=headers,
        )
        assert created.status_code in (200, 201), await created.get_data()
        conn = await connect(door_of(kernel).port, "alice:box", key.key)
        process = await shell_ready(conn)
    # the app has shut down: the shell ended with the reason
    await asyncio.wait_for(process.wait_closed(), 30)
    assert process.exit_status == 255
    assert b"Server shutting down" in await process.stderr.read()
    conn.close()
