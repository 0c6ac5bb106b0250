"""POST /connections/health-check against real peers: an sshd that is up, a closed port,
and targets the caller may not probe (denied, not theirs, a protocol they may not use)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from hostgate.services.connections import health_checks
from hostgate.services.netpolicy import PROTECTED_DEFAULT

from tests.services.connections.support import audit_entries, send
from testsupport.peers import free_port

PATH = "/connections/health-check"


@pytest.fixture
async def listener() -> AsyncIterator[tuple[int, list[str]]]:
    """A TCP server on 127.0.0.1 and ::1 that records every connection it accepts."""
    accepted: list[str] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(str(writer.get_extra_info("peername")[0]))
        writer.close()

    port = free_port()
    server = await asyncio.start_server(accept, host=["127.0.0.1", "::1"], port=port)
    try:
        yield port, accepted
    finally:
        server.close()
        await server.wait_closed()


async def check(client, user, *ids: str, expect: int = 200):
    body = {"checks": [{"id": i} for i in ids]}
    return await send(client, "POST", PATH, user, body, expect=expect)


async def test_up_down_and_denied(
    client, admin, kernel, make_user, make_connection, sshd, listener
):
    port, accepted = listener
    await send(client, "PUT", "/settings", admin, {"network.deny": "::1"})
    owner = await make_user("owner")
    up = await make_connection(owner, "ssh", sshd.host, sshd.port)
    down = await make_connection(owner, "ssh", "127.0.0.1", free_port())
    denied = await make_connection(owner, "ssh", "::1", port)
    body = await check(client, owner, up.id, down.id, denied.id, up.id)
    results = {r["id"]: r for r in body["results"]}
    assert [r["id"] for r in body["results"]] == [up.id, down.id, denied.id]
    assert results[up.id]["reachable"] is True
    assert isinstance(results[up.id]["latencyMs"], int) and results[up.id]["latencyMs"] >= 0
    assert results[up.id]["reason"] is None
    no_answer = {"reachable": False, "latencyMs": None, "reason": "no_answer"}
    assert results[down.id] == {"id": down.id, **no_answer}
    # the policy's refusal is told apart from a host that does not answer
    denied_result = {"reachable": False, "latencyMs": None, "reason": "target_denied"}
    assert results[denied.id] == {"id": denied.id, **denied_result}
    assert accepted == []  # the denied target was never contacted
    # a poll is no connection attempt: the audit log is not filled with denials
    assert await audit_entries(kernel, "network.denied") == []


async def test_only_connections_the_caller_may_use_are_probed(
    client, make_user, make_connection, listener
):
    port, accepted = listener
    owner = await make_user("owner")
    stranger = await make_user("stranger")
    no_ssh = await make_user("viewer", permissions=["connections.use_telnet"])
    private = await make_connection(owner, "ssh", "127.0.0.1", port)
    shared = await make_connection(owner, "ssh", "127.0.0.1", port, shared=True)
    # another's connection or an unknown id: no hint whether the policy would refuse it
    unreachable = {"reachable": False, "latencyMs": None, "reason": "not_usable"}
    body = await check(client, stranger, private.id, "no-such-id")
    assert body["results"] == [
        {"id": private.id, **unreachable},
        {"id": "no-such-id", **unreachable},
    ]
    body = await check(client, no_ssh, shared.id)
    assert body["results"] == [{"id": shared.id, **unreachable}]
    assert accepted == []
    body = await check(client, stranger, shared.id)
    assert body["results"][0]["reachable"] is True
    assert accepted == ["127.0.0.1"]


async def test_the_shipped_policy_keeps_loopback_out(
    client, admin, make_user, make_connection, listener
):
    port, accepted = listener
    await send(client, "PUT", "/settings", admin, {"network.protected": PROTECTED_DEFAULT})
    owner = await make_user("owner")
    connection = await make_connection(owner, "ssh", "127.0.0.1", port)
    body = await check(client, owner, connection.id)
    assert body["results"][0]["reachable"] is False
    assert body["results"][0]["reason"] == "target_denied"
    assert accepted == []


async def test_bad_bodies_and_the_rate_limit(client, make_user, make_connection, sshd):
    user = await make_user("poller")
    for bad in ({}, {"checks": "x"}, {"checks": [{"id": 5}]}, {"checks": [{}]}):
        await send(client, "POST", PATH, user, bad, expect=400)
    too_many = {"checks": [{"id": f"c{i}"} for i in range(health_checks.MAX_CHECKS + 1)]}
    await send(client, "POST", PATH, user, too_many, expect=400)
    connection = await make_connection(user, "ssh", sshd.host, sshd.port)
    for _ in range(health_checks.PER_USER.attempts):
        await check(client, user, connection.id)
    limited = await check(client, user, connection.id, expect=429)
    assert limited["code"] == "rate_limited"
    other = await make_user("other")
    await check(client, other, connection.id)


async def test_an_approval_required_connection_is_probed_only_while_approved(
    client, kernel, make_user, make_connection, listener
):
    port, accepted = listener
    owner = await make_user("owner")
    bob = await make_user("bob", permissions=["connections.use_ssh"])
    approver = await make_user("approver", permissions=["access.approve"])
    guarded = await make_connection(owner, "ssh", "127.0.0.1", port, shared=True)
    async with kernel.db.session() as session:
        guarded.approval_required = True
        session.add(guarded)
        await session.commit()
    unreachable = {"id": guarded.id, "reachable": False, "latencyMs": None, "reason": "not_usable"}
    assert (await check(client, bob, guarded.id))["results"] == [unreachable]
    assert accepted == []  # not even a connect while bob holds no approval
    # the owner needs no approval
    assert (await check(client, owner, guarded.id))["results"][0]["reachable"] is True
    accepted.clear()
    asked = await send(
        client, "POST", "/access-requests", bob,
        {"connectionId": guarded.id, "minutes": 30, "reason": "INC-7"}, expect=201,
    )  # fmt: skip
    await send(client, "POST", f"/access-requests/{asked['request']['id']}/approve", approver, {})
    assert (await check(client, bob, guarded.id))["results"][0]["reachable"] is True
    assert accepted
