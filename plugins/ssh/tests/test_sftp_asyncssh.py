"""sftp against asyncssh's SFTP-only server (no shell): with and without copy-data/posix-rename."""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import asyncssh
import pytest
from hostgate import ConnectionTarget
from hostgate_ssh import sftp
from hostgate_ssh.sftp import open_files

from plugins.ssh.tests.sftp_support import api, call, download, names, upload


@pytest.fixture(params=["asyncssh_sftp", "asyncssh_sftp_plain"])
def server(request: pytest.FixtureRequest) -> Any:
    """Both asyncssh servers: every extension, and neither copy-data nor posix-rename."""
    return request.getfixturevalue(request.param)


@pytest.fixture
def area(server: Any) -> Iterator[tuple[str, Path]]:
    """A fresh directory in the server's jail: (remote path, local path)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    local = server.root / name
    local.mkdir()
    yield f"/{name}", local
    shutil.rmtree(local, ignore_errors=True)


@pytest.fixture
async def owner(make_user: Any) -> Any:
    return await make_user("owner")


@pytest.fixture
async def conn(make_connection: Any, owner: Any, server: Any) -> Any:
    return await make_connection(
        owner,
        "sftp",
        server.host,
        server.port,
        name="asyncssh",
        username=server.username,
        password=server.password,
    )


def target(server: Any) -> ConnectionTarget:
    return ConnectionTarget(
        connection_id="c",
        protocol="sftp",
        name="asyncssh",
        host=server.host,
        address=server.host,
        port=server.port,
        username=server.username,
        password=server.password,
    )


async def test_the_adapter_sees_which_extensions_the_server_offers(server):
    files = await open_files(SimpleNamespace(state={}), target(server))
    try:
        assert files.server_copies is server.copy_data
    finally:
        await files.close()


async def test_every_row_on_an_sftp_only_server(client, owner, conn, area):
    remote, local = area
    assert (await call(client, owner, conn, "mkdir", json={"path": f"{remote}/d"}))[0] == 200
    data = os.urandom(2_500_000)
    assert (await upload(client, owner, conn, f"{remote}/d/a b.bin", data)).status_code == 200
    assert (local / "d" / "a b.bin").read_bytes() == data
    status, body = await call(client, owner, conn, "list", json={"path": f"{remote}/d"})
    assert status == 200 and names(body) == ["a b.bin"]
    response = await download(client, owner, conn, f"{remote}/d/a b.bin", Range="bytes=10-")
    assert response.status_code == 206 and await response.get_data() == data[10:]
    status, body = await call(
        client, owner, conn, "chmod", json={"path": f"{remote}/d/a b.bin", "mode": 0o604}
    )
    assert status == 200
    status, body = await call(client, owner, conn, "stat", json={"path": f"{remote}/d/a b.bin"})
    assert body["permissions"] == "-rw----r--" and body["size"] == len(data)
    status, _ = await call(
        client, owner, conn, "copy", json={"srcPath": f"{remote}/d", "destPath": f"{remote}/e"}
    )
    assert status == 200
    assert (local / "e" / "a b.bin").read_bytes() == data
    assert (local / "e" / "a b.bin").stat().st_mode & 0o777 == 0o604
    status, _ = await call(
        client,
        owner,
        conn,
        "rename",
        json={"oldPath": f"{remote}/e/a b.bin", "newPath": f"{remote}/moved.bin"},
    )
    assert status == 200 and (local / "moved.bin").read_bytes() == data
    response = await client.delete(
        api(conn, "file"), query_string={"path": f"{remote}/d"}, headers=owner.headers
    )
    assert response.status_code == 200
    assert sorted(p.name for p in local.iterdir()) == ["e", "moved.bin"]


async def test_copy_of_a_tree_streams_when_the_server_cannot_copy(client, owner, conn, area):
    remote, local = area
    (local / "src" / "x" / "y").mkdir(parents=True)
    big = os.urandom(5 * 1024 * 1024 + 3)
    (local / "src" / "big.bin").write_bytes(big)
    (local / "src" / "x" / "y" / "small.txt").write_bytes(b"small")
    (local / "src" / "x" / "empty").write_bytes(b"")
    status, body = await call(
        client, owner, conn, "copy", json={"srcPath": f"{remote}/src", "destPath": f"{remote}/dst"}
    )
    assert (status, body) == (200, {"success": True})
    assert (local / "dst" / "big.bin").read_bytes() == big
    assert (local / "dst" / "x" / "y" / "small.txt").read_bytes() == b"small"
    assert (local / "dst" / "x" / "empty").read_bytes() == b""


async def test_upload_over_an_existing_file_without_posix_rename(client, owner, conn, area):
    remote, local = area
    (local / "f.txt").write_bytes(b"before")
    for contents in (b"after", b"after again, longer"):
        response = await upload(client, owner, conn, f"{remote}/f.txt", contents)
        assert response.status_code == 200
        assert (local / "f.txt").read_bytes() == contents
    assert [p.name for p in local.iterdir()] == ["f.txt"]


@pytest.mark.parametrize(
    "path",
    [
        "/../../../../etc/passwd",
        "../../../../../../etc/passwd",
        "/%2e%2e/etc/passwd",
        "/..//..//etc//hostname",
    ],
)
async def test_traversal_stays_inside_the_remote_jail(client, owner, conn, server, path):
    response = await download(client, owner, conn, path)
    assert response.status_code == 404
    assert (await response.get_json())["code"] == "remote_not_found"


async def test_paths_never_reach_the_gateways_own_filesystem(client, owner, conn, server, config):
    database = str(config.data_dir / "hostgate.db")
    assert Path(database).exists()
    response = await download(client, owner, conn, database)
    assert response.status_code == 404
    response = await upload(client, owner, conn, "/../../escape.txt", b"inside")
    assert response.status_code == 200
    assert (server.root / "escape.txt").read_bytes() == b"inside"
    (server.root / "escape.txt").unlink()
    assert not (server.root.parent / "escape.txt").exists()
    status, _ = await call(client, owner, conn, "list", json={"path": str(config.data_dir)})
    assert status == 404


async def test_url_segments_cannot_traverse(client, owner, conn):
    for bad in (
        f"/api/v1/..%2Fsftp/{conn.id}/list",
        f"/api/v1/sftp/..%2F{conn.id}/list",
        f"/api/v1/sftp/{conn.id}%2F..%2F..%2Fsettings/list",
    ):
        response = await client.post(bad, json={"path": "/"}, headers=owner.headers)
        assert response.status_code == 404, bad


async def test_a_temporary_file_a_dead_server_kept_is_removed_by_the_next_session():
    """The server dies mid-upload, so the failed upload cannot delete its temporary
    file; the next session to the same connection does."""
    from hostgate import RemoteError

    from testsupport.asyncssh_server import start_server
    from testsupport.peers import stop

    server, base = start_server()
    kernel = SimpleNamespace(state={})
    try:
        files = await open_files(kernel, target(server))

        async def dying() -> Any:
            yield os.urandom(1024 * 1024)
            server.process.kill()
            server.process.wait()
            for _ in range(8):
                yield os.urandom(1024 * 1024)

        with pytest.raises(RemoteError):
            await files.write("/big.bin", dying())
        await files.close()
        kept = [p.name for p in server.root.iterdir()]
        assert len(kept) == 1 and kept[0].startswith(".hgpart-"), kept
        back, _ = start_server(base=base, port=server.port)
        try:
            again = await open_files(kernel, target(back))
            try:
                assert list(server.root.iterdir()) == []
                assert await again.list("/") == []
            finally:
                await again.close()
        finally:
            stop(back.process)
    finally:
        stop(server.process)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("path", ["/", "//", "/./", "/{name}/..", ".", "..", "../{name}/../.."])
async def test_the_remote_root_is_never_deleted(client, owner, conn, area, server, path):
    remote, local = area
    (local / "kept.txt").write_bytes(b"kept")
    before = sorted(p.name for p in server.root.iterdir())
    response = await client.delete(
        api(conn, "file"),
        query_string={"path": path.format(name=remote.lstrip("/"))},
        headers=owner.headers,
    )
    body = await response.get_json()
    assert response.status_code == 400, body
    assert body["code"] == "root_not_deletable"
    assert "root directory cannot be deleted" in body["error"]
    assert (local / "kept.txt").read_bytes() == b"kept"
    assert sorted(p.name for p in server.root.iterdir()) == before


async def test_an_upload_is_cut_into_whole_blocks_without_copying_them(asyncssh_sftp, monkeypatch):
    """Chunks of any size go out as full blocks in order: views of one joined buffer."""
    import asyncssh

    server = asyncssh_sftp
    files = await open_files(SimpleNamespace(state={}), target(server))
    sent: list[tuple[int, object]] = []
    original = asyncssh.SFTPClientFile.write

    async def spy(self: Any, data: Any, offset: int | None = None) -> int:
        sent.append((offset or 0, data))
        return await original(self, data, offset)

    monkeypatch.setattr(asyncssh.SFTPClientFile, "write", spy)
    block = files.write_block
    payload = os.urandom(3 * block + 1234)
    sizes = [100_000, block, 7]
    sizes.append(len(payload) - sum(sizes))

    async def chunks() -> Any:
        start = 0
        for size in sizes:
            yield payload[start : start + size]
            start += size

    name = f"/blocks-{uuid.uuid4().hex[:6]}.bin"
    try:
        assert await files.write(name, chunks()) == len(payload)
    finally:
        await files.close()
    assert (server.root / name.lstrip("/")).read_bytes() == payload
    assert [offset for offset, _ in sent] == [0, block, 2 * block, 3 * block]
    assert [len(data) for _, data in sent] == [block, block, block, 1234]  # type: ignore[arg-type]
    assert all(isinstance(data, memoryview) for _, data in sent[:3])
    (server.root / name.lstrip("/")).unlink()


async def test_an_open_cancelled_while_sftp_starts_closes_its_connection(server, monkeypatch):
    """The client goes away while the SFTP session is being started: the SSH connection
    made for it is closed (nothing else holds it, so it stayed open until the process
    ended, one more on the server per broken-off request)."""
    made: list[asyncssh.SSHClientConnection] = []
    starting = asyncio.Event()
    real_connect = sftp.connect

    async def connect(target: ConnectionTarget, **options: Any) -> asyncssh.SSHClientConnection:
        made.append(await real_connect(target, **options))
        return made[-1]

    async def start_sftp_client(self: Any, **options: Any) -> None:
        starting.set()
        await asyncio.Event().wait()  # the server never answers

    monkeypatch.setattr(sftp, "connect", connect)
    monkeypatch.setattr(asyncssh.SSHClientConnection, "start_sftp_client", start_sftp_client)
    opening = asyncio.ensure_future(open_files(SimpleNamespace(state={}), target(server)))
    await asyncio.wait_for(starting.wait(), 30)
    opening.cancel()
    with pytest.raises(asyncio.CancelledError):
        await opening
    [connection] = made
    await asyncio.wait_for(connection.wait_closed(), 10)
