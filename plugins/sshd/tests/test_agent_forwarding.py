"""Agent forwarding where an admin allows it (``sshd.agent_forwarding``), with a real
``ssh-agent``, the real ``ssh -A`` and the real sshd behind the door: off by default
(refused, told, audited), and when allowed the server's session reaches the client's
agent through the gateway."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

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

LIST_AGENT = "ssh-add -l; echo agent-status=$?"


async def started_agent(tmp_path: Path) -> tuple[asyncio.subprocess.Process, Path, str]:
    """A real ``ssh-agent`` holding one fresh key: the process, its socket, the key's
    SHA256 fingerprint (what ``ssh-add -l`` prints)."""
    agent_binary, add, keygen = (shutil.which(n) for n in ("ssh-agent", "ssh-add", "ssh-keygen"))
    if agent_binary is None or add is None or keygen is None:
        peer_unavailable("ssh-agent", "OpenSSH's ssh-agent, ssh-add and ssh-keygen are needed")
    assert agent_binary is not None and add is not None and keygen is not None
    socket_path = tmp_path / "agent.sock"
    agent = await asyncio.create_subprocess_exec(
        agent_binary, "-D", "-a", str(socket_path), stdout=asyncio.subprocess.DEVNULL
    )
    for _ in range(200):
        if socket_path.exists():
            break
        await asyncio.sleep(0.02)
    held = tmp_path / "held_key"
    made = await asyncio.create_subprocess_exec(
        keygen, "-q", "-t", "ed25519", "-N", "", "-C", "held", "-f", str(held)
    )
    assert await made.wait() == 0
    added = await asyncio.create_subprocess_exec(
        add, str(held), env={**os.environ, "SSH_AUTH_SOCK": str(socket_path)},
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert await added.wait() == 0
    shown = await asyncio.create_subprocess_exec(
        keygen, "-l", "-f", f"{held}.pub", stdout=asyncio.subprocess.PIPE
    )
    out, _ = await shown.communicate()
    return agent, socket_path, out.decode().split()[1]


async def test_agent_forwarding_is_refused_by_default_and_reaches_the_agent_when_allowed(
    client, kernel, admin, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await make_connection(
        user, "ssh", sshd.host, sshd.port, name="box",
        username=sshd.username, password=sshd.password,
    )  # fmt: skip
    key = make_key(tmp_path)
    await register_key(client, user, key)
    hosts = await known_hosts(client, user, tmp_path)
    port = door_of(kernel).port
    agent, socket_path, fingerprint = await started_agent(tmp_path)
    try:
        # off (the default): the server's session has no agent; the user is told
        done = await run_ssh(
            port, "alice:box", key, hosts, LIST_AGENT, options=("-A",), agent=socket_path
        )
        assert done.code == 0, done.stderr
        assert fingerprint not in done.stdout
        assert "agent-status=2" in done.stdout  # ssh-add: no agent to talk to
        told = applies("asyncssh.forwarding_requests", *compat_asyncssh.RANGES)
        if told:
            assert "hostgate: agent forwarding is not offered by this gateway" in done.stderr
            [refused] = await audit_entries(client, user, "sshd.session_refused")
            assert refused["details"]["reason"] == "agent forwarding is not offered by this gateway"
        assert await audit_entries(client, user, "sshd.agent_forwarded") == []

        # an admin allows it: the server's ssh-add lists the key held by the client's agent
        response = await client.put(
            "/api/v1/settings", json={"sshd.agent_forwarding": True}, headers=admin.headers
        )
        assert response.status_code == 200, await response.get_data()
        done = await run_ssh(
            port, "alice:box", key, hosts, LIST_AGENT, options=("-A",), agent=socket_path
        )
        assert done.code == 0, done.stderr
        assert fingerprint in done.stdout and "agent-status=0" in done.stdout, done.stdout
        assert "agent forwarding is not offered" not in done.stderr
        [forwarded] = await audit_entries(client, user, "sshd.agent_forwarded")
        assert forwarded["target"] == "box" and forwarded["details"]["via"] == "ssh"

        # allowed is not forced: without -A the server's session has no agent
        done = await run_ssh(port, "alice:box", key, hosts, LIST_AGENT, agent=socket_path)
        assert done.code == 0 and "agent-status=2" in done.stdout, done.stdout
        assert len(await audit_entries(client, user, "sshd.agent_forwarded")) == 1
    finally:
        agent.terminate()
        await agent.wait()


async def test_the_setting_is_a_boolean(client, admin):
    response = await client.put(
        "/api/v1/settings", json={"sshd.agent_forwarding": "yes please"}, headers=admin.headers
    )
    assert response.status_code == 400
    settings = await (await client.get("/api/v1/settings", headers=admin.headers)).get_json()
    assert settings["settings"]["sshd.agent_forwarding"] is False
