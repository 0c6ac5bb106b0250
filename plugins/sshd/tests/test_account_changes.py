"""What an administrator does to an account reaches its open front-door shells at once."""

from __future__ import annotations

from typing import Any

import asyncssh

from plugins.sshd.tests.door import connect, door_of, make_key, register_key
from plugins.sshd.tests.test_edge_cases import refused_at_sign_in
from testsupport.fixtures import store_unchecked


async def open_shell(port: int, key: Any) -> tuple[asyncssh.SSHClientConnection, Any]:
    conn = await connect(port, "alice:box", key.key)
    process = await conn.create_process(term_type="xterm", term_size=(80, 24), encoding=None)
    process.stdin.write(b"echo ready-$((1+1))\n")
    seen = b""
    while b"ready-2" not in seen:
        seen += await process.stdout.read(4096)
    return conn, process


async def ends_with_a_reason(conn: asyncssh.SSHClientConnection, process: Any) -> bytes:
    await process.wait_closed()
    told = await process.stderr.read()
    conn.close()
    assert process.exit_status == 255
    assert b"hostgate:" in told
    return told


async def test_a_password_reset_ends_the_users_shells(
    client, kernel, admin, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await make_connection(
        user, "ssh", sshd.host, sshd.port, name="box", username=sshd.username,
        password=sshd.password,
    )  # fmt: skip
    key = make_key(tmp_path)
    await register_key(client, user, key)
    port = door_of(kernel).port
    conn, process = await open_shell(port, key)
    reset = await client.post(
        f"/api/v1/users/{user.id}/reset-password",
        json={"newPassword": "a brand new long passphrase"},
        headers=admin.headers,
    )
    assert reset.status_code == 200, await reset.get_data()
    await ends_with_a_reason(conn, process)
    # the key still signs in afterwards: a reset ends sessions, it does not revoke keys
    async with await connect(port, "alice:box", key.key) as again:
        result = await again.run("echo after-reset", check=False)
    assert "after-reset" in str(result.stdout)


async def test_a_locked_account_is_refused_at_the_door(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    await store_unchecked(kernel, "security.max_login_attempts", 2)
    user = await make_user("alice")
    key = make_key(tmp_path)
    await register_key(client, user, key)
    for _ in range(2):
        wrong = await client.post(
            "/api/v1/auth/login", json={"username": "alice", "password": "not the password"}
        )
        assert wrong.status_code == 401
    await refused_at_sign_in(door_of(kernel).port, "alice:box", key.key)


async def test_a_suspension_ends_the_shells_and_shuts_the_door_until_resumed(
    client, kernel, admin, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await make_connection(
        user, "ssh", sshd.host, sshd.port, name="box", username=sshd.username,
        password=sshd.password,
    )  # fmt: skip
    key = make_key(tmp_path)
    await register_key(client, user, key)
    port = door_of(kernel).port
    conn, process = await open_shell(port, key)
    suspended = await client.post(f"/api/v1/users/{user.id}/suspend", headers=admin.headers)
    assert suspended.status_code == 200, await suspended.get_data()
    await ends_with_a_reason(conn, process)
    # the key still checks out (nothing is told before it does), then the sign-in is refused
    async with await connect(port, "alice:box", key.key) as refused:
        result = await refused.run("echo while-suspended", check=False)
    assert result.exit_status != 0 and "while-suspended" not in str(result.stdout)
    assert "This account is suspended" in str(result.stderr)
    resumed = await client.post(f"/api/v1/users/{user.id}/resume", headers=admin.headers)
    assert resumed.status_code == 200
    async with await connect(port, "alice:box", key.key) as again:
        result = await again.run("echo after-resume", check=False)
    assert "after-resume" in str(result.stdout)
