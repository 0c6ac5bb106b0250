"""SPEC 4.1 for sftp over HTTP, against a real OpenSSH sshd (internal-sftp)."""

from __future__ import annotations

import asyncio
import csv
import io
import os
import pwd
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from plugins.ssh.tests.sftp_support import (
    api,
    call,
    download,
    give,
    names,
    upload,
)
from testsupport.file_rows import (  # noqa: F401  (shared rows run for this pack)
    test_a_full_pool_answers_429_saying_why,
    test_a_lease_whose_request_ends_without_it_goes_back,
    test_every_transfer_gives_its_session_back,
    test_parallel_transfers_beyond_the_pool_wait_their_turn,
)
from testsupport.peers import free_port

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture
async def owner(make_user: Any) -> Any:
    return await make_user("owner")


@pytest.fixture
async def conn(make_connection: Any, owner: Any, sshd: Any) -> Any:
    return await make_connection(
        owner,
        "sftp",
        sshd.host,
        sshd.port,
        name="OpenSSH box",
        username=sshd.username,
        password=sshd.password,
    )


@pytest.fixture
def base(workdir: Path) -> tuple[str, Path]:
    """The shared rows' (remote directory, local directory): the same path over SFTP."""
    return str(workdir), workdir


async def test_listing_has_full_sftp_attributes(client, owner, conn, workdir):
    (workdir / "report.txt").write_bytes(b"12345")
    (workdir / "report.txt").chmod(0o640)
    (workdir / "sub").mkdir(mode=0o750)
    (workdir / "link").symlink_to("sub")
    give(workdir)
    status, body = await call(client, owner, conn, "list", json={"path": str(workdir)})
    assert status == 200
    assert names(body) == ["link", "sub", "report.txt"]
    entries = {e["filename"]: e["fileAttributes"] for e in body["files"]}
    uid = pwd.getpwnam("hgtest").pw_uid
    report = entries["report.txt"]
    assert set(report) == {
        "size",
        "isDirectory",
        "permissions",
        "mode",
        "uid",
        "gid",
        "atime",
        "mtime",
    }
    assert report["size"] == 5
    assert report["isDirectory"] is False
    assert report["permissions"] == "-rw-r-----"
    assert report["mode"] == 0o100640
    assert report["uid"] == uid
    assert ISO.match(report["mtime"]) and ISO.match(report["atime"])
    local_mtime = datetime.fromtimestamp(int((workdir / "report.txt").stat().st_mtime), UTC)
    assert report["mtime"] == local_mtime.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert entries["sub"]["permissions"] == "drwxr-x---"
    assert entries["sub"]["isDirectory"] is True
    assert entries["link"]["permissions"].startswith("l")
    assert entries["link"]["isDirectory"] is True


async def test_stat_is_flat_and_chmod_shows_in_it(client, owner, conn, workdir):
    target = workdir / "script.sh"
    target.write_bytes(b"#!/bin/sh\n")
    give(target)
    status, body = await call(
        client, owner, conn, "chmod", json={"path": str(target), "mode": 0o750}
    )
    assert (status, body) == (200, {"success": True})
    assert target.stat().st_mode & 0o7777 == 0o750
    status, body = await call(client, owner, conn, "stat", json={"path": str(target)})
    assert status == 200
    assert set(body) == {
        "size",
        "mode",
        "permissions",
        "uid",
        "gid",
        "atime",
        "mtime",
        "isDirectory",
    }
    assert body["mode"] & 0o7777 == 0o750
    assert body["permissions"] == "-rwxr-x---"
    assert body["size"] == 10
    assert body["isDirectory"] is False
    status, body = await call(client, owner, conn, "stat", json={"path": str(workdir)})
    assert body["isDirectory"] is True and body["permissions"].startswith("d")


