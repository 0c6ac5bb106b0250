"""Remote sessions are pooled per user and connection, bounded, closed when idle or revoked."""

from __future__ import annotations

import asyncio

from hostgate.closereasons import CloseReason

from tests.services.sessions.files.conftest import url
from testsupport.file_rows import wait_until


async def list_root(client, user, conn):
    return await client.post(url(conn, "list"), json={"path": "/"}, headers=user.headers)


async def test_sessions_are_reused_across_requests(client, kernel, owner, memconn, mem_state):
    for _ in range(3):
        assert (await list_root(client, owner, memconn)).status_code == 200
    assert mem_state.opened == 1
    live = [s for s in kernel.live.all() if s.kind == "files"]
    assert len(live) == 1
    assert live[0].user_id == owner.id
    assert live[0].connection_id == memconn.id
    assert live[0].protocol == "memfs"


async def test_each_user_gets_their_own_session(
    client, owner, make_user, make_connection, mem_state
):
    other = await make_user("other")
    shared = await make_connection(owner, "memfs", shared=True)
    await list_root(client, owner, shared)
    await list_root(client, other, shared)
    assert mem_state.opened == 2


async def test_idle_sessions_close(client, kernel, owner, memconn, mem_state):
    await list_root(client, owner, memconn)
    assert await kernel.files.sweep() == 0
    kernel.files.idle_seconds = 0
    assert await kernel.files.sweep() == 1
    assert mem_state.open_now == 0
    assert [s for s in kernel.live.all() if s.kind == "files"] == []
    await list_root(client, owner, memconn)
    assert mem_state.opened == 2


async def test_revocation_closes_the_session(client, kernel, owner, memconn, mem_state):
    await list_root(client, owner, memconn)
    assert (
        await kernel.live.close_where(
            "access revoked", reason_code=CloseReason.REVOKED, user_id=owner.id, kind="files"
        )
        == 1
    )
    assert mem_state.open_now == 0
    assert kernel.files.open_count() == 0
    assert (await list_root(client, owner, memconn)).status_code == 200
    assert mem_state.opened == 2


async def test_concurrent_requests_are_bounded_and_all_succeed(
    client, kernel, owner, memconn, mem_state
):
    mem_state.gate = asyncio.Event()
    requests = [asyncio.ensure_future(list_root(client, owner, memconn)) for _ in range(7)]
    await wait_until(lambda: mem_state.in_flight == kernel.files.max_per_key)
    for _ in range(20):
        await asyncio.sleep(0.01)
    assert mem_state.in_flight == kernel.files.max_per_key
    mem_state.gate.set()
    responses = await asyncio.gather(*requests)
    assert [r.status_code for r in responses] == [200] * 7
    assert mem_state.max_in_flight == kernel.files.max_per_key
    assert mem_state.opened == kernel.files.max_per_key


async def test_a_dead_pooled_session_is_replaced_for_idempotent_operations(
    client, owner, memconn, mem_state
):
    await list_root(client, owner, memconn)
    mem_state.failures["/"] = ConnectionResetError("connection closed while idle")
    response = await list_root(client, owner, memconn)
    assert response.status_code == 200
    assert mem_state.opened == 2
    assert mem_state.open_now == 1


async def test_a_failed_mutation_is_not_retried(client, owner, memconn, mem_state):
    await list_root(client, owner, memconn)
    mem_state.failures["/d"] = ConnectionResetError("gone")
    response = await client.post(url(memconn, "mkdir"), json={"path": "/d"}, headers=owner.headers)
    assert response.status_code == 502
    assert "/d" not in mem_state.files[memconn.id]
    assert mem_state.open_now == 0


async def test_a_refusal_keeps_the_session(client, owner, memconn, mem_state):
    response = await client.get(
        url(memconn, "download"), query_string={"path": "/nope"}, headers=owner.headers
    )
    assert response.status_code == 404
    await list_root(client, owner, memconn)
    assert mem_state.opened == 1


async def test_shutdown_closes_every_session(
    client, kernel, owner, memconn, make_connection, mem_state
):
    await list_root(client, owner, memconn)
    await list_root(client, owner, await make_connection(owner, "memfs"))
    assert mem_state.open_now == 2
    await kernel.live.close_all("server shutting down", CloseReason.SHUTTING_DOWN)
    await kernel.files.stop()
    assert mem_state.open_now == 0
    assert kernel.files.open_count() == 0
