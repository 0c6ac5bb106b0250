"""Agent and X11 forwarding: refused, with a one-line reason and an audit entry."""

from __future__ import annotations

import asyncio
import shutil

from hostgate._compat import applies
from hostgate._compat import asyncssh as compat_asyncssh

from plugins.sshd.tests.door import (
    audit_entries,
    door_of,
    known_hosts,
    make_key,
    register_key,
    run_ssh,
)
from testsupport.peers import peer_unavailable


async def box(make_connection, user, sshd, name="box"):
    return await make_connection(
        user, "ssh", sshd.host, sshd.port, name=name, username=sshd.username, password=sshd.password
    )


async def test_ssh_a_and_ssh_y_are_told_and_audited_and_the_command_still_runs(
    client, kernel, make_user, make_connection, sshd, tmp_path, monkeypatch
):
    agent_binary = shutil.which("ssh-agent")
    if agent_binary is None or shutil.which("xauth") is None:
        peer_unavailable("ssh-agent", "OpenSSH's ssh-agent and xauth are needed")
    assert agent_binary is not None
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    key = make_key(tmp_path)
    await register_key(client, user, key)
    hosts = await known_hosts(client, user, tmp_path)
    port = door_of(kernel).port
    # a real agent for ssh -A to offer (ssh asks for forwarding only when it has one)
    socket_path = tmp_path / "agent.sock"
    agent = await asyncio.create_subprocess_exec(
        agent_binary, "-D", "-a", str(socket_path), stdout=asyncio.subprocess.DEVNULL
    )
    try:
        for _ in range(200):
            if socket_path.exists():
                break
            await asyncio.sleep(0.02)
        done = await run_ssh(
            port, "alice:box", key, hosts, "echo ran",
            options=("-A",), agent=socket_path,
        )  # fmt: skip
    finally:
        agent.terminate()
        await agent.wait()
    assert done.code == 0, done.stderr
    assert done.stdout == "ran\n"
    # with the compat patches off, asyncssh refuses as it ships: silently, not audited
    told = applies("asyncssh.forwarding_requests", *compat_asyncssh.RANGES)
    assert ("hostgate: agent forwarding is not offered by this gateway" in done.stderr) is told

    # -Y: a display (none listens: the request is all that matters) and a PTY
    monkeypatch.setenv("DISPLAY", "127.0.0.1:63")
    done = await run_ssh(port, "alice:box", key, hosts, "-Y", "-tt", "echo shown")
    assert done.code == 0, done.stderr
    assert ("hostgate: X11 forwarding is not offered by this gateway\r\n" in done.stderr) is told
    assert done.stdout == "shown\r\n"

    refused = await audit_entries(client, user, "sshd.session_refused")
    reasons = sorted(entry["details"]["reason"] for entry in refused)
    expected = ["X11 forwarding", "agent forwarding"] if told else []
    assert reasons == [f"{what} is not offered by this gateway" for what in expected]
    assert all(entry["target"] == "box" and entry["details"]["via"] == "ssh" for entry in refused)
    # refused, not half-done: the sessions ran without them
    assert len(await audit_entries(client, user, "connection.session_started")) == 2