async def test_round_trips_with_spaces_unicode_and_empty_files(client, owner, conn, workdir):
    folder = f"{workdir}/Ordner mit Umlauten äöü"
    status, _ = await call(client, owner, conn, "mkdir", json={"path": folder})
    assert status == 200
    payload = os.urandom(3 * 1024 * 1024 + 17)
    cases = {
        f"{folder}/rapport final (v2) ✓.bin": payload,
        f"{folder}/日本語 ファイル.txt": "こんにちは\n".encode(),
        f"{folder}/empty file": b"",
    }
    for path, data in cases.items():
        response = await upload(client, owner, conn, path, data)
        assert response.status_code == 200, await response.get_data()
        assert Path(path).read_bytes() == data
        response = await download(client, owner, conn, path)
        assert response.status_code == 200
        assert await response.get_data() == data
        assert response.headers["Content-Length"] == str(len(data))
    status, body = await call(client, owner, conn, "list", json={"path": folder})
    assert sorted(names(body)) == sorted(p.rsplit("/", 1)[1] for p in cases)
    sizes = {e["filename"]: e["fileAttributes"]["size"] for e in body["files"]}
    assert sizes["empty file"] == 0
    response = await download(client, owner, conn, f"{folder}/日本語 ファイル.txt")
    assert "filename*=UTF-8''%E6%97%A5%E6%9C%AC%E8%AA%9E" in response.headers["Content-Disposition"]


async def test_mkdir_rename_across_directories_and_recursive_delete(client, owner, conn, workdir):
    for path in ("a", "a/deep", "a/deep/er", "b"):
        status, _ = await call(client, owner, conn, "mkdir", json={"path": f"{workdir}/{path}"})
        assert status == 200
    for path in ("a/one.txt", "a/deep/two.txt", "a/deep/er/three.txt"):
        assert (
            await upload(client, owner, conn, f"{workdir}/{path}", path.encode())
        ).status_code == 200
    status, body = await call(
        client,
        owner,
        conn,
        "rename",
        json={"oldPath": f"{workdir}/a/one.txt", "newPath": f"{workdir}/b/moved.txt"},
    )
    assert (status, body) == (200, {"success": True})
    assert (workdir / "b" / "moved.txt").read_bytes() == b"a/one.txt"
    assert not (workdir / "a" / "one.txt").exists()
    status, _ = await call(
        client,
        owner,
        conn,
        "rename",
        json={"oldPath": f"{workdir}/a/deep", "newPath": f"{workdir}/b/deep"},
    )
    assert status == 200
    assert (workdir / "b" / "deep" / "er" / "three.txt").read_bytes() == b"a/deep/er/three.txt"
    response = await client.delete(
        api(conn, "file"), query_string={"path": f"{workdir}/b"}, headers=owner.headers
    )
    assert (response.status_code, await response.get_json()) == (200, {"success": True})
    assert not (workdir / "b").exists()
    assert (workdir / "a").is_dir()


async def test_copy_of_a_directory_tree(client, owner, conn, workdir):
    tree = workdir / "src"
    (tree / "nested" / "deeper").mkdir(parents=True)
    files = {
        "top.txt": b"top",
        "nested/data.bin": os.urandom(700_000),
        "nested/deeper/empty": b"",
    }
    for name, data in files.items():
        (tree / name).write_bytes(data)
    (tree / "nested" / "data.bin").chmod(0o600)
    give(workdir)
    status, body = await call(
        client, owner, conn, "copy", json={"srcPath": str(tree), "destPath": f"{workdir}/copy"}
    )
    assert (status, body) == (200, {"success": True})
    for name, data in files.items():
        assert (workdir / "copy" / name).read_bytes() == data
    assert (workdir / "copy" / "nested" / "data.bin").stat().st_mode & 0o777 == 0o600
    status, _ = await call(
        client,
        owner,
        conn,
        "copy",
        json={"srcPath": f"{tree}/top.txt", "destPath": f"{workdir}/top copy.txt"},
    )
    assert status == 200
    assert (workdir / "top copy.txt").read_bytes() == b"top"
    status, body = await call(
        client, owner, conn, "copy", json={"srcPath": str(tree), "destPath": f"{tree}/nested/self"}
    )
    assert status == 400 and body["code"] == "copy_into_self"
    status, body = await call(
        client, owner, conn, "copy", json={"srcPath": str(tree), "destPath": f"{workdir}/copy"}
    )
    assert status == 409


