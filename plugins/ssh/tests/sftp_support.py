"""Helpers shared by the SFTP tests (imported by the test modules, not a conftest)."""

from __future__ import annotations

import os
import pwd
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

USER = "hgtest"


def give(path: Path, user: str = USER) -> Path:
    """Hand a local path (recursively) to the test user, so the sshd login may change it."""
    entry = pwd.getpwnam(user)
    for root, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            os.lchown(os.path.join(root, name), entry.pw_uid, entry.pw_gid)
    os.lchown(path, entry.pw_uid, entry.pw_gid)
    return path


@pytest.fixture
def workdir(sshd: Any) -> Iterator[Path]:
    """A fresh directory in the sshd user's home, owned by that user."""
    path = Path(sshd.home) / f"t-{uuid.uuid4().hex[:10]}"
    path.mkdir()
    give(path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def api(connection: Any, suffix: str, protocol: str = "sftp") -> str:
    """The file route of a connection."""
    return f"/api/v1/{protocol}/{connection.id}/{suffix}"


async def call(client: Any, user: Any, connection: Any, suffix: str, **kwargs: Any) -> Any:
    """POST a JSON file operation; returns (status, body)."""
    response = await client.post(api(connection, suffix), headers=user.headers, **kwargs)
    return response.status_code, await response.get_json()


async def upload(
    client: Any, user: Any, connection: Any, path: str, data: bytes, **extra: Any
) -> Any:
    """Upload bytes to a remote path; returns the response."""
    headers = {**user.headers, **extra.pop("headers", {})}
    return await client.post(
        api(connection, "upload"), query_string={"path": path}, data=data, headers=headers, **extra
    )


async def download(client: Any, user: Any, connection: Any, path: str, **headers: str) -> Any:
    """Download a remote path; returns the response."""
    return await client.get(
        api(connection, "download"),
        query_string={"path": path},
        headers={**user.headers, **headers},
    )


def names(body: dict[str, Any]) -> list[str]:
    """The file names of a list response."""
    return [entry["filename"] for entry in body["files"]]
