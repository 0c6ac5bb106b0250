"""The kernel's file routes with the in-memory protocol: shapes, guards, errors, streaming."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from hostgate import RemoteNotFound

from tests.services.sessions.files.conftest import url
from testsupport.file_rows import wait_until


async def put_file(client: Any, user: Any, conn: Any, path: str, data: bytes) -> None:
    response = await client.post(
        url(conn, "upload"), query_string={"path": path}, data=data, headers=user.headers
    )
    assert response.status_code == 200, await response.get_data()
    assert await response.get_json() == {"success": True}


async def test_list_returns_entries_with_basic_attributes(client, owner, memconn):
    await client.post(url(memconn, "mkdir"), json={"path": "/docs"}, headers=owner.headers)
    await put_file(client, owner, memconn, "/a b.txt", b"hello")
    response = await client.post(url(memconn, "list"), json={"path": "/"}, headers=owner.headers)
    assert response.status_code == 200
    assert await response.get_json() == {
        "files": [
            {"filename": "docs", "fileAttributes": {"size": 0, "isDirectory": True}},
            {"filename": "a b.txt", "fileAttributes": {"size": 5, "isDirectory": False}},
        ]
    }


async def test_list_without_path_lists_the_starting_directory(client, owner, memconn):
    await put_file(client, owner, memconn, "/x", b"1")
    response = await client.post(url(memconn, "list"), json={}, headers=owner.headers)
    assert [f["filename"] for f in (await response.get_json())["files"]] == ["x"]


async def test_stat_is_flat_with_the_protocols_fields(client, owner, memconn):
    await put_file(client, owner, memconn, "/f.bin", b"12345678")
    response = await client.post(
        url(memconn, "stat"), json={"path": "/f.bin"}, headers=owner.headers
    )
    assert await response.get_json() == {
        "size": 8,
        "mtime": "2024-05-06T07:08:09.000Z",
        "isDirectory": False,
    }


async def test_mutations_answer_success(client, owner, memconn, mem_state):
    headers = owner.headers
    assert (
        await client.post(url(memconn, "mkdir"), json={"path": "/d"}, headers=headers)
    ).status_code == 200
    await put_file(client, owner, memconn, "/d/one", b"1")
    response = await client.post(
        url(memconn, "rename"), json={"oldPath": "/d/one", "newPath": "/d/two"}, headers=headers
    )
    assert await response.get_json() == {"success": True}
    response = await client.post(
        url(memconn, "copy"), json={"srcPath": "/d", "destPath": "/e"}, headers=headers
    )
    assert await response.get_json() == {"success": True}
    response = await client.delete(
        url(memconn, "file"), query_string={"path": "/d"}, headers=headers
    )
    assert await response.get_json() == {"success": True}
    tree = mem_state.files[memconn.id]
    assert sorted(tree) == ["/", "/e", "/e/two"]


async def test_unknown_protocol_is_404(client, owner, memconn):
    response = await client.post(
        url(memconn, "list", "nosuch"), json={"path": "/"}, headers=owner.headers
    )
    assert response.status_code == 404
    assert (await response.get_json())["code"] == "unknown_protocol"


async def test_operation_the_protocol_does_not_offer_is_404(
    client, owner, memconn, make_connection
):
    response = await client.post(
        url(memconn, "chmod"), json={"path": "/", "mode": 0o755}, headers=owner.headers
    )
    assert response.status_code == 404
    assert (await response.get_json())["code"] == "unsupported_operation"
    lite = await make_connection(owner, "memlite")
    for suffix, body in (("stat", {"path": "/"}), ("copy", {"srcPath": "/a", "destPath": "/b"})):
        response = await client.post(url(lite, suffix), json=body, headers=owner.headers)
        assert response.status_code == 404, suffix
        assert (await response.get_json())["code"] == "unsupported_operation"


async def test_connection_of_another_protocol_is_404(client, owner, memconn):
    response = await client.post(
        url(memconn, "list", "memlite"), json={"path": "/"}, headers=owner.headers
    )
    assert response.status_code == 404


async def test_authentication_comes_before_the_body(client, memconn):
    response = await client.post(url(memconn, "chmod"), json={"mode": "bad"})
    assert response.status_code == 401
    response = await client.get(url(memconn, "download"))
    assert response.status_code == 401


async def test_access_rules(client, owner, memconn, make_user, make_connection):
    stranger = await make_user("stranger")
    response = await client.post(url(memconn, "list"), json={"path": "/"}, headers=stranger.headers)
    assert response.status_code == 404
    shared = await make_connection(owner, "memfs", shared=True)
    response = await client.post(url(shared, "list"), json={"path": "/"}, headers=stranger.headers)
    assert response.status_code == 200
    limited = await make_user("limited", permissions=["connections.create"])
    own = await make_connection(limited, "memfs")
    response = await client.post(url(own, "list"), json={"path": "/"}, headers=limited.headers)
    assert response.status_code == 403
    assert "connections.use_memfs" in (await response.get_json())["error"]


@pytest.mark.parametrize(
    ("suffix", "body"),
    [
        ("list", {"path": "/a\x00b"}),
        ("mkdir", {"path": "/" + "x" * 5000}),
        ("mkdir", {"path": ""}),
        ("mkdir", {"path": 5}),
        ("rename", {"oldPath": "/a"}),
        ("chmod", {"path": "/a", "mode": "0644"}),
        ("chmod", {"path": "/a", "mode": 0o10000}),
        ("chmod", {"path": "/a", "mode": True}),
        ("copy", {"srcPath": "/a", "destPath": "\x00"}),
    ],
)
async def test_bad_input_is_400_and_changes_nothing(
    client, owner, memconn, mem_state, suffix, body
):
    response = await client.post(url(memconn, suffix), json=body, headers=owner.headers)
    assert response.status_code == 400
    assert set(await response.get_json()) == {"error", "code"}
    assert mem_state.files.get(memconn.id, {"/": None}) == {"/": None}


async def test_query_path_is_required_and_checked(client, owner, memconn):
    for method, suffix in (("GET", "download"), ("DELETE", "file"), ("POST", "upload")):
        response = await client.open(url(memconn, suffix), method=method, headers=owner.headers)
        assert response.status_code == 400, suffix
        response = await client.open(
            url(memconn, suffix) + "?path=%2Fa%00b", method=method, headers=owner.headers
        )
        assert response.status_code == 400, suffix


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (RuntimeError("disk on fire"), 502, "remote_error"),
        (ConnectionResetError("reset by peer"), 502, "remote_unreachable"),
        (TimeoutError(), 504, "remote_timeout"),
        (RemoteNotFound("No such file: /gone"), 404, "remote_not_found"),
        (KeyError("x"), 502, "remote_error"),
    ],
)
async def test_adapter_failures_are_mapped_never_500(
    client, owner, memconn, mem_state, error, status, code
):
    mem_state.failures["/gone"] = error
    response = await client.post(
        url(memconn, "mkdir"), json={"path": "/gone"}, headers=owner.headers
    )
    assert response.status_code == status
    body = await response.get_json()
    assert body["code"] == code
    assert body["error"]


async def test_download_streams_with_length_and_attachment_name(client, owner, memconn):
    data = bytes(range(256)) * 40
    await put_file(client, owner, memconn, "/Grüße & co.bin", data)
    response = await client.get(
        url(memconn, "download"), query_string={"path": "/Grüße & co.bin"}, headers=owner.headers
    )
    assert response.status_code == 200
    assert await response.get_data() == data
    assert response.headers["Content-Length"] == str(len(data))
    assert response.headers["Content-Type"] == "application/octet-stream"
    assert response.headers["Accept-Ranges"] == "bytes"
    disposition = response.headers["Content-Disposition"]
    assert disposition.startswith('attachment; filename="Gr__e & co.bin"')
    assert f"filename*=UTF-8''{quote('Grüße & co.bin', safe='')}" in disposition


async def test_download_ranges(client, owner, memconn):
    data = bytes(range(100))
    await put_file(client, owner, memconn, "/r", data)
    get = url(memconn, "download")
    headers = owner.headers

    response = await client.get(
        get, query_string={"path": "/r"}, headers={**headers, "Range": "bytes=10-19"}
    )
    assert response.status_code == 206
    assert await response.get_data() == data[10:20]
    assert response.headers["Content-Range"] == "bytes 10-19/100"
    assert response.headers["Content-Length"] == "10"

    response = await client.get(
        get, query_string={"path": "/r"}, headers={**headers, "Range": "bytes=-5"}
    )
    assert response.status_code == 206
    assert await response.get_data() == data[95:]

    response = await client.get(
        get, query_string={"path": "/r"}, headers={**headers, "Range": "bytes=90-500"}
    )
    assert response.status_code == 206
    assert await response.get_data() == data[90:]

    # the rules recordings follow too (one parser): past the end, last before first,
    # an empty suffix
    for header in ("bytes=100-", "bytes=50-10", "bytes=-0"):
        response = await client.get(
            get, query_string={"path": "/r"}, headers={**headers, "Range": header}
        )
        assert response.status_code == 416, header
        assert response.headers["Content-Range"] == "bytes */100"
        assert (await response.get_json())["code"] == "range_not_satisfiable"

    response = await client.get(
        get, query_string={"path": "/r"}, headers={**headers, "Range": "bytes=0-1,5-6"}
    )
    assert response.status_code == 200
    assert await response.get_data() == data

    stale = {**headers, "Range": "bytes=0-0", "If-Range": '"0-0"'}
    response = await client.get(get, query_string={"path": "/r"}, headers=stale)
    assert response.status_code == 200
    etag = response.headers["ETag"]
    fresh = {**headers, "Range": "bytes=0-0", "If-Range": etag}
    response = await client.get(get, query_string={"path": "/r"}, headers=fresh)
    assert response.status_code == 206
    assert await response.get_data() == data[:1]


async def test_head_and_directory_downloads(client, owner, memconn, mem_state):
    await put_file(client, owner, memconn, "/h", b"abc")
    async with client.request(
        url(memconn, "download"), method="HEAD", query_string={"path": "/h"}, headers=owner.headers
    ) as connection:
        await connection.send_complete()
    assert connection.status_code == 200
    assert connection.headers["Content-Length"] == "3"
    assert bytes(connection.response_data) == b""
    assert mem_state.open_now == 1
    response = await client.get(
        url(memconn, "download"), query_string={"path": "/"}, headers=owner.headers
    )
    assert response.status_code == 400
    assert (await response.get_json())["code"] == "is_directory"
    response = await client.get(
        url(memconn, "download"), query_string={"path": "/nope"}, headers=owner.headers
    )
    assert response.status_code == 404


async def test_upload_larger_than_the_body_limit_streams(app, client, owner, memconn, mem_state):
    limit = app.config["MAX_CONTENT_LENGTH"]
    payload = b"z" * (limit + 3 * 1024 * 1024)
    await put_file(client, owner, memconn, "/big", payload)
    assert mem_state.files[memconn.id]["/big"] == payload
    too_big = b'{"path": "/x"' + b" " * limit + b"}"
    headers = {**owner.headers, "Content-Type": "application/json"}
    response = await client.post(url(memconn, "mkdir"), data=too_big, headers=headers)
    assert response.status_code == 413
    assert "/x" not in mem_state.files[memconn.id]


async def test_upload_sent_in_pieces(client, owner, memconn, mem_state):
    async with client.request(
        url(memconn, "upload"),
        method="POST",
        query_string={"path": "/pieces"},
        headers=owner.headers,
    ) as connection:
        for index in range(50):
            await connection.send(bytes([index]) * 100_000)
        await connection.send_complete()
    response = await connection.as_response()
    assert response.status_code == 200
    assert mem_state.files[memconn.id]["/pieces"] == b"".join(
        bytes([i]) * 100_000 for i in range(50)
    )


async def test_aborted_upload_leaves_no_file_and_no_event(
    client, kernel, owner, memconn, mem_state
):
    async with client.request(
        url(memconn, "upload"),
        method="POST",
        query_string={"path": "/aborted"},
        headers=owner.headers,
    ) as connection:
        await connection.send(b"x" * 50_000)
        await wait_until(lambda: any("part" in p for p in mem_state.files.get(memconn.id, {})))
        await connection.disconnect()
    assert mem_state.uploads_failed == 1
    assert "/aborted" not in mem_state.files[memconn.id]
    assert [p for p in mem_state.files[memconn.id] if "part" in p] == []
    assert await kernel.file_sessions.page(_admin_caller(owner), _page()) == []


def _admin_caller(user: Any) -> Any:
    from hostgate import Caller

    return Caller(
        user_id=user.id,
        username=user.username,
        display_name="",
        role_id="",
        role_name="",
        permissions=frozenset({"sessions.view_any"}),
        login_session_id=None,
    )


def _page() -> Any:
    from hostgate.pagination import Page

    return Page(page=1, limit=50)


async def test_upload_into_a_missing_directory_is_404(client, owner, memconn):
    response = await client.post(
        url(memconn, "upload"),
        query_string={"path": "/no/such/dir/f"},
        data=b"1",
        headers=owner.headers,
    )
    assert response.status_code == 404
