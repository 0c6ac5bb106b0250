"""Running the real OpenSSH ``sftp``/``scp``, ``rsync`` and ``git`` through the front door."""

from __future__ import annotations

import asyncio
import os
import pwd
import shlex
import shutil
import uuid
from pathlib import Path
from typing import Any

from plugins.sshd.tests.door import ClientKey, Finished, client_options, ssh_binary
from testsupport.peers import peer_unavailable
from testsupport.sshd import TEST_USER

TOOL_TIMEOUT = 120.0


def tool(name: str) -> str:
    """The path of a client tool (a missing one fails under CI, skips otherwise)."""
    found = shutil.which(name)
    if found is None:
        peer_unavailable(name, f"{name} is not installed (scripts/dev.py setup installs it)")
    assert found is not None
    return found


def remote_dir(home: Path) -> Path:
    """A fresh directory in the target user's home, owned by that user."""
    path = home / f"door-{uuid.uuid4().hex[:10]}"
    path.mkdir()
    entry = pwd.getpwnam(TEST_USER)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    return path


async def run_tool(
    *command: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Finished:
    """Run a command to its end; its exit status and output."""
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    out, err = await asyncio.wait_for(proc.communicate(), TOOL_TIMEOUT)
    assert proc.returncode is not None
    return Finished(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


class Door:
    """One user's way through the door to one connection, for every tool."""

    def __init__(self, port: int, login: str, key: ClientKey, hosts: Path) -> None:
        self.port = port
        self.login = login
        self.key = key
        self.hosts = hosts

    def options(self) -> list[str]:
        """OpenSSH options naming the user and the connection (``User=alice:box``)."""
        return [*client_options(self.key, self.hosts), "-o", f"User={self.login}"]

    async def sftp(self, batch: str, workdir: Path) -> Finished:
        """``sftp -b`` with these commands (each line one command)."""
        script = workdir / "batch.sftp"
        script.write_text(batch)
        return await run_tool(
            tool("sftp"),
            *self.options(),
            "-P",
            str(self.port),
            "-b",
            str(script),
            "127.0.0.1",
            cwd=workdir,
        )

    async def scp(self, *args: str, legacy: bool) -> Finished:
        """``scp`` (``-O``: the legacy scp protocol; else SFTP); remote paths as ``gw:path``."""
        mode = ["-O"] if legacy else ["-s"]
        return await run_tool(tool("scp"), *mode, *self.options(), "-P", str(self.port), *args)

    def ssh_command(self) -> str:
        """The ``ssh`` command line rsync's ``-e`` and ``GIT_SSH_COMMAND`` run."""
        return shlex.join([ssh_binary(), *self.options(), "-p", str(self.port)])

    async def rsync(self, *args: str) -> Finished:
        """``rsync -e 'ssh ...'``."""
        return await run_tool(tool("rsync"), "-e", self.ssh_command(), *args)

    async def git(self, *args: str, cwd: Path) -> Finished:
        """``git`` with ``GIT_SSH_COMMAND`` through the door."""
        env = {
            "GIT_SSH_COMMAND": self.ssh_command(),
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(cwd),
            "GIT_AUTHOR_NAME": "door",
            "GIT_AUTHOR_EMAIL": "door@example.org",
            "GIT_COMMITTER_NAME": "door",
            "GIT_COMMITTER_EMAIL": "door@example.org",
        }
        return await run_tool(tool("git"), *args, env=env, cwd=cwd)


async def file_events(client: Any, user: Any) -> dict[str, list[dict[str, Any]]]:
    """Every file session of the user by protocol (newest first), with its events."""
    listed = await (await client.get("/api/v1/file-sessions", headers=user.headers)).get_json()
    found: dict[str, list[dict[str, Any]]] = {}
    for session in listed["sessions"]:
        response = await client.get(
            f"/api/v1/file-sessions/{session['id']}/events", headers=user.headers
        )
        events = (await response.get_json())["events"]
        found.setdefault(session["protocol"], []).append({**session, "events": events})
    return found


def actions(session: dict[str, Any]) -> list[tuple[str, str]]:
    """A file session's events as ``(action, path)`` pairs in order."""
    return [(event["action"], event["path"]) for event in session["events"]]
