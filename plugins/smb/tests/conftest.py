"""SMB pack tests: a real smbd for the session, the pack registered in the app."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hostgate import ConnectionTarget
from hostgate_smb import plugin as smb_plugin
from hostgate_smb.files import SmbFiles, open_files

from testsupport.samba import SambaServer, samba  # noqa: F401


@pytest.fixture
def plugins() -> list[object]:
    return [smb_plugin]


def smb_target(server: SambaServer, share: str = "files", **changes: Any) -> ConnectionTarget:
    values: dict[str, Any] = {
        "connection_id": "c-smb",
        "protocol": "smb",
        "name": "test share",
        "host": server.host,
        "address": server.host,
        "port": server.port,
        "username": server.username,
        "password": server.password,
        "extra": {"share": share},
    }
    values.update(changes)
    return ConnectionTarget(**values)


@pytest.fixture
def workdir(samba: SambaServer) -> tuple[str, Path]:  # noqa: F811
    """A fresh directory in the ``files`` share: (share path, local path)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    local = samba.share_dir("files") / name
    local.mkdir()
    local.chmod(0o777)
    return f"/{name}", local


@pytest.fixture
async def smb(samba: SambaServer) -> AsyncIterator[SmbFiles]:  # noqa: F811
    files = await open_files(None, smb_target(samba))
    try:
        yield files
    finally:
        await files.close()
