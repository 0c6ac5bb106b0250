"""FTP pack tests: real vsftpd and pyftpdlib servers, the pack registered in the app."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hostgate import ConnectionTarget
from hostgate_ftp import plugin as ftp_plugin
from hostgate_ftp.files import FtpFiles, open_files

from testsupport.ftpd import FtpServer, pyftpd, vsftpd  # noqa: F401
from testsupport.hostile.ftp import hostile_ftp  # noqa: F401


@pytest.fixture
def plugins() -> list[object]:
    return [ftp_plugin]


def ftp_target(server: FtpServer, **changes: Any) -> ConnectionTarget:
    values: dict[str, Any] = {
        "connection_id": "c-ftp",
        "protocol": "ftp",
        "name": "test ftp",
        "host": server.host,
        "address": server.host,
        "port": server.port,
        "username": server.username,
        "password": server.password,
        "extra": {},
    }
    values.update(changes)
    return ConnectionTarget(**values)


@dataclass
class Work:
    """An adapter on one server and a fresh directory it may write to."""

    server: FtpServer
    files: FtpFiles
    base: str
    local: Path


@pytest.fixture(params=["vsftpd", "pyftpd"])
def ftp_server(request: pytest.FixtureRequest) -> FtpServer:
    server: FtpServer = request.getfixturevalue(request.param)
    return server


@pytest.fixture
async def work(ftp_server: FtpServer) -> AsyncIterator[Work]:
    name = f"t-{uuid.uuid4().hex[:10]}"
    base = f"{ftp_server.writable.rstrip('/')}/{name}"
    local = ftp_server.local(base)
    local.mkdir()
    local.chmod(0o777)
    files = await open_files(None, ftp_target(ftp_server))
    try:
        yield Work(ftp_server, files, base, local)
    finally:
        await files.close()
