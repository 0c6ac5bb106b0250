"""ProxyJump: ``ssh -J alice@gateway prod-db`` answered by the gateway's own inner SSH server."""

from __future__ import annotations

import asyncio
import logging

import asyncssh
import pytest
from hostgate_sshd import proxyjump

from plugins.sshd.tests.door import (
    audit_entries,
    client_config,
    connect,
    door_of,
    jump_known_hosts,
    make_key,
    register_key,
    run_ssh_config,
)


async def box(make_connection, user, sshd, name="box"):
    return await make_connection(
        user, "ssh", sshd.host, sshd.port, name=name, username=sshd.username, password=sshd.password
    )


async def test_ssh_j_reaches_a_stored_connection_by_name_recorded_like_user_target(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    connection = await box(make_connection, user, sshd)
    key = make_key(tmp_path)
    await register_key(client, user, key)
    # only the keys the API shows: the door's for the jump, the ProxyJump key for "box"
    hosts = await jump_known_hosts(client, user, tmp_path, "box", connection.id)
    config = client_config(tmp_path, key, hosts)
    jump = f"alice@127.0.0.1:{door_of(kernel).port}"

    done = await run_ssh_config(config, "-J", jump, "box", "echo jumped-$((6*7)); whoami")
    assert done.code == 0, done.stderr
    assert done.stdout.splitlines() == ["jumped-42", sshd.username]

    # by id, any inner user name, the exit status comes back; stdin reaches the command
    done = await run_ssh_config(
        config, "-J", jump, "-l", "whoever", connection.id, "cat; exit 4", stdin=b"piped\n"
    )
    assert done.code == 4, done.stderr
    assert done.stdout == "piped\n"

    started = await audit_entries(client, user, "connection.session_started")
    assert len(started) == 2
    details = started[-1]["details"]
    assert details["via"] == "ssh" and details["connectionId"] == connection.id
    assert details["keyFingerprint"] == key.fingerprint
    assert details["clientAddress"] == "127.0.0.1"
    cast = await client.get(
        f"/api/v1/sessions/{details['sessionId']}/recording", headers=user.headers
    )
    assert "jumped-42" in (await cast.get_data()).decode()
    # one sign-in per outer connection, none for the inner one
    assert len(await audit_entries(client, user, "auth.login")) == 2


async def test_the_jump_process_ends_with_the_session_even_when_not_killed_by_ssh(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    """``ssh`` SIGHUPs its ``ssh -W`` jump process when it exits; started with SIGHUP
    ignored (nohup, some CI runners) that process lives on until the gateway closes the
    channel, holding the client's stderr (the caller waits for ever) and the outer
    connection. The inner server's end closes the channel, whichever side ends first."""
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    key = make_key(tmp_path)
    await register_key(client, user, key)
    config = client_config(tmp_path, key, await jump_known_hosts(client, user, tmp_path, "box"))
    jump = f"alice@127.0.0.1:{door_of(kernel).port}"

    # the session ends first (the command exits), then the client
    done = await run_ssh_config(config, "-J", jump, "box", "echo once", hangup_ignored=True)
    assert (done.code, done.stdout) == (0, "once\n"), done.stderr
    # the client ends first: its inner host-key check fails, before any session
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    wrong = await jump_known_hosts(client, user, elsewhere)
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    with wrong.open("a") as out:
        out.write(f"box {other}")
    done = await run_ssh_config(
        client_config(elsewhere, key, wrong), "-J", jump, "box", "true", hangup_ignored=True
    )
    assert done.code == 255 and "HOST IDENTIFICATION HAS CHANGED" in done.stderr

    door = door_of(kernel)
    for _ in range(200):  # the jump processes' connections end as the channels close
        if not door.connections:
            break
        await asyncio.sleep(0.05)
    assert not door.connections


async def test_an_inner_handshake_that_stalls_is_closed_logged_and_audited(
    client, kernel, make_user, make_connection, sshd, tmp_path, monkeypatch, caplog
):
    monkeypatch.setattr(proxyjump, "INNER_HANDSHAKE_SECONDS", 0.5)
    caplog.set_level(logging.INFO, logger="hostgate.sshd")
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    key = make_key(tmp_path)
    await register_key(client, user, key)
    async with await connect(door_of(kernel).port, "alice", key.key) as conn:
        # the channel opens and the inner server says its version; the client never answers
        reader, writer = await conn.open_connection("box", 22)
        assert (await reader.readline()).startswith(b"SSH-2.0-")
        while await reader.read(4096):  # until the gateway closes the channel
            pass
        writer.close()
    assert "did not complete its SSH handshake within 0.5 s" in caplog.text
    [refused] = await audit_entries(client, user, "sshd.session_refused")
    assert refused["target"] == "box:22"
    assert refused["details"]["channel"] == "direct-tcpip"
    assert "did not complete its SSH handshake" in refused["details"]["reason"]
    assert await audit_entries(client, user, "connection.session_started") == []


async def test_a_shell_through_proxyjump_gets_a_pty(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    key = make_key(tmp_path)
    await register_key(client, user, key)
    config = client_config(tmp_path, key, await jump_known_hosts(client, user, tmp_path, "box"))

    done = await run_ssh_config(
        config,
        "-tt",
        "-J",
        f"alice@127.0.0.1:{door_of(kernel).port}",
        "box",
        stdin=b"echo shell-$((2*21)); tty; exit\n",
    )
    assert done.code == 0, done.stderr
    assert "shell-42" in done.stdout and "/dev/pts/" in done.stdout


async def test_an_inner_host_key_other_than_the_shown_one_is_refused_by_the_client(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    key = make_key(tmp_path)
    await register_key(client, user, key)
    hosts = await jump_known_hosts(client, user, tmp_path)
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    with hosts.open("a") as out:
        out.write(f"box {other}")
    config = client_config(tmp_path, key, hosts)

    done = await run_ssh_config(
        config, "-J", f"alice@127.0.0.1:{door_of(kernel).port}", "box", "true"
    )
    assert done.code == 255
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in done.stderr
    assert await audit_entries(client, user, "connection.session_started") == []


async def test_unknown_names_and_raw_tcp_are_refused_with_a_reason_and_audited(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    key = make_key(tmp_path)
    await register_key(client, user, key)
    config = client_config(tmp_path, key, await jump_known_hosts(client, user, tmp_path, "nowhere"))
    port = door_of(kernel).port

    done = await run_ssh_config(config, "-J", f"alice@127.0.0.1:{port}", "nowhere", "true")
    assert done.code == 255
    assert "nowhere: Connection not found" in done.stderr
    assert "forwards no TCP" in done.stderr

    # the real server's address is not a connection: no bytes are forwarded to it
    async with await connect(port, "alice", key.key) as conn:
        with pytest.raises(asyncssh.ChannelOpenError, match="Connection not found"):
            await conn.open_connection(sshd.host, sshd.port)
        # a stored connection on a port that is neither 22 nor its own: not a tunnel
        with pytest.raises(asyncssh.ChannelOpenError, match="port forwarding is not offered"):
            await conn.open_connection("box", 5432)
    # the user:target form forwards (ssh -L) only where the connection allows it
    async with await connect(port, "alice:box", key.key) as conn:
        with pytest.raises(asyncssh.ChannelOpenError, match="not allowed on this connection"):
            await conn.open_connection("box", 22)

    refused = await audit_entries(client, user, "sshd.session_refused")
    jumps = [entry for entry in refused if entry["details"].get("channel") == "direct-tcpip"]
    targets = sorted(entry["target"] for entry in jumps)
    assert targets == sorted(["nowhere:22", f"{sshd.host}:{sshd.port}", "box:5432"])
    forwards = [entry for entry in refused if entry not in jumps]
    assert [entry["target"] for entry in forwards] == ["box"]
    assert "forwarding to box:22" in forwards[0]["details"]["reason"]
    assert await audit_entries(client, user, "connection.session_started") == []


async def test_a_connection_the_user_cannot_see_is_not_reachable_by_proxyjump(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    owner = await make_user("bob")
    await box(make_connection, owner, sshd, name="bobs")
    carol = await make_user("carol")
    key = make_key(tmp_path)
    await register_key(client, carol, key)
    async with await connect(door_of(kernel).port, "carol", key.key) as conn:
        with pytest.raises(asyncssh.ChannelOpenError, match="Connection not found"):
            await conn.open_connection("bobs", 22)


async def test_closing_the_outer_connection_ends_the_inner_session(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    key = make_key(tmp_path)
    await register_key(client, user, key)
    outer = await connect(door_of(kernel).port, "alice", key.key)
    # asyncssh's own ProxyJump: the inner connection rides a direct-tcpip channel
    inner = await asyncssh.connect(
        "box", 22, tunnel=outer, username="anyone", known_hosts=None, agent_path=None
    )
    process = await inner.create_process(term_type="xterm", encoding=None)
    seen = b""
    while b"$ " not in seen:
        seen += await process.stdout.read(4096)
    [started] = await audit_entries(client, user, "connection.session_started")
    outer.close()
    await outer.wait_closed()
    with pytest.raises((asyncssh.Error, OSError, ConnectionError)):
        await asyncio.wait_for(inner.wait_closed(), 30)
        await inner.run("true", check=True)
    for _ in range(300):  # ended in a task once the channel closed
        ended = await audit_entries(client, user, "connection.session_ended")
        if ended:
            break
        await asyncio.sleep(0.05)
    assert [e["details"]["sessionId"] for e in ended] == [started["details"]["sessionId"]]
    # and the channel's handler is done (it no longer waits for output of an ended session)
    door = door_of(kernel)
    for _ in range(200):
        if not door._handlers:
            break
        await asyncio.sleep(0.05)
    assert not door._handlers and not door.connections
