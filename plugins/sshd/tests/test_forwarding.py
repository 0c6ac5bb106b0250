"""``ssh -L``/``-W`` through the door: only where the connection allows it, audited."""

from __future__ import annotations

import asyncio
import os

from plugins.sshd.tests.door import (
    SSH_TIMEOUT,
    audit_entries,
    client_options,
    door_of,
    known_hosts,
    make_key,
    register_key,
    run_ssh,
    ssh_binary,
)


async def echo_server() -> asyncio.Server:
    """A TCP server on 127.0.0.1 that answers each line upper-cased."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            writer.write(line.upper())
            await writer.drain()
        writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


async def test_forwarding_is_refused_until_the_connection_allows_it_then_audited(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    connection = await make_connection(
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
    hosts = await known_hosts(client, user, tmp_path)
    port = door_of(kernel).port
    server = await echo_server()
    destination = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    payload = b"hello " + os.urandom(8).hex().encode() + b"\n"
    try:
        refused = await run_ssh(
            port, "alice:box", key, hosts, stdin=payload, options=("-W", destination)
        )
        assert refused.code == 255
        assert "port forwarding is not allowed on this connection" in refused.stderr
        [entry] = await audit_entries(client, user, "sshd.session_refused")
        assert destination in entry["details"]["reason"]

        # the owner turns the connection's field on (off by default)
        shown = await (
            await client.get(f"/api/v1/connections/{connection.id}", headers=user.headers)
        ).get_json()
        assert shown["extraConfig"].get("allowPortForwarding", False) is False
        updated = await client.put(
            f"/api/v1/connections/{connection.id}",
            json={"extraConfig": {"allowPortForwarding": True}},
            headers=user.headers,
        )
        assert updated.status_code == 200, await updated.get_data()

        # the answer comes back before the client's input ends (a forward is not half-closed)
        command = [ssh_binary(), *client_options(key, hosts), "-W", destination]
        command += ["-p", str(port), "-l", "alice:box", "127.0.0.1"]
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "HOME": str(tmp_path)},
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(payload)
        answer = await asyncio.wait_for(proc.stdout.readline(), SSH_TIMEOUT)
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), SSH_TIMEOUT)
        assert answer == payload.upper()
    finally:
        server.close()
        await server.wait_closed()
    for _ in range(100):  # the forward's entry is written when the gateway sees it close
        forwards = await audit_entries(client, user, "connection.port_forward")
        if forwards:
            break
        await asyncio.sleep(0.05)
    [forward] = forwards
    assert forward["details"]["destination"] == destination
    assert forward["details"]["connectionId"] == connection.id
    assert forward["details"]["bytesIn"] == len(payload)
    assert forward["details"]["bytesOut"] == len(payload)
    assert forward["details"]["via"] == "ssh"


async def test_remote_forwarding_is_refused(
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
        extra={"allowPortForwarding": True},
    )
    key = make_key(tmp_path)
    await register_key(client, user, key)
    hosts = await known_hosts(client, user, tmp_path)
    done = await run_ssh(
        door_of(kernel).port,
        "alice:box",
        key,
        hosts,
        "true",
        options=("-o", "ExitOnForwardFailure=yes", "-R", "127.0.0.1:0:127.0.0.1:9"),
    )
    assert done.code == 255
    assert "remote port forwarding failed" in done.stderr.lower()
