"""SPEC §4.1 for ``ftp`` over HTTP: every row the protocol lists, and the ones it does not."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from testsupport.file_rows import (  # noqa: F401  (shared SPEC §4.1 rows run for this pack)
    test_a_full_pool_answers_429_saying_why,
    test_a_lease_whose_request_ends_without_it_goes_back,
    test_a_missing_path_is_404_over_http,
    test_aborted_http_upload_leaves_nothing,
    test_empty_file_upload_and_download,
    test_every_transfer_gives_its_session_back,
    test_parallel_transfers_beyond_the_pool_wait_their_turn,
    test_upload_download_round_trip,
    url,
)
from testsupport.ftpd import FtpServer
from testsupport.peers import free_port


@pytest.fixture
async def owner(make_user: Any) -> Any:
    return await make_user("ftpowner")


@pytest.fixture
async def conn(make_connection: Any, owner: Any, ftp_server: FtpServer) -> Any:
    return await make_connection(
        owner,
        "ftp",
        ftp_server.host,
        ftp_server.port,
        name="FTP server",
        username=ftp_server.username or "",
        password=ftp_server.password,
    )


@pytest.fixture
def base(ftp_server: FtpServer) -> tuple[str, Path]:
    path = f"{ftp_server.writable.rstrip('/')}/h-{uuid.uuid4().hex[:10]}"
    local = ftp_server.local(path)
    local.mkdir()
    local.chmod(0o777)
    return path, local


def writable_dir(path: Path) -> Path:
    path.mkdir()
    path.chmod(0o777)
    return path


async def test_list_returns_spec_entries(client, owner, conn, base):
    path, local = base
    writable_dir(local / "sub dir")
    (local / "grüße.txt").write_bytes(b"12345")
    (local / "empty").write_bytes(b"")
    response = await client.post(url(conn, "list"), json={"path": path}, headers=owner.headers)
    assert response.status_code == 200
    files = (await response.get_json())["files"]
    assert {f["filename"]: f["fileAttributes"] for f in files} == {
        "sub dir": {"size": 0, "isDirectory": True},
        "grüße.txt": {"size": 5, "isDirectory": False},
        "empty": {"size": 0, "isDirectory": False},
    }


async def test_stat_is_flat_with_size_mtime_and_type(client, owner, conn, base):
    path, local = base
    (local / "s.txt").write_bytes(b"abc")
    writable_dir(local / "d")
    response = await client.post(
        url(conn, "stat"), json={"path": f"{path}/s.txt"}, headers=owner.headers
    )
    assert response.status_code == 200
    body = await response.get_json()
    assert set(body) == {"size", "mtime", "isDirectory"}
    assert (body["size"], body["isDirectory"]) == (3, False)
    assert body["mtime"].endswith("Z")
    stamp = datetime.strptime(body["mtime"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert abs(stamp.timestamp() - (local / "s.txt").stat().st_mtime) < 2
    response = await client.post(
        url(conn, "stat"), json={"path": f"{path}/d"}, headers=owner.headers
    )
    assert (await response.get_json())["isDirectory"] is True
    response = await client.post(
        url(conn, "stat"), json={"path": f"{path}/missing"}, headers=owner.headers
    )
    assert response.status_code == 404


async def test_mkdir_rename_and_recursive_delete(client, owner, conn, base):
    path, local = base
    for directory in (f"{path}/one", f"{path}/one/two", f"{path}/other"):
        response = await client.post(
            url(conn, "mkdir"), json={"path": directory}, headers=owner.headers
        )
        assert response.status_code == 200
        assert await response.get_json() == {"success": True}
    response = await client.post(
        url(conn, "upload"),
        query_string={"path": f"{path}/one/two/f.txt"},
        data=b"f",
        headers=owner.headers,
    )
    assert response.status_code == 200
    response = await client.post(
        url(conn, "rename"),
        json={"oldPath": f"{path}/one/two", "newPath": f"{path}/other/moved two"},
        headers=owner.headers,
    )
    assert response.status_code == 200
    assert (local / "other" / "moved two" / "f.txt").read_text() == "f"
    response = await client.delete(
        url(conn, "file"), query_string={"path": f"{path}/other"}, headers=owner.headers
    )
    assert response.status_code == 200
    assert await response.get_json() == {"success": True}
    assert sorted(p.name for p in local.iterdir()) == ["one"]
    response = await client.post(
        url(conn, "mkdir"), json={"path": f"{path}/one"}, headers=owner.headers
    )
    assert response.status_code == 409


async def test_operations_ftp_does_not_offer_are_404(client, owner, conn, base):
    path, local = base
    (local / "f.txt").write_text("f")
    for suffix, body in (
        ("chmod", {"path": f"{path}/f.txt", "mode": 0o600}),
        ("copy", {"srcPath": f"{path}/f.txt", "destPath": f"{path}/g.txt"}),
    ):
        response = await client.post(url(conn, suffix), json=body, headers=owner.headers)
        assert response.status_code in (404, 405), suffix
        assert "error" in await response.get_json()
    assert sorted(p.name for p in local.iterdir()) == ["f.txt"]


async def test_permission_denied_is_403(client, owner, make_connection, vsftpd):
    anonymous = await make_connection(owner, "ftp", vsftpd.host, vsftpd.port)
    response = await client.post(
        url(anonymous, "mkdir"), json={"path": "/locked/x"}, headers=owner.headers
    )
    assert response.status_code == 403
    assert (await response.get_json())["code"] == "remote_permission_denied"
    assert not vsftpd.local("/locked/x").exists()


async def test_bad_credentials_and_unreachable_server_are_502(
    client, owner, make_connection, pyftpd
):
    wrong = await make_connection(
        owner, "ftp", pyftpd.host, pyftpd.port, username="alice", password="not the password"
    )
    response = await client.post(url(wrong, "list"), json={"path": "/"}, headers=owner.headers)
    assert response.status_code == 502
    body = await response.get_json()
    assert body["code"] == "remote_auth_failed"
    assert "not the password" not in body["error"]
    down = await make_connection(owner, "ftp", "127.0.0.1", free_port())
    response = await client.post(url(down, "list"), json={"path": "/"}, headers=owner.headers)
    assert response.status_code == 502
    assert (await response.get_json())["code"] == "remote_unreachable"


async def test_ftps_connection_over_http(client, owner, make_connection, vsftpd):
    verified = await make_connection(owner, "ftp", vsftpd.host, vsftpd.port, extra={"ftps": True})
    response = await client.post(url(verified, "list"), json={"path": "/"}, headers=owner.headers)
    assert response.status_code == 502
    assert "certificate" in (await response.get_json())["error"]
    response = await client.post(
        "/api/v1/connections",
        json={
            "name": "self-signed",
            "protocol": "ftp",
            "host": vsftpd.host,
            "port": vsftpd.port,
            "ftps": True,
            "skipCertValidation": True,
        },
        headers=owner.headers,
    )
    assert response.status_code == 201
    connection_id = (await response.get_json())["id"]
    response = await client.post(
        f"/api/v1/ftp/{connection_id}/upload",
        query_string={"path": "/pub/over tls.txt"},
        data=b"tls",
        headers=owner.headers,
    )
    assert response.status_code == 200
    assert vsftpd.local("/pub/over tls.txt").read_bytes() == b"tls"
    response = await client.delete(
        f"/api/v1/ftp/{connection_id}/file",
        query_string={"path": "/pub/over tls.txt"},
        headers=owner.headers,
    )
    assert response.status_code == 200


async def test_user_without_use_ftp_is_refused(client, make_user, conn):
    no_ftp = await make_user("noftp", permissions=["connections.use_smb"])
    response = await client.post(url(conn, "list"), json={"path": "/"}, headers=no_ftp.headers)
    assert response.status_code in (403, 404)
    stranger = await make_user("stranger")
    response = await client.post(url(conn, "list"), json={"path": "/"}, headers=stranger.headers)
    assert response.status_code == 404


async def test_connection_field_ftps(client, owner, vsftpd):
    base_body = {"name": "f", "protocol": "ftp", "host": vsftpd.host, "port": vsftpd.port}
    response = await client.post(
        "/api/v1/connections", json={**base_body, "ftps": True}, headers=owner.headers
    )
    assert response.status_code == 201
    assert (await response.get_json())["extraConfig"] == {"ftps": True}
    response = await client.post(
        "/api/v1/connections", json={**base_body, "ftps": "sometimes"}, headers=owner.headers
    )
    assert response.status_code == 400
    response = await client.post("/api/v1/connections", json=base_body, headers=owner.headers)
    assert response.status_code == 201
    assert (await response.get_json())["port"] == vsftpd.port


async def test_a_download_hands_the_received_bytes_to_http_in_order(
    client, owner, make_connection, vsftpd, monkeypatch
):
    from hostgate.chunkreader import SMALL_CHUNK, ChunkReader
    from hostgate.services.sessions.file_transfers import DownloadStream

    received: list[bytes] = []
    feed = ChunkReader.feed_data
    monkeypatch.setattr(
        ChunkReader, "feed_data", lambda self, data: (received.append(data), feed(self, data))[1]
    )
    relayed: list[bytes] = []
    next_chunk = DownloadStream.__anext__

    async def spy(self: DownloadStream) -> bytes:
        chunk = await next_chunk(self)
        relayed.append(chunk)
        return chunk

    monkeypatch.setattr(DownloadStream, "__anext__", spy)
    payload = random.Random(9).randbytes(5 * 1024 * 1024 + 4321)  # an odd size
    local = vsftpd.local("/pub") / f"odd-{uuid.uuid4().hex[:8]}.bin"
    local.write_bytes(payload)
    try:
        connection = await make_connection(owner, "ftp", vsftpd.host, vsftpd.port)
        response = await client.get(
            url(connection, "download"),
            query_string={"path": f"/pub/{local.name}"},
            headers=owner.headers,
        )
        assert response.status_code == 200
        assert await response.get_data() == payload
    finally:
        local.unlink()
    assert b"".join(relayed) == payload  # in order, nothing lost
    big = [chunk for chunk in relayed if len(chunk) >= SMALL_CHUNK]
    assert big and all(any(chunk is piece for piece in received) for chunk in big)
