"""An SMB share with a very deep tree (real smbd, nested directories made on its disk).

A recursive delete walks the tree iteratively and within its bounds: a tree deeper
than ``MAX_TREE_DEPTH`` is refused with 422 and the one error shape before anything
is deleted (the old recursion raised RecursionError past about 1,000 levels: a 500
with the tree half deleted), one within the bounds is deleted whole, and the
gateway answers ``/health`` meanwhile.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from hostgate_smb.share import MAX_TREE_DEPTH

from testsupport.file_rows import url
from testsupport.samba import SambaServer

TOO_DEEP = 1100
"""Past Python's recursion limit, and within the disk's PATH_MAX ("d/" per level)."""


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


def deep_tree(samba: SambaServer, depth: int) -> tuple[str, Path, Path]:
    """A tree ``depth`` directories deep with a file at the bottom: (share path, top, bottom)."""
    name = f"deep-{uuid.uuid4().hex[:10]}"
    top = samba.share_dir("files") / name
    bottom = top
    top.mkdir()
    for _ in range(depth):  # one by one: os.makedirs recurses per level
        bottom = bottom / "d"
        bottom.mkdir()
    (bottom / "leaf.txt").write_text("leaf")
    return f"/{name}", top, bottom


def remove_deep(top: Path, bottom: Path) -> None:
    """Remove a tree made by :func:`deep_tree` bottom up (shutil.rmtree and os.walk
    recurse per level on Python 3.11)."""
    (bottom / "leaf.txt").unlink()
    while bottom != top:
        bottom.rmdir()
        bottom = bottom.parent
    top.rmdir()


async def delete_answering_health(client: Any, owner: Any, conn: Any, path: str) -> Any:
    task = asyncio.ensure_future(
        client.delete(url(conn, "file"), query_string={"path": path}, headers=owner.headers)
    )
    while not task.done():
        assert (await client.get("/health")).status_code == 200
        await asyncio.sleep(0.05)
    return task.result()


async def test_a_tree_deeper_than_the_bound_is_refused_and_left_whole(client, owner, conn, samba):
    path, top, bottom = deep_tree(samba, TOO_DEEP)
    try:
        await refused_and_whole(client, owner, conn, path, bottom)
    finally:
        remove_deep(top, bottom)


async def refused_and_whole(client: Any, owner: Any, conn: Any, path: str, bottom: Path) -> None:
    response = await delete_answering_health(client, owner, conn, path)
    assert response.status_code == 422
    body = await response.get_json()
    assert body["code"] == "tree_too_deep"
    assert f"more than {MAX_TREE_DEPTH} directories deep" in body["error"]
    assert (bottom / "leaf.txt").read_text() == "leaf"  # nothing was deleted
    # a listing of any level is one level: it answers however deep the tree goes
    listed = await client.post(
        url(conn, "list"), json={"path": path + "/d" * 500}, headers=owner.headers
    )
    assert listed.status_code == 200
    assert [f["filename"] for f in (await listed.get_json())["files"]] == ["d"]


async def test_a_tree_within_the_bound_is_deleted_deepest_first(client, owner, conn, samba):
    path, top, _ = deep_tree(samba, MAX_TREE_DEPTH - 1)
    (top / "d" / "side.txt").write_text("side")
    response = await delete_answering_health(client, owner, conn, path)
    assert response.status_code == 200, await response.get_data()
    assert not top.exists()