async def test_range_downloads(client, owner, conn, workdir):
    data = os.urandom(1_000_000)
    (workdir / "video.bin").write_bytes(data)
    path = str(workdir / "video.bin")
    response = await download(client, owner, conn, path, Range="bytes=500000-")
    assert response.status_code == 206
    assert response.headers["Content-Range"] == "bytes 500000-999999/1000000"
    assert await response.get_data() == data[500000:]
    response = await download(client, owner, conn, path, Range="bytes=123-456")
    assert await response.get_data() == data[123:457]
    response = await download(client, owner, conn, path, Range="bytes=-10")
    assert await response.get_data() == data[-10:]
    response = await download(client, owner, conn, path, Range="bytes=2000000-")
    assert response.status_code == 416
    assert response.headers["Content-Range"] == "bytes */1000000"


async def test_remote_refusals_are_mapped(client, owner, conn, workdir):
    secret = workdir / "root-only"
    secret.write_bytes(b"no")
    secret.chmod(0o600)
    os.chown(secret, 0, 0)
    response = await download(client, owner, conn, str(secret))
    assert response.status_code == 403
    assert (await response.get_json())["code"] == "remote_permission_denied"
    response = await download(client, owner, conn, f"{workdir}/missing")
    assert response.status_code == 404
    assert (await response.get_json())["code"] == "remote_not_found"
    status, body = await call(client, owner, conn, "mkdir", json={"path": str(workdir)})
    assert status == 409 and body["code"] == "already_exists"
    (workdir / "x").write_bytes(b"x")
    (workdir / "y").write_bytes(b"y")
    give(workdir)
    status, body = await call(
        client, owner, conn, "rename", json={"oldPath": f"{workdir}/x", "newPath": f"{workdir}/y"}
    )
    assert status == 409
    assert (workdir / "y").read_bytes() == b"y"
    status, body = await call(client, owner, conn, "list", json={"path": f"{workdir}/x"})
    assert status in (400, 404, 502) and set(body) == {"error", "code"}
    response = await download(client, owner, conn, str(workdir))
    assert response.status_code == 400
    response = await upload(client, owner, conn, "/etc/hostgate-should-not-exist", b"x")
    assert response.status_code == 403
    assert not Path("/etc/hostgate-should-not-exist").exists()


async def test_connection_failures_say_what_failed(client, owner, make_connection, sshd):
    wrong = await make_connection(
        owner, "sftp", sshd.host, sshd.port, username=sshd.username, password="wrong password"
    )
    status, body = await call(client, owner, wrong, "list", json={"path": "."})
    assert status == 502 and body["code"] == "remote_auth_failed"
    closed = await make_connection(
        owner, "sftp", "127.0.0.1", free_port(), username="x", password="y"
    )
    status, body = await call(client, owner, closed, "list", json={"path": "."})
    assert status == 502 and body["code"] == "remote_unreachable"
    assert str(closed.port) in body["error"]


async def test_upload_replaces_atomically_keeping_the_mode(client, owner, conn, workdir):
    target = workdir / "config.ini"
    target.write_bytes(b"old")
    target.chmod(0o600)
    give(target)
    response = await upload(client, owner, conn, str(target), b"new contents")
    assert response.status_code == 200
    assert target.read_bytes() == b"new contents"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in workdir.iterdir()) == ["config.ini"]
    response = await upload(client, owner, conn, f"{workdir}/no/such/dir/f", b"x")
    assert response.status_code == 404


async def test_an_aborted_upload_leaves_no_partial_file(client, owner, conn, workdir):
    path = f"{workdir}/partial.bin"
    async with client.request(
        api(conn, "upload"), method="POST", query_string={"path": path}, headers=owner.headers
    ) as connection:
        for _ in range(8):
            await connection.send(os.urandom(256 * 1024))
        for _ in range(500):
            temporary = [p for p in workdir.iterdir() if p.name.startswith(".hgpart-")]
            if temporary and temporary[0].stat().st_size > 0:
                break
            await asyncio.sleep(0.01)
        assert temporary, "the upload never started writing"
        await connection.disconnect()
    for _ in range(500):
        if not list(workdir.iterdir()):
            break
        await asyncio.sleep(0.01)
    assert list(workdir.iterdir()) == []


