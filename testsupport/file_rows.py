"""SPEC §4.1 rows that read the same for every file protocol, shared by the packs' tests.

A pack's HTTP test module imports these test functions; they use its fixtures:
``client``, ``owner`` (a user allowed to use the connection), ``conn`` (the stored
connection) and ``base`` (``(remote directory, the same directory on local disk)``).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

MIB = 1024 * 1024


def url(connection: Any, suffix: str) -> str:
    """The file route of a stored connection."""
    return f"/api/v1/{connection.protocol}/{connection.id}/{suffix}"


async def test_upload_download_round_trip(client, owner, conn, base):
    path, local = base
    payload = random.Random(5).randbytes(24 * MIB + 17)
    target = f"{path}/big file ü.bin"
    response = await client.post(
        url(conn, "upload"), query_string={"path": target}, data=payload, headers=owner.headers
    )
    assert response.status_code == 200
    assert await response.get_json() == {"success": True}
    assert hashlib.sha256((local / "big file ü.bin").read_bytes()).digest() == (
        hashlib.sha256(payload).digest()
    )
    assert sorted(p.name for p in local.iterdir()) == ["big file ü.bin"]
    response = await client.get(
        url(conn, "download"), query_string={"path": target}, headers=owner.headers
    )
    assert response.status_code == 200
    assert response.headers["Content-Length"] == str(len(payload))
    assert "filename*=UTF-8''big%20file%20%C3%BC.bin" in response.headers["Content-Disposition"]
    body = await response.get_data()
    assert hashlib.sha256(body).digest() == hashlib.sha256(payload).digest()
    response = await client.get(
        url(conn, "download"),
        query_string={"path": target},
        headers={**owner.headers, "Range": "bytes=100-199"},
    )
    assert response.status_code == 206
    assert await response.get_data() == payload[100:200]


async def test_empty_file_upload_and_download(client, owner, conn, base):
    path, local = base
    response = await client.post(
        url(conn, "upload"), query_string={"path": f"{path}/empty"}, data=b"", headers=owner.headers
    )
    assert response.status_code == 200
    assert (local / "empty").read_bytes() == b""
    response = await client.get(
        url(conn, "download"), query_string={"path": f"{path}/empty"}, headers=owner.headers
    )
    assert response.status_code == 200
    assert await response.get_data() == b""


async def test_aborted_http_upload_leaves_nothing(client, owner, conn, base):
    path, local = base
    async with client.request(
        url(conn, "upload"),
        method="POST",
        query_string={"path": f"{path}/aborted.bin"},
        headers=owner.headers,
    ) as connection:
        await connection.send(b"x" * (3 * MIB))
        for _ in range(50):
            await asyncio.sleep(0)
        await connection.disconnect()
    for _ in range(200):
        if not any(local.iterdir()):
            break
        await asyncio.sleep(0.05)
    assert list(local.iterdir()) == []


async def test_a_missing_path_is_404_over_http(client, owner, conn, base):
    path, _ = base
    response = await client.post(
        url(conn, "list"), json={"path": f"{path}/missing"}, headers=owner.headers
    )
    assert response.status_code == 404
    assert (await response.get_json())["code"] == "remote_not_found"
    response = await client.get(
        url(conn, "download"), query_string={"path": f"{path}/missing"}, headers=owner.headers
    )
    assert response.status_code == 404
    response = await client.delete(
        url(conn, "file"), query_string={"path": f"{path}/missing"}, headers=owner.headers
    )
    assert response.status_code == 404
