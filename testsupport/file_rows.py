"""SPEC §4.1 rows that read the same for every file protocol, shared by the packs' tests.

A pack's HTTP test module imports these test functions; they use its fixtures:
``client``, ``owner`` (a user allowed to use the connection), ``conn`` (the stored
connection) and ``base`` (``(remote directory, the same directory on local disk)``),
and the app's ``kernel`` (its pool of remote sessions, ``kernel.files``).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from contextlib import AsyncExitStack
from typing import Any

from hostgate import ClientInfo

MIB = 1024 * 1024


def url(connection: Any, suffix: str) -> str:
    """The file route of a stored connection."""
    return f"/api/v1/{connection.protocol}/{connection.id}/{suffix}"


async def put_file(client: Any, owner: Any, conn: Any, path: str, data: bytes) -> Any:
    """POST ``data`` to the upload route."""
    return await client.post(
        url(conn, "upload"), query_string={"path": path}, data=data, headers=owner.headers
    )


async def get_file(client: Any, owner: Any, conn: Any, path: str, byte_range: str = "") -> Any:
    """GET the download route (``byte_range``: a ``Range`` header such as ``bytes=0-9``)."""
    headers = {**owner.headers, "Range": byte_range} if byte_range else owner.headers
    return await client.get(url(conn, "download"), query_string={"path": path}, headers=headers)


async def wait_until(condition: Any, timeout: float = 10.0) -> None:
    """Let the app run until ``condition()`` holds (fails the test after ``timeout``)."""
    for _ in range(int(timeout / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")


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
    response = await get_file(client, owner, conn, target, "bytes=100-199")
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


async def test_aborted_http_upload_leaves_nothing(client, kernel, owner, conn, base):
    """A client that goes away mid-upload leaves no file: not the final one, not the
    temporary one the upload was writing."""
    path, local = base
    async with client.request(
        url(conn, "upload"),
        method="POST",
        query_string={"path": f"{path}/aborted.bin"},
        headers=owner.headers,
    ) as connection:
        await connection.send(b"x" * (3 * MIB))
        # the upload is under way: bytes have reached its temporary file on the server
        await wait_until(lambda: any(p.stat().st_size for p in local.iterdir()), timeout=60)
        await connection.disconnect()
    # the transfer gives its session back once its clean-up ended (files.CLEANUP_SECONDS)
    await wait_until(lambda: kernel.files.leased_count() == 0, timeout=60)
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


async def _download_broken_off(client: Any, owner: Any, conn: Any, path: str, after: int) -> None:
    """GET ``path`` and go away after ``after`` bytes of the body (0: before the answer)."""
    async with asyncio.timeout(60):
        async with client.request(
            url(conn, "download"), method="GET", query_string={"path": path}, headers=owner.headers
        ) as connection:
            await connection.send_complete()
            got = 0
            while got < after:
                got += len(await connection.receive())
            await connection.disconnect()
        assert after == 0 or connection.status_code == 200


async def _upload_broken_off(client: Any, owner: Any, conn: Any, path: str, pool: Any) -> None:
    """POST part of a body to ``path`` and go away while the upload streams."""
    async with client.request(
        url(conn, "upload"), method="POST", query_string={"path": path}, headers=owner.headers
    ) as connection:
        await connection.send(b"x" * MIB)
        await wait_until(lambda: pool.leased_count() == 1)
        await connection.disconnect()


async def test_every_transfer_gives_its_session_back(client, kernel, owner, conn, base):
    """More transfers than a connection's pool holds - whole, ranged, HEAD, and broken off by
    the client before the answer, mid-body, just after the last byte, mid-upload - each give
    their session back: none stays leased, the next transfer does not wait for one, and
    the broken-off uploads leave no temporary file behind."""
    pool = kernel.files
    path, local = base
    payload = random.Random(11).randbytes(4 * MIB + 3)
    target = f"{path}/leases.bin"
    for _ in range(pool.max_per_key + 1):
        assert (await put_file(client, owner, conn, target, payload)).status_code == 200
        response = await get_file(client, owner, conn, target)
        assert response.status_code == 200
        assert await response.get_data() == payload
        response = await get_file(client, owner, conn, target, "bytes=10-19")
        assert response.status_code == 206
        assert await response.get_data() == payload[10:20]
        async with client.request(
            url(conn, "download"),
            method="HEAD",
            query_string={"path": target},
            headers=owner.headers,
        ) as head:
            await head.send_complete()
        assert head.status_code == 200
        assert head.headers["Content-Length"] == str(len(payload))
        for after in (0, 1, len(payload)):
            await _download_broken_off(client, owner, conn, target, after)
        assert pool.leased_count() == 0
        await _upload_broken_off(client, owner, conn, f"{path}/broken.bin", pool)
        await wait_until(lambda: pool.leased_count() == 0)
    pool.wait_seconds = 0.05  # a pool left full would now answer 429 instead of waiting
    response = await get_file(client, owner, conn, target)
    assert response.status_code == 200
    assert await response.get_data() == payload
    assert pool.leased_count() == 0
    assert (local / "leases.bin").read_bytes() == payload
    await wait_until(lambda: sorted(p.name for p in local.iterdir()) == ["leases.bin"])


async def test_parallel_transfers_beyond_the_pool_wait_their_turn(
    client, kernel, owner, conn, base
):
    pool = kernel.files
    path, _ = base
    payload = random.Random(12).randbytes(2 * MIB + 1)
    target = f"{path}/parallel.bin"
    assert (await put_file(client, owner, conn, target, payload)).status_code == 200
    responses = await asyncio.gather(
        *(get_file(client, owner, conn, target) for _ in range(pool.max_per_key + 2))
    )
    assert [r.status_code for r in responses] == [200] * (pool.max_per_key + 2)
    for response in responses:
        assert await response.get_data() == payload
    assert pool.leased_count() == 0
    assert 1 <= pool.open_count() <= pool.max_per_key


async def test_a_full_pool_answers_429_saying_why(client, kernel, owner, conn, base):
    """Every session of the connection busy (uploads waiting for their bodies): the next
    operation gets a 429 that names the limit, with Retry-After; once the uploads break
    off, their sessions come back."""
    pool = kernel.files
    path, _ = base
    async with AsyncExitStack() as stack:
        uploads = []
        for index in range(pool.max_per_key):
            connection = await stack.enter_async_context(
                client.request(
                    url(conn, "upload"),
                    method="POST",
                    query_string={"path": f"{path}/held-{index}.bin"},
                    headers=owner.headers,
                )
            )
            await connection.send(b"x" * MIB)
            uploads.append(connection)
        await wait_until(lambda: pool.leased_count() == pool.max_per_key)
        patience, pool.wait_seconds = pool.wait_seconds, 0.05
        response = await client.post(url(conn, "list"), json={"path": path}, headers=owner.headers)
        assert response.status_code == 429
        assert response.headers["Retry-After"] == "5"
        body = await response.get_json()
        assert body["code"] == "too_many_transfers"
        assert body["limit"] == pool.max_per_key
        assert f"{pool.max_per_key} in parallel" in body["error"]
        for connection in uploads:
            await connection.disconnect()
    # each upload gives its session back once its clean-up ended, which may take up to
    # the adapters' own clean-up bound (30 s), not the 10 s wait_until allows by default
    await wait_until(lambda: pool.leased_count() == 0, timeout=60)
    # the usual patience again: a session leaked by the uploads would still be refused
    pool.wait_seconds = patience
    response = await client.post(url(conn, "list"), json={"path": path}, headers=owner.headers)
    assert response.status_code == 200, (response.status_code, await response.get_data())


async def test_a_lease_whose_request_ends_without_it_goes_back(kernel, owner, conn, base):
    """A task that took a session and ended without giving it back (here: a download
    whose response was never sent) does not keep it: the stream closes its remote file,
    the session is discarded, and the pool has room again."""
    pool = kernel.files
    path, local = base
    (local / "kept.bin").write_bytes(b"k" * (3 * MIB))
    caller = await kernel.identity.authenticate(owner.token, ClientInfo(ip_address="127.0.0.1"))
    work = await kernel.file_transfers.open(conn.protocol, conn.id, caller, None)

    async def forgetful() -> None:
        download = await work.start_download(f"{path}/kept.bin")
        await download.stream(0, 3 * MIB, "3 MiB")

    await asyncio.create_task(forgetful())
    await wait_until(lambda: pool.leased_count() == 0)
    assert pool.open_count() == 0
    result = await work.run("list", lambda adapter: adapter.list(path))
    assert [entry.name for entry in result] == ["kept.bin"]
    assert pool.leased_count() == 0