async def test_an_upload_sweeps_stale_temporary_files_of_a_killed_gateway(
    client, owner, conn, workdir
):
    """Temporary files a killed gateway left (untouched for an hour) go at the next upload
    into their directory; a fresh one (an upload in progress elsewhere) and files that
    merely look alike stay."""
    two_hours_ago = datetime.now(UTC).timestamp() - 7200
    stale = workdir / ".hgpart-0123456789abcdef"
    fresh = workdir / ".hgpart-fedcba9876543210"
    lookalike = workdir / ".hgpart-notours"
    old_notes = workdir / "notes.txt"
    for path in (stale, fresh, lookalike, old_notes):
        path.write_bytes(b"left behind")
    for path in (stale, lookalike, old_notes):
        os.utime(path, (two_hours_ago, two_hours_ago))
    give(workdir)
    response = await upload(client, owner, conn, f"{workdir}/new.txt", b"fresh upload")
    assert response.status_code == 200
    assert sorted(p.name for p in workdir.iterdir()) == [
        ".hgpart-fedcba9876543210",
        ".hgpart-notours",
        "new.txt",
        "notes.txt",
    ]


async def test_ssh_connections_with_a_private_key_serve_the_sftp_routes(
    client, owner, make_connection, sshd, workdir
):
    keyed = await make_connection(
        owner, "ssh", sshd.host, sshd.port, username=sshd.username, private_key=sshd.private_key
    )
    (workdir / "k.txt").write_bytes(b"key login")
    response = await download(client, owner, keyed, str(workdir / "k.txt"))
    assert response.status_code == 200 and await response.get_data() == b"key login"
    response = await client.post(
        api(keyed, "list", "smb"), json={"path": "/"}, headers=owner.headers
    )
    assert response.status_code == 404


async def test_permission_and_sharing_narrow_access(
    client, owner, make_user, make_connection, sshd, workdir
):
    sftp_only = await make_user("sftponly", permissions=["connections.use_sftp"])
    ssh_conn = await make_connection(
        owner,
        "ssh",
        sshd.host,
        sshd.port,
        username=sshd.username,
        password=sshd.password,
        shared=True,
    )
    sftp_conn = await make_connection(
        owner,
        "sftp",
        sshd.host,
        sshd.port,
        username=sshd.username,
        password=sshd.password,
        shared=True,
    )
    private = await make_connection(
        owner, "sftp", sshd.host, sshd.port, username=sshd.username, password=sshd.password
    )
    status, body = await call(client, sftp_only, ssh_conn, "list", json={"path": str(workdir)})
    assert status == 403 and "connections.use_ssh" in body["error"]
    status, _ = await call(client, sftp_only, sftp_conn, "list", json={"path": str(workdir)})
    assert status == 200
    status, _ = await call(client, sftp_only, private, "list", json={"path": str(workdir)})
    assert status == 404
    nobody = await make_user("nobody", permissions=[])
    status, _ = await call(client, nobody, sftp_conn, "mkdir", json={"path": f"{workdir}/n"})
    assert status == 403
    assert not (workdir / "n").exists()


async def test_file_session_events_and_csv_export(client, owner, conn, workdir):
    headers = {"X-File-Session-Id": "browser-tab-7"}
    response = await client.post(
        api(conn, "mkdir"), json={"path": f"{workdir}/d"}, headers={**owner.headers, **headers}
    )
    assert response.status_code == 200
    response = await upload(
        client, owner, conn, f'{workdir}/d/f, "q".txt', b"z" * 2048, headers=headers
    )
    assert response.status_code == 200
    response = await client.post(
        api(conn, "chmod"),
        json={"path": f"{workdir}/d", "mode": 0o700},
        headers={**owner.headers, **headers},
    )
    assert response.status_code == 200
    sessions = (
        await (await client.get("/api/v1/file-sessions", headers=owner.headers)).get_json()
    )["sessions"]
    [session] = sessions
    assert session["protocol"] == "sftp" and session["connectionName"] == "OpenSSH box"
    assert session["eventCount"] == 3
    response = await client.get(
        f"/api/v1/file-sessions/{session['id']}/export",
        query_string={"format": "csv"},
        headers=owner.headers,
    )
    rows = list(csv.reader(io.StringIO((await response.get_data()).decode())))
    assert [(r[7], r[8], r[9]) for r in rows[1:]] == [
        ("mkdir", f"{workdir}/d", ""),
        ("upload", f'{workdir}/d/f, "q".txt', "2.0 KiB"),
        ("chmod", f"{workdir}/d", "0700"),
    ]
    assert re.search(
        r'filename="file-activity_OpenSSH_box_\d{14}\.csv"', response.headers["Content-Disposition"]
    )
