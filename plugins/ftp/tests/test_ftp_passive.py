"""Data connections: the host a PASV reply names is ignored, the port is vetted by the policy.

A real pyftpdlib server with a doctored passive-mode reply plays the hostile or
misconfigured FTP server (``testsupport.ftpd.start_pyftpd(pasv=...)``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from hostgate.config import Config

from testsupport.file_rows import url
from testsupport.ftpd import FtpServer, start_pyftpd
from testsupport.peers import free_port, running


@pytest.fixture
def config(hostgate_config: Config) -> Config:
    """The gateway believes it listens on a port the test holds (see ``trap``)."""
    return hostgate_config.with_overrides(port=free_port())


@asynccontextmanager
async def trap(port: int) -> AsyncIterator[list[int]]:
    """A listener on 127.0.0.1:``port`` that counts the connections it accepts."""
    accepted: list[int] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(port)
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", port)
    try:
        yield accepted
    finally:
        server.close()
        await server.wait_closed()


def doctored(tmp_path: Path, pasv: str) -> Iterator[FtpServer]:
    server, process = start_pyftpd(tmp_path / "ftp", pasv=pasv)
    with running(process):
        yield server


@pytest.fixture
def names_another_host(tmp_path: Path) -> Iterator[FtpServer]:
    """PASV replies name 127.0.0.2, where nothing listens (the data port is on 127.0.0.1)."""
    yield from doctored(tmp_path, "masquerade:127.0.0.2")


@pytest.fixture
def names_the_gateway(tmp_path: Path, config: Config) -> Iterator[FtpServer]:
    """PASV and EPSV replies name the gateway's own listening port."""
    yield from doctored(tmp_path, f"port:{config.port}")


@pytest.fixture
def names_port_zero(tmp_path: Path) -> Iterator[FtpServer]:
    yield from doctored(tmp_path, "port:0")


async def ftp_connection(make_connection: Any, owner: Any, server: FtpServer) -> Any:
    return await make_connection(
        owner,
        "ftp",
        server.host,
        server.port,
        username=server.username or "",
        password=server.password,
    )


async def denials(client: Any, admin: Any) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/audit?eventType=network.denied", headers=admin.headers)
    return list((await response.get_json())["entries"])


async def test_the_host_a_pasv_reply_names_is_ignored(
    client, make_user, make_connection, names_another_host
):
    owner = await make_user("ftpowner")
    (names_another_host.local("/") / "hello.txt").write_bytes(b"hello")
    connection = await ftp_connection(make_connection, owner, names_another_host)
    response = await client.post(url(connection, "list"), json={"path": "/"}, headers=owner.headers)
    # The data connection went to the control connection's peer, not to 127.0.0.2.
    assert response.status_code == 200, await response.get_data(as_text=True)
    names = [entry["filename"] for entry in (await response.get_json())["files"]]
    assert names == ["hello.txt"]


async def test_a_pasv_reply_naming_the_gateways_own_port_is_refused_and_audited(
    client, config, admin, make_user, make_connection, names_the_gateway
):
    owner = await make_user("ftpowner")
    connection = await ftp_connection(make_connection, owner, names_the_gateway)
    async with trap(config.port) as accepted:
        response = await client.post(
            url(connection, "list"), json={"path": "/"}, headers=owner.headers
        )
        body = await response.get_json()
        assert response.status_code == 403, body
        assert body["code"] == "target_denied"
        assert "gateway's own listening address" in body["error"]
        assert accepted == []  # the gateway never connected to itself
    [entry] = await denials(client, admin)
    assert entry["target"] == f"127.0.0.1:{config.port}"
    assert entry["details"]["purpose"] == "ftp data connection"
    assert entry["details"]["port"] == config.port


async def test_a_data_port_outside_the_tcp_range_is_a_clear_502(
    client, make_user, make_connection, names_port_zero
):
    owner = await make_user("ftpowner")
    connection = await ftp_connection(make_connection, owner, names_port_zero)
    response = await client.post(url(connection, "list"), json={"path": "/"}, headers=owner.headers)
    body = await response.get_json()
    assert response.status_code == 502, body
    assert "invalid data port 0" in body["error"]
