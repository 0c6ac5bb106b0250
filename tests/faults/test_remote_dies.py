"""The SSH server dies (SIGKILL, with every session process) in the middle of a download,
an upload and a terminal session, through a real ``hostgate serve``.

Each case ends cleanly: the transfer stops without a byte that is not the file's,
a failed upload leaves nothing under its final name, the terminal socket closes
with 4003 and a reason, the session is marked ended with its recording readable,
the next request answers a 502 in the error shape, the gateway logs no unhandled
error, and once the server is back the same connection works again.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.faults.support import TerminalSocket, bearer, kill_sshd, ssh_connection
from testsupport.gateway import GatewayProcess

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    process = GatewayProcess(tmp_path_factory.mktemp("remote-dies") / "data").start()
    process.token = process.setup_admin()  # type: ignore[attr-defined]
    try:
        yield process
    finally:
        process.stop()
    assert process.unhandled() == []


def api(gateway: GatewayProcess, connection_id: str, suffix: str) -> str:
    return f"{gateway.url}/api/v1/sftp/{connection_id}/{suffix}"


async def listing(gateway: GatewayProcess, connection_id: str, path: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=60) as client:
        return await client.post(
            api(gateway, connection_id, "list"),
            json={"path": path},
            headers=bearer(gateway.token),  # type: ignore[attr-defined]
        )


async def assert_down_then_recovers(
    gateway: GatewayProcess, server: Any, connection_id: str, folder: Path
) -> None:
    down = await listing(gateway, connection_id, str(folder))
    assert down.status_code in (502, 504), down.text
    assert set(down.json()) == {"error", "code"} and down.json()["code"].startswith("remote_")
    server.start()
    back = await listing(gateway, connection_id, str(folder))
    assert back.status_code == 200, back.text


async def file_events(gateway: GatewayProcess, client_key: str) -> list[str]:
    headers = bearer(gateway.token)  # type: ignore[attr-defined]
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as client:
        sessions = (await client.get("/api/v1/file-sessions", headers=headers)).json()
        actions: list[str] = []
        for entry in sessions["sessions"]:
            events = await client.get(f"/api/v1/file-sessions/{entry['id']}/events",
                                      headers=headers)  # fmt: skip
            actions += [e["action"] for e in events.json()["events"]]
        return actions


@pytest.fixture
def folder(private_sshd: Any) -> Iterator[Path]:
    path = private_sshd.home / f"faults-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    os.chown(path, *_owner(private_sshd.home))
    try:
        yield path
    finally:
        for item in sorted(path.rglob("*"), reverse=True):
            item.unlink()
        path.rmdir()


def _owner(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_uid, info.st_gid


async def test_server_killed_during_a_download(
    gateway: GatewayProcess, private_sshd: Any, folder: Path
) -> None:
    content = os.urandom(64 * MIB)
    source = folder / "big.bin"
    source.write_bytes(content)
    connection_id = ssh_connection(gateway, gateway.token, private_sshd)  # type: ignore[attr-defined]
    key = uuid.uuid4().hex
    headers = {**bearer(gateway.token), "X-File-Session-Id": key}  # type: ignore[attr-defined]
    received = bytearray()
    failed: Exception | None = None
    async with httpx.AsyncClient(timeout=60) as client:
        url = api(gateway, connection_id, "download")
        async with client.stream("GET", url, params={"path": str(source)}, headers=headers) as r:
            assert r.status_code == 200
            assert int(r.headers["Content-Length"]) == len(content)
            try:
                async for chunk in r.aiter_raw(256 * 1024):
                    received += chunk
                    if private_sshd.process is not None and len(received) >= 2 * MIB:
                        kill_sshd(private_sshd)
                        await asyncio.sleep(0.5)
            except httpx.HTTPError as exc:
                failed = exc
    assert failed is not None, "the download completed although the server died"
    assert len(received) < len(content)
    assert bytes(received) == content[: len(received)]
    assert "download" not in await file_events(gateway, key)
    await assert_down_then_recovers(gateway, private_sshd, connection_id, folder)


async def test_server_killed_during_an_upload(
    gateway: GatewayProcess, private_sshd: Any, folder: Path
) -> None:
    connection_id = ssh_connection(gateway, gateway.token, private_sshd)  # type: ignore[attr-defined]
    target = folder / "upload.bin"
    size = 64 * MIB
    # the pooled SFTP session is open before the upload starts: it dies under the write
    assert (await listing(gateway, connection_id, str(folder))).status_code == 200
    key = uuid.uuid4().hex
    headers = {
        **bearer(gateway.token),  # type: ignore[attr-defined]
        "X-File-Session-Id": key,
        "Content-Length": str(size),
    }

    async def body() -> AsyncIterator[bytes]:
        block = os.urandom(MIB)
        for number in range(size // MIB):
            if number == 4:
                kill_sshd(private_sshd)
                await asyncio.sleep(0.5)
            yield block

    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.post(
            api(gateway, connection_id, "upload"),
            params={"path": str(target)},
            content=body(),
            headers=headers,
        )
    # the gateway reads (and drops) the rest of the body, so the client gets the answer
    assert response.status_code in (502, 504), response.text
    assert response.json()["code"].startswith("remote_")
    await assert_down_then_recovers(gateway, private_sshd, connection_id, folder)
    # the temporary file is gone: removed at once if the session still could, else
    # by the next session to the connection (the adapter test makes that case certain)
    assert list(folder.iterdir()) == [], "a partial upload was left on the server"
    assert "upload" not in await file_events(gateway, key)


async def test_server_killed_during_a_terminal_session(
    gateway: GatewayProcess, private_sshd: Any
) -> None:
    token = gateway.token  # type: ignore[attr-defined]
    connection_id = ssh_connection(gateway, token, private_sshd)
    terminal = await TerminalSocket(gateway, token, connection_id).open()
    await terminal.type("echo before-$((6*7))\r")
    await terminal.until(b"before-42")
    kill_sshd(private_sshd)
    code, reason = await terminal.until_closed()
    assert code == 4003, (code, reason)
    assert "lost" in reason.lower() or "closed" in reason.lower(), reason
    assert terminal.messages[-1]["reason"] == "connection_lost", terminal.messages
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as client:
        listed = (await client.get("/api/v1/sessions", headers=bearer(token))).json()
        [entry] = [s for s in listed["sessions"] if s["connectionId"] == connection_id]
        assert entry["endedAt"] is not None
        cast = await client.get(f"/api/v1/sessions/{entry['id']}/recording",
                                headers=bearer(token))  # fmt: skip
        assert cast.status_code == 200
        assert "before-42" in cast.text
    private_sshd.start()


async def test_an_upload_refused_before_its_body_is_read_is_answered_at_once(
    gateway: GatewayProcess,
) -> None:
    """Regression: a view that answered before reading the body (here a 404) left the
    flow-controlled receive loop paused and hypercorn's queue full, so the connection
    was never closed and the client hung sending its body until its own timeout."""
    body = os.urandom(48 * MIB)
    async with httpx.AsyncClient(timeout=httpx.Timeout(30, write=20)) as client:
        response = await client.post(
            f"{gateway.url}/api/v1/sftp/no-such-connection/upload",
            params={"path": "/tmp/x"},
            content=body,
            headers=bearer(gateway.token),  # type: ignore[attr-defined]
        )
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
