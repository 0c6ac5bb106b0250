"""SPEC §4.1 for ``smb`` over HTTP: every row the protocol lists, and the ones it does not."""

from __future__ import annotations

import uuid
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
from testsupport.peers import free_port
from testsupport.samba import SambaServer


@pytest.fixture
async def owner(make_user: Any) -> Any:
    return await make_user("smbowner")


@pytest.fixture
async def conn(make_connection: Any, owner: Any, samba: SambaServer) -> Any:
    return await make_connection(
        owner,
        "smb",
        samba.host,
        samba.port,
        name="Samba share",
        username=samba.username,
        password=samba.password,
        extra={"share": "files"},
    )


@pytest.fixture
def base(samba: SambaServer) -> tuple[str, Path]:
    name = f"h-{uuid.uuid4().hex[:10]}"
    local = samba.share_dir("files") / name
    local.mkdir()
    return f"/{name}", local


async def test_list_returns_spec_entries(client, owner, conn, base):
    path, local = base
    (local / "sub dir").mkdir()
    (local / "grüße.txt").write_bytes(b"12345")
    (local / "empty").write_bytes(b"")
    response = await client.post(url(conn, "list"), json={"path": path}, headers=owner.headers)
    assert response.status_code == 200
    files = (await response.get_json())["files"]
    by_name = {f["filename"]: f["fileAttributes"] for f in files}
    assert by_name == {
        "sub dir": {"size": 0, "isDirectory": True},
        "grüße.txt": {"size": 5, "isDirectory": False},
        "empty": {"size": 0, "isDirectory": False},
    }


async def test_mkdir_rename_and_recursive_delete(client, owner, conn, base):
    path, local = base
    for directory in (f"{path}/one", f"{path}/one/two", f"{path}/other"):
        response = await client.post(
            url(conn, "mkdir"), json={"path": directory}, headers=owner.headers
        )
        assert response.status_code == 200
        assert await response.get_json() == {"success": True}
    (local / "one" / "two" / "f.txt").write_text("f")
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


async def test_operations_smb_does_not_offer_are_404(client, owner, conn, base):
    path, local = base
    (local / "f.txt").write_text("f")
    for suffix, body in (
        ("stat", {"path": f"{path}/f.txt"}),
        ("chmod", {"path": f"{path}/f.txt", "mode": 0o600}),
        ("copy", {"srcPath": f"{path}/f.txt", "destPath": f"{path}/g.txt"}),
    ):
        response = await client.post(url(conn, suffix), json=body, headers=owner.headers)
        assert response.status_code in (404, 405), suffix
        assert "error" in await response.get_json()
    assert sorted(p.name for p in local.iterdir()) == ["f.txt"]


async def test_read_only_share_is_403(client, owner, make_connection, samba):
    readonly = await make_connection(
        owner,
        "smb",
        samba.host,
        samba.port,
        username=samba.username,
        password=samba.password,
        extra={"share": "readonly"},
    )
    response = await client.post(url(readonly, "mkdir"), json={"path": "/x"}, headers=owner.headers)
    assert response.status_code == 403
    assert (await response.get_json())["code"] == "remote_permission_denied"
    assert not (samba.share_dir("readonly") / "x").exists()


async def test_bad_credentials_and_unreachable_server_are_502(
    client, owner, make_connection, samba
):
    wrong = await make_connection(
        owner,
        "smb",
        samba.host,
        samba.port,
        username=samba.username,
        password="not the password",
        extra={"share": "files"},
    )
    response = await client.post(url(wrong, "list"), json={"path": "/"}, headers=owner.headers)
    assert response.status_code == 502
    body = await response.get_json()
    assert body["code"] == "remote_auth_failed"
    assert "not the password" not in body["error"]
    down = await make_connection(owner, "smb", "127.0.0.1", free_port(), extra={"share": "files"})
    response = await client.post(url(down, "list"), json={"path": "/"}, headers=owner.headers)
    assert response.status_code == 502
    assert (await response.get_json())["code"] == "remote_unreachable"


