"""SIGTERM to a real ``hostgate serve`` during a streamed upload: finished, or no partial file.

The upload goes through ``POST /api/v1/<protocol>/<id>/upload`` to a real peer
(OpenSSH's sftp server, pyftpdlib) whose files the test reads from disk. The
signal arrives once the gateway has opened the remote temporary file. Either the
client keeps sending (graceful shutdown should let the upload end) or it stalls
(the gateway must give up on it when its grace period ends). In both cases the
final name holds the whole file or nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import pwd
import shutil
import signal
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from testsupport.ftpd import pyftpd  # noqa: F401 - fixture
from testsupport.gateway import GatewayProcess
from testsupport.sshd import TEST_USER, sshd  # noqa: F401 - fixture

FIRST = 256 * 1024
REST = 4 * 1024 * 1024
NAME = "upload.bin"
HANG_BOUND = 90  # seconds; only a hung server or client ever reaches it
# a stalled upload is abandoned when the grace period ends: a short one (the production
# default is 10 s) is the same behaviour; a sender that keeps sending gets the default
STALLED_GRACE = 2


@dataclass(frozen=True)
class Target:
    """A writable directory on a real file peer, as the gateway and the test see it."""

    protocol: str
    connection: dict[str, Any]
    remote_dir: str
    local_dir: Path


@pytest.fixture(params=["sftp", "ftp"])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """A fresh empty directory on OpenSSH (sftp) or pyftpdlib (ftp)."""
    name = f"shutdown-{uuid.uuid4().hex[:10]}"
    if request.param == "sftp":
        server = request.getfixturevalue("sshd")
        local = Path(server.home) / name
        local.mkdir()
        user = pwd.getpwnam(TEST_USER)
        os.chown(local, user.pw_uid, user.pw_gid)
        remote = str(local)
    else:
        server = request.getfixturevalue("pyftpd")
        local = server.local(f"/{name}")
        local.mkdir()
        remote = f"/{name}"
    connection = {
        "name": f"{request.param} peer",
        "protocol": request.param,
        "host": server.host,
        "port": server.port,
        "username": server.username,
        "password": server.password,
    }
    yield Target(request.param, connection, remote, local)
    shutil.rmtree(local, ignore_errors=True)


def payload() -> bytes:
    """The uploaded bytes: distinct enough that a truncated or shuffled file differs."""
    block = hashlib.sha256(b"shutdown upload").digest() * 2048  # 64 KiB
    data = (block * ((FIRST + REST) // len(block) + 1))[: FIRST + REST]
    return data


async def until_temporary_file(directory: Path) -> list[str]:
    """Wait until the gateway has opened its temporary file in ``directory``."""
    for _ in range(HANG_BOUND * 20):
        entries = os.listdir(directory)
        if entries:
            return entries
        await asyncio.sleep(0.05)
    pytest.fail("the upload never reached the remote directory")


@pytest.mark.parametrize("client", ["keeps-sending", "stalls"])
async def test_sigterm_during_upload_leaves_whole_file_or_none(
    target: Target, client: str, tmp_path: Path
) -> None:
    """SIGTERM mid-upload: the server exits cleanly and the final name holds all bytes or none.

    ``keeps-sending``: the rest of the body follows the signal. ``stalls``: the
    client never sends the rest, so the gateway must abandon the upload when its
    grace period ends. The bound on each wait only catches a hang.
    """
    env = {"HOSTGATE_SHUTDOWN_GRACE_SECONDS": str(STALLED_GRACE)} if client == "stalls" else {}
    gateway = GatewayProcess(tmp_path / "data", env).start()
    data = payload()
    release = asyncio.Event()
    never = asyncio.Event()
    try:
        token = gateway.setup_admin()
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=None) as http:
            created = await http.post("/api/v1/connections", json=target.connection)
            assert created.status_code == 201, created.text
            url = f"/api/v1/{target.protocol}/{created.json()['id']}/upload"

            async def body() -> AsyncIterator[bytes]:
                yield data[:FIRST]
                await release.wait()
                if client == "stalls":
                    await never.wait()
                for start in range(FIRST, len(data), 64 * 1024):
                    yield data[start : start + 64 * 1024]

            async def upload() -> httpx.Response | Exception:
                try:
                    return await http.post(
                        url,
                        params={"path": f"{target.remote_dir}/{NAME}"},
                        content=body(),
                        headers={"Content-Length": str(len(data))},
                    )
                except httpx.HTTPError as exc:  # the server went away mid-request
                    return exc

            task = asyncio.create_task(upload())
            await until_temporary_file(target.local_dir)
            assert not (target.local_dir / NAME).exists()
            gateway.process.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
            release.set()
            exited = asyncio.create_task(asyncio.to_thread(gateway.process.wait))  # type: ignore[union-attr]
            if client == "stalls":
                # a stalled sender notices nothing until it writes again: only after
                # the server has gone does the rest of the body meet a closed socket
                await asyncio.wait_for(asyncio.shield(exited), HANG_BOUND)
                never.set()
            outcome = await asyncio.wait_for(task, HANG_BOUND)
            code = await asyncio.wait_for(exited, HANG_BOUND)
    finally:
        never.set()
        gateway.kill()
    assert code == 0, gateway.log()[-3000:]
    assert gateway.unhandled() == [], gateway.log()[-3000:]
    final = target.local_dir / NAME
    finished = isinstance(outcome, httpx.Response) and outcome.status_code == 200
    if finished or final.exists():  # whole, never a prefix under the final name
        assert final.read_bytes() == data
    leftovers = sorted(set(os.listdir(target.local_dir)) - {NAME})
    assert leftovers == [], f"temporary files left after a graceful shutdown: {leftovers}"
    if client == "keeps-sending":  # the grace period lets it end
        assert finished, outcome.text if isinstance(outcome, httpx.Response) else outcome
    else:  # the body never came: aborted
        assert not finished and not final.exists()
