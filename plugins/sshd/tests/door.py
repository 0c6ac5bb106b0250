"""Helpers of the front-door tests: keys, the gateway's port, the real OpenSSH client."""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh
from hostgate_sshd.server import FrontDoorServer

from testsupport.peers import peer_unavailable

SSH_TIMEOUT = 60.0


def door_of(kernel: Any) -> FrontDoorServer:
    """The running front door of the test's gateway."""
    server = kernel.state["sshd.server"]
    assert isinstance(server, FrontDoorServer) and server.port > 0
    return server


@dataclass
class ClientKey:
    """A user's key pair on disk (for ``ssh -i``) and in memory (for asyncssh)."""

    path: Path
    key: asyncssh.SSHKey

    @property
    def public_line(self) -> str:
        return self.key.export_public_key("openssh").decode().strip()

    @property
    def fingerprint(self) -> str:
        return self.key.get_fingerprint("sha256")


def make_key(
    directory: Path, name: str = "id_ed25519", algorithm: str = "ssh-ed25519"
) -> ClientKey:
    """A new client key written with the permissions OpenSSH insists on."""
    key = asyncssh.generate_private_key(algorithm, comment=f"{name}@test")
    path = directory / name
    path.write_bytes(key.export_private_key("openssh"))
    path.chmod(0o600)
    return ClientKey(path, key)


async def register_key(
    client: Any, user: Any, key: ClientKey, name: str = "laptop"
) -> dict[str, Any]:
    """Register ``key`` in the user's profile; the stored key's view."""
    response = await client.post(
        "/api/v1/profile/ssh-keys",
        json={"publicKey": key.public_line, "name": name},
        headers=user.headers,
    )
    assert response.status_code == 200, await response.get_data()
    return (await response.get_json())["key"]  # type: ignore[no-any-return]


async def known_hosts(client: Any, user: Any, directory: Path) -> Path:
    """A known_hosts file holding the keys ``GET /sshd/host-keys`` shows (nothing else)."""
    body = await (await client.get("/api/v1/sshd/host-keys", headers=user.headers)).get_json()
    lines = [f"[127.0.0.1]:{body['port']} {key['publicKey']}" for key in body["hostKeys"]]
    path = directory / "known_hosts"
    path.write_text("\n".join(lines) + "\n")
    return path


@dataclass
class Finished:
    """What the ssh client left: its exit status and output."""

    code: int
    stdout: str
    stderr: str


def client_options(key: ClientKey, hosts: Path) -> list[str]:
    """The options every OpenSSH tool gets: no config, BatchMode, only this key and hosts."""
    return [
        "-F",
        "/dev/null",
        "-o",
        "BatchMode=yes",
        "-o",
        f"UserKnownHostsFile={hosts}",
        "-o",
        "GlobalKnownHostsFile=/dev/null",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "IdentityAgent=none",
        "-o",
        "ConnectTimeout=20",
        "-i",
        str(key.path),
    ]


def ssh_binary() -> str:
    found = shutil.which("ssh")
    if found is None:
        peer_unavailable("ssh", "the OpenSSH client is not installed")
    assert found is not None
    return found


async def run_ssh(
    port: int,
    login: str,
    key: ClientKey,
    hosts: Path,
    *args: str,
    stdin: bytes = b"",
    options: tuple[str, ...] = (),
    agent: Path | None = None,
) -> Finished:
    """Run the real ``ssh`` client against the door (BatchMode, only this key and host keys).

    ``agent``: the ssh-agent socket ssh may use and forward (``-A``); none otherwise.
    """
    fixed = client_options(key, hosts)
    if agent is not None:
        fixed[fixed.index("IdentityAgent=none")] = f"IdentityAgent={agent}"
    command = [
        ssh_binary(),
        *fixed,
        *options,
        "-p",
        str(port),
        "-l",
        login,
        "127.0.0.1",
        *args,
    ]
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "HOME": str(hosts.parent)},
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), SSH_TIMEOUT)
    assert proc.returncode is not None
    return Finished(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


async def audit_entries(client: Any, user: Any, event_type: str) -> list[dict[str, Any]]:
    """The user's audit entries of one type, newest first."""
    response = await client.get(f"/api/v1/audit?eventType={event_type}", headers=user.headers)
    return (await response.get_json())["entries"]  # type: ignore[no-any-return]


async def connect(
    port: int, login: str, key: asyncssh.SSHKey | None, **options: Any
) -> asyncssh.SSHClientConnection:
    """An asyncssh client connection to the door (host key not checked: edge-case tests)."""
    return await asyncssh.connect(
        "127.0.0.1",
        port,
        username=login,
        client_keys=[key] if key is not None else [],
        known_hosts=None,
        agent_path=None,
        password=None,
        kbdint_auth=False,
        password_auth=False,
        **options,
    )


async def commands_of(client: Any, user: Any, session_id: str) -> list[str]:
    """The session's command log, once the ticker (once a second) has stored it."""
    for _ in range(100):
        response = await client.get(f"/api/v1/sessions/{session_id}/commands", headers=user.headers)
        commands = [c["command"] for c in (await response.get_json())["commands"]]
        if commands:
            return commands
        await asyncio.sleep(0.1)
    return []


def client_config(directory: Path, key: ClientKey, hosts: Path, *blocks: str) -> Path:
    """An ssh_config for the real client: ``blocks`` first, then this key, these host keys.

    ``ssh -J`` runs a second ``ssh`` for the jump that reads ``-F``'s file but not ``-o``
    options, so the test's settings live in the file.
    """
    path = directory / "ssh_config"
    defaults = f"""
Host *
    BatchMode yes
    UserKnownHostsFile {hosts}
    GlobalKnownHostsFile /dev/null
    StrictHostKeyChecking yes
    IdentitiesOnly yes
    IdentityAgent none
    IdentityFile {key.path}
    ConnectTimeout 20
"""
    path.write_text("\n".join(blocks) + "\n" + defaults)
    return path


async def run_ssh_config(
    config: Path, *args: str, stdin: bytes = b"", hangup_ignored: bool = False
) -> Finished:
    """Run the real ``ssh -F config ARGS`` (HOME beside the config).

    ``hangup_ignored`` runs it under ``nohup``: SIGHUP ignored, inherited by the jump
    process ``ssh -J`` starts, which then no longer dies when ``ssh`` exits.
    """
    nohup = shutil.which("nohup") if hangup_ignored else None
    if hangup_ignored and nohup is None:
        peer_unavailable("nohup", "coreutils' nohup is not installed")
    proc = await asyncio.create_subprocess_exec(
        *([nohup] if nohup is not None else []),
        ssh_binary(),
        "-F",
        str(config),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "HOME": str(config.parent)},
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), SSH_TIMEOUT)
    assert proc.returncode is not None
    return Finished(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


async def jump_known_hosts(client: Any, user: Any, directory: Path, *names: str) -> Path:
    """``known_hosts`` with the door's keys and, for each name, the ProxyJump host key."""
    path = await known_hosts(client, user, directory)
    body = await (await client.get("/api/v1/sshd/host-keys", headers=user.headers)).get_json()
    jump = body["jumpHostKey"]["publicKey"]
    with path.open("a") as out:
        out.writelines(f"{name} {jump}\n" for name in names)
    return path
