"""A hostile FTP server: listings with escapes, NUL and ``../``, 100,000 entries, no end.

The gateway answers with the names as data (JSON strings), skips what no path can
address, keeps its memory bounded while a listing floods it, refuses what passes
its limits with 502 and the one error shape, and answers ``/health`` meanwhile.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hostgate_ftp.files import MAX_ENTRIES, MAX_LISTING_BYTES, MAX_TREE_DEPTH

from testsupport.file_rows import url
from testsupport.hostile.ftp import ENDLESS_BYTES, MANY, HostileFtp
from testsupport.hostile.memory import MIB, peak_growth


@pytest.fixture
async def owner(make_user: Any) -> Any:
    return await make_user("ftpowner")


@pytest.fixture
async def conn(make_connection: Any, owner: Any, hostile_ftp: HostileFtp) -> Any:
    return await make_connection(
        owner,
        "ftp",
        hostile_ftp.host,
        hostile_ftp.port,
        name="hostile ftp",
        username=hostile_ftp.username,
        password=hostile_ftp.password,
    )


async def listing(client: Any, owner: Any, conn: Any, path: str) -> Any:
    return await client.post(url(conn, "list"), json={"path": path}, headers=owner.headers)


async def test_names_with_escapes_are_data_and_unaddressable_ones_are_skipped(client, owner, conn):
    response = await listing(client, owner, conn, "/names")
    assert response.status_code == 200
    names = sorted(entry["filename"] for entry in (await response.get_json())["files"])
    # "../escape" and "a\0b" name nothing a path can reach: skipped; the escapes stay
    # characters of a name (JSON escapes them), never acted on by the gateway
    assert names == sorted(
        [
            "\x1b[31mred\x1b[0m",
            "\x1b]52;c;cHduZWQ=\x07clip",
            "\x1b]0;owned title\x07title",
            "plain.txt",
        ]
    )
    raw = await response.get_data()
    assert b"\x1b" not in raw and b"\x07" not in raw and b"\\u001b" in raw


async def answer_health_until_done(client: Any, task: asyncio.Future[Any]) -> Any:
    """``/health`` answers while ``task`` runs; then its result."""
    while not task.done():
        health = await client.get("/health")
        assert health.status_code == 200
        await asyncio.sleep(0.05)
    return task.result()


async def test_a_hundred_thousand_entries_list_with_bounded_memory(client, owner, conn):
    assert MANY <= MAX_ENTRIES
    with peak_growth() as growth:
        task = asyncio.ensure_future(listing(client, owner, conn, "/many"))
        response = await answer_health_until_done(client, task)
        body = await response.get_json()
    assert response.status_code == 200
    assert len(body["files"]) == MANY
    assert body["files"][0]["filename"] == "file-000000.txt"
    assert growth.grown < 300 * MIB, growth


async def test_an_endless_listing_is_cut_at_its_bound_and_the_gateway_stays_up(
    client,
    owner,
    conn,
    hostile_ftp,
):
    with peak_growth() as growth:
        task = asyncio.ensure_future(listing(client, owner, conn, "/endless"))
        # the gateway answers others while the flood comes in
        response = await answer_health_until_done(client, task)
    assert response.status_code == 502
    body = await response.get_json()
    assert body["code"] == "remote_error"
    assert "larger than 32 MiB" in body["error"]
    # the gateway stopped reading at its bound: the server handed out the bound, what the
    # kernel's socket buffers hold and one read's worth more, never the whole flood
    assert hostile_ftp.endless_sent() < MAX_LISTING_BYTES + 32 * MIB < ENDLESS_BYTES
    assert growth.grown < MAX_LISTING_BYTES * 4, growth
    # the session still works: the abandoned connection was dropped, a fresh one lists
    again = await listing(client, owner, conn, "/names")
    assert again.status_code == 200


async def test_a_directory_listed_inside_itself_is_not_deleted_forever(
    client, owner, conn, hostile_ftp
):
    task = asyncio.ensure_future(
        client.delete(url(conn, "file"), query_string={"path": "/loop"}, headers=owner.headers)
    )
    response = await answer_health_until_done(client, task)
    body = await response.get_json()
    assert response.status_code == 422, body
    assert body["code"] == "tree_too_deep"
    assert f"more than {MAX_TREE_DEPTH} directories deep" in body["error"]
    assert (hostile_ftp.root / "loop" / "keep.txt").read_text() == "kept"  # nothing deleted
