"""Live nudges for access requests (``/ws/events``): the requester's and the approvers'
open pages hear of a request, its decision and its end; nobody else does."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from hostgate import utcnow
from hostgate_access.models import AccessRequest
from hostgate_access.plugin import service
from hostgate_access.service import ACCESS_REQUESTS

from plugins.access.tests.test_access_requests import API, ask, decide
from tests.services.sessions.helpers import ticket_for

STEP = 10.0


async def guarded(client: Any, owner: Any) -> str:
    """A connection that needs approval (nothing connects to it here)."""
    body = {
        "name": "prod-db", "protocol": "ssh", "host": "127.0.0.1", "port": 22,
        "username": "x", "password": "y", "shared": True, "approvalRequired": True,
    }  # fmt: skip
    response = await client.post(f"{API}/connections", headers=owner.headers, json=body)
    assert response.status_code == 201, await response.get_json()
    return str((await response.get_json())["id"])


async def next_frame(socket: Any) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(socket.receive(), STEP))  # type: ignore[no-any-return]


async def test_the_requester_and_the_approvers_hear_of_each_step(client, kernel, make_user):
    owner = await make_user("owner", role="admin")
    bob = await make_user("bob", permissions=["connections.use_ssh"])
    approver = await make_user("approver", permissions=["access.approve"])
    connection_id = await guarded(client, owner)
    changed = {"type": "changed", "topic": ACCESS_REQUESTS}
    async with (
        client.websocket(f"/ws/events?ticket={ticket_for(kernel, bob)}") as mine,
        client.websocket(f"/ws/events?ticket={ticket_for(kernel, approver)}") as theirs,
    ):
        assert await next_frame(mine) == {"type": "ready"}
        assert await next_frame(theirs) == {"type": "ready"}
        request = (await (await ask(client, bob, connection_id)).get_json())["request"]
        assert await next_frame(theirs) == changed  # a new request for the approvers
        assert await next_frame(mine) == changed
        assert (await decide(client, approver, request["id"], "approve")).status_code == 200
        assert await next_frame(mine) == changed  # the decision for the requester
        assert await next_frame(theirs) == changed
        assert (await decide(client, approver, request["id"], "revoke")).status_code == 200
        assert await next_frame(mine) == changed
        assert await next_frame(theirs) == changed
        # a second access runs out by itself: the gateway's expiry nudges both too
        again = (await (await ask(client, bob, connection_id)).get_json())["request"]
        assert await next_frame(mine) == changed
        assert await next_frame(theirs) == changed
        assert (await decide(client, approver, again["id"], "approve")).status_code == 200
        assert await next_frame(mine) == changed
        assert await next_frame(theirs) == changed
        async with kernel.db.session() as session:
            row = await session.get(AccessRequest, again["id"])
            row.ends_at = utcnow() - timedelta(seconds=1)
            session.add(row)
            await session.commit()
        assert await service(kernel).sweep() == 1
        assert await next_frame(mine) == changed
        assert await next_frame(theirs) == changed


async def test_a_used_ticket_is_refused(client, kernel, make_user):
    bob = await make_user("bob", permissions=["connections.use_ssh"])
    ticket = ticket_for(kernel, bob)
    async with client.websocket(f"/ws/events?ticket={ticket}") as socket:
        assert await next_frame(socket) == {"type": "ready"}
    async with client.websocket(f"/ws/events?ticket={ticket}") as socket:
        frame = await next_frame(socket)
        assert frame["type"] == "error" and frame["reason"] == "ticket_invalid"