async def test_permission_and_ownership_are_enforced(client, make_user, conn):
    stranger = await make_user("stranger")
    response = await client.post(url(conn, "list"), json={"path": "/"}, headers=stranger.headers)
    assert response.status_code == 404
    no_smb = await make_user("nosmb", permissions=["connections.use_ftp"])
    response = await client.post(url(conn, "list"), json={"path": "/"}, headers=no_smb.headers)
    assert response.status_code in (403, 404)
    response = await client.post(url(conn, "list"), json={"path": "/"})
    assert response.status_code == 401


async def test_events_are_logged_for_a_file_session(client, owner, conn, base):
    path, local = base
    headers = {**owner.headers, "X-File-Session-Id": str(uuid.uuid4())}
    await client.post(url(conn, "list"), json={"path": path}, headers=headers)
    await client.post(
        url(conn, "upload"), query_string={"path": f"{path}/a.txt"}, data=b"abc", headers=headers
    )
    await client.post(url(conn, "mkdir"), json={"path": f"{path}/d"}, headers=headers)
    response = await client.get("/api/v1/file-sessions", headers=owner.headers)
    assert response.status_code == 200
    sessions = (await response.get_json())["sessions"]
    entry = next(s for s in sessions if s["connectionName"] == "Samba share")
    assert entry["protocol"] == "smb"
    assert entry["eventCount"] == 3
    events = await client.get(f"/api/v1/file-sessions/{entry['id']}/events", headers=owner.headers)
    assert events.status_code == 200
    items = (await events.get_json())["events"]
    assert sorted((e["action"], e["path"]) for e in items) == sorted(
        [("browse", path), ("upload", f"{path}/a.txt"), ("mkdir", f"{path}/d")]
    )
    assert all(isinstance(e["detail"], str) for e in items)


async def test_connection_fields_share_and_domain(client, owner, samba):
    base_body = {"name": "s", "protocol": "smb", "host": samba.host, "port": samba.port}
    response = await client.post("/api/v1/connections", json=base_body, headers=owner.headers)
    assert response.status_code == 201  # the spec's create fields alone: every share
    assert (await response.get_json())["extraConfig"] == {}
    response = await client.post(
        "/api/v1/connections",
        json={**base_body, "share": "files", "domain": "HOSTGATE", "username": samba.username},
        headers=owner.headers,
    )
    assert response.status_code == 201
    created = await response.get_json()
    assert created["extraConfig"] == {"share": "files", "domain": "HOSTGATE"}
    response = await client.post(
        "/api/v1/connections",
        json={**base_body, "extraConfig": {"share": "files", "unknown": 1}},
        headers=owner.headers,
    )
    assert response.status_code == 400


@pytest.mark.parametrize("path", ["/", "//", "\\", ".", "/./", "{name}/..", "\\{name}\\..\\.."])
async def test_the_share_root_is_never_deleted(client, owner, conn, base, samba, path):
    name, local = base
    (local / "kept.txt").write_bytes(b"kept")
    root = samba.share_dir("files")
    before = sorted(p.name for p in root.iterdir())
    response = await client.delete(
        url(conn, "file"),
        query_string={"path": path.format(name=name.lstrip("/"))},
        headers=owner.headers,
    )
    body = await response.get_json()
    assert response.status_code == 400, body
    assert body["code"] == "root_not_deletable"
    assert "root cannot be deleted" in body["error"] or "root directory" in body["error"]
    assert (local / "kept.txt").read_bytes() == b"kept"
    assert sorted(p.name for p in root.iterdir()) == before


@pytest.fixture
async def server_conn(client: Any, owner: Any, samba: SambaServer) -> Any:
    """An smb connection made with only the spec's create fields: no share."""
    response = await client.post(
        "/api/v1/connections",
        json={
            "name": "whole server",
            "protocol": "smb",
            "host": samba.host,
            "port": samba.port,
            "username": samba.username,
            "password": samba.password,
        },
        headers=owner.headers,
    )
    assert response.status_code == 201, await response.get_json()
    return await response.get_json()


def server_url(connection: Any, operation: str) -> str:
    return f"/api/v1/smb/{connection['id']}/{operation}"


async def test_without_a_share_the_root_lists_the_shares(client, owner, server_conn, base):
    name, local = base
    (local / "report.txt").write_bytes(b"12345")
    for path in ("/", ""):
        response = await client.post(
            server_url(server_conn, "list"), json={"path": path}, headers=owner.headers
        )
        assert response.status_code == 200, await response.get_json()
        files = (await response.get_json())["files"]
        assert sorted(f["filename"] for f in files) == ["files", "public", "readonly"]
        assert all(f["fileAttributes"]["isDirectory"] for f in files)
    response = await client.post(
        server_url(server_conn, "list"), json={"path": f"/files{name}"}, headers=owner.headers
    )
    assert [f["filename"] for f in (await response.get_json())["files"]] == ["report.txt"]


async def test_without_a_share_the_first_segment_names_it(client, owner, server_conn, base):
    name, local = base
    response = await client.post(
        server_url(server_conn, "upload"),
        query_string={"path": f"/files{name}/up.bin"},
        data=b"uploaded",
        headers=owner.headers,
    )
    assert response.status_code == 200, await response.get_json()
    assert (local / "up.bin").read_bytes() == b"uploaded"
    response = await client.get(
        server_url(server_conn, "download"),
        query_string={"path": f"/files{name}/up.bin"},
        headers=owner.headers,
    )
    assert await response.get_data() == b"uploaded"
    response = await client.post(
        server_url(server_conn, "mkdir"), json={"path": f"/files{name}/sub"}, headers=owner.headers
    )
    assert response.status_code == 200 and (local / "sub").is_dir()
    response = await client.post(
        server_url(server_conn, "rename"),
        json={"oldPath": f"/files{name}/up.bin", "newPath": f"/files{name}/sub/moved.bin"},
        headers=owner.headers,
    )
    assert response.status_code == 200 and (local / "sub" / "moved.bin").exists()
    response = await client.delete(
        server_url(server_conn, "file"),
        query_string={"path": f"/files{name}/sub"},
        headers=owner.headers,
    )
    assert response.status_code == 200 and not (local / "sub").exists()


@pytest.mark.parametrize(
    ("method", "operation", "arguments", "status", "code"),
    [
        ("delete", "file", {"query_string": {"path": "/files"}}, 400, "root_not_deletable"),
        ("delete", "file", {"query_string": {"path": "/"}}, 400, "root_not_deletable"),
        ("post", "mkdir", {"json": {"path": "/newshare"}}, 400, "invalid_input"),
        (
            "post",
            "rename",
            {"json": {"oldPath": "/files/keep.txt", "newPath": "/public/keep.txt"}},
            400,
            "invalid_input",
        ),
        ("post", "list", {"json": {"path": "/no-such-share"}}, 404, "remote_not_found"),
    ],
)
async def test_without_a_share_shares_themselves_are_left_alone(
    client, owner, server_conn, samba, method, operation, arguments, status, code
):
    root = samba.share_dir("files")
    (root / "keep.txt").write_bytes(b"kept")
    try:
        before = sorted(p.name for p in root.iterdir())
        call = getattr(client, method)
        response = await call(
            server_url(server_conn, operation), headers=owner.headers, **arguments
        )
        body = await response.get_json()
        assert (response.status_code, body["code"]) == (status, code), body
        assert sorted(p.name for p in root.iterdir()) == before
        assert (root / "keep.txt").read_bytes() == b"kept"
        assert not (samba.share_dir("public") / "keep.txt").exists()
    finally:
        (root / "keep.txt").unlink()
