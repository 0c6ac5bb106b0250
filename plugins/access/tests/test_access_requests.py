"""Access requests against a real sshd: a connection that needs approval is refused until
an approver (not the requester) approves; the access ends by itself or when revoked, and
the open terminal closes then; every step is audited."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hostgate import utcnow
from hostgate_access.models import AccessRequest
from hostgate_access.plugin import service

from tests.services.sessions.helpers import Screen, socket_path, ticket_for

API = "/api/v1"


async def guarded(client: Any, owner: Any, sshd: Any) -> dict[str, Any]:
    body = {
        "name": "prod-db", "protocol": "ssh", "host": sshd.host, "port": sshd.port,
        "username": sshd.username, "password": sshd.password, "shared": True,
        "approvalRequired": True,
    }  # fmt: skip
    response = await client.post(f"{API}/connections", headers=owner.headers, json=body)
    assert response.status_code == 201, await response.get_json()
    return await response.get_json()  # type: ignore[no-any-return]


async def ask(client: Any, user: Any, connection_id: str, minutes: int = 30) -> Any:
    body = {"connectionId": connection_id, "minutes": minutes, "reason": "INC-42 hotfix"}
    return await client.post(f"{API}/access-requests", headers=user.headers, json=body)


async def decide(client: Any, user: Any, request_id: str, action: str) -> Any:
    return await client.post(
        f"{API}/access-requests/{request_id}/{action}", headers=user.headers, json={}
    )


async def test_request_approve_use_revoke(client, kernel, make_user, sshd):
    owner = await make_user("owner", role="admin")
    bob = await make_user("bob", permissions=["connections.use_ssh"])
    approver = await make_user("approver", permissions=["access.approve"])
    connection = await guarded(client, owner, sshd)

    detail = await (
        await client.get(f"{API}/connections/{connection['id']}", headers=bob.headers)
    ).get_json()
    assert detail["approvalRequired"] is True and detail["canUse"] is False
    async with client.websocket(
        socket_path("ssh", ticket_for(kernel, bob), connection["id"])
    ) as socket:
        screen = Screen(socket)
        assert await screen.until_closed() == 4003
        assert "approved access request" in screen.messages[-1]["message"]
        assert screen.messages[-1]["reason"] == "forbidden"

    response = await ask(client, bob, connection["id"])
    assert response.status_code == 201
    pending = (await response.get_json())["request"]
    assert pending["status"] == "pending" and pending["connectionName"] == "prod-db"
    assert (await ask(client, bob, connection["id"])).status_code == 409
    # nobody approves their own request, and approving needs access.approve
    assert (await decide(client, bob, pending["id"], "approve")).status_code == 403
    carol = await make_user("carol", permissions=["connections.use_ssh"])
    assert (await decide(client, carol, pending["id"], "approve")).status_code == 403
    listed = await client.get(
        f"{API}/access-requests?all=true&status=pending", headers=approver.headers
    )
    assert [r["id"] for r in (await listed.get_json())["requests"]] == [pending["id"]]
    assert (
        await client.get(f"{API}/access-requests?all=true", headers=bob.headers)
    ).status_code == 403

    approved = (await (await decide(client, approver, pending["id"], "approve")).get_json())[
        "request"
    ]
    assert approved["status"] == "approved" and approved["endsAt"] is not None
    detail = await (
        await client.get(f"{API}/connections/{connection['id']}", headers=bob.headers)
    ).get_json()
    assert detail["canUse"] is True
    async with client.websocket(
        socket_path("ssh", ticket_for(kernel, bob), connection["id"])
    ) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.step("echo granted-$((40+2))", "granted-42")
        assert (await decide(client, approver, pending["id"], "revoke")).status_code == 200
        assert await screen.until_closed() == 4003
        assert screen.messages[-1]["reason"] == "access_ended"
    detail = await (
        await client.get(f"{API}/connections/{connection['id']}", headers=bob.headers)
    ).get_json()
    assert detail["canUse"] is False

    response = await client.get(
        f"{API}/audit?eventType=access.requested,access.approved,access.revoked",
        headers=owner.headers,
    )
    kinds = sorted(e["eventType"] for e in (await response.get_json())["entries"])
    assert kinds == ["access.approved", "access.requested", "access.revoked"]


async def test_access_expires_by_itself_and_closes_the_terminal(client, kernel, make_user, sshd):
    owner = await make_user("owner", role="admin")
    bob = await make_user("bob", permissions=["connections.use_ssh"])
    approver = await make_user("approver", permissions=["access.approve"])
    connection = await guarded(client, owner, sshd)
    pending = (await (await ask(client, bob, connection["id"], minutes=1)).get_json())["request"]
    await decide(client, approver, pending["id"], "approve")
    async with client.websocket(
        socket_path("ssh", ticket_for(kernel, bob), connection["id"])
    ) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        async with kernel.db.session() as session:
            row = await session.get(AccessRequest, pending["id"])
            row.ends_at = utcnow() - timedelta(seconds=1)
            session.add(row)
            await session.commit()
        assert await service(kernel).sweep() == 1
        assert await screen.until_closed() == 4003
        assert screen.messages[-1]["reason"] == "access_ended"
    listed = await client.get(f"{API}/access-requests", headers=bob.headers)
    assert [r["status"] for r in (await listed.get_json())["requests"]] == ["expired"]
    response = await client.get(f"{API}/audit?eventType=access.expired", headers=owner.headers)
    assert len((await response.get_json())["entries"]) == 1


async def test_bad_requests_change_nothing(client, make_user, sshd):
    owner = await make_user("owner", role="admin")
    bob = await make_user("bob", permissions=["connections.use_ssh"])
    connection = await guarded(client, owner, sshd)
    for body in (
        {"connectionId": connection["id"], "minutes": 0, "reason": "x"},
        {"connectionId": connection["id"], "minutes": 30, "reason": ""},
        {"connectionId": connection["id"], "minutes": 30},
    ):
        response = await client.post(f"{API}/access-requests", headers=bob.headers, json=body)
        assert response.status_code == 400, body
    other = await make_user("other", permissions=["connections.create", "connections.use_ssh"])
    private = await client.post(
        f"{API}/connections", headers=other.headers,
        json={"name": "mine", "protocol": "ssh", "host": "127.0.0.1", "approvalRequired": True},
    )  # fmt: skip
    assert private.status_code == 201, await private.get_json()
    hidden = (await private.get_json())["id"]
    assert (await ask(client, bob, hidden)).status_code == 404
    listed = await client.get(f"{API}/access-requests", headers=bob.headers)
    assert (await listed.get_json())["requests"] == []


async def test_deny_and_cancel(client, make_user, sshd):
    owner = await make_user("owner", role="admin")
    bob = await make_user("bob", permissions=["connections.use_ssh"])
    approver = await make_user("approver", permissions=["access.approve"])
    connection = await guarded(client, owner, sshd)
    first = (await (await ask(client, bob, connection["id"])).get_json())["request"]
    response = await client.post(
        f"{API}/access-requests/{first['id']}/deny",
        headers=approver.headers,
        json={"note": "not during the freeze"},
    )
    assert response.status_code == 200
    denied = (await response.get_json())["request"]
    assert (denied["status"], denied["note"]) == ("denied", "not during the freeze")
    # a decided request is decided: neither cancelling nor approving it changes it
    assert (await decide(client, bob, first["id"], "cancel")).status_code == 409
    assert (await decide(client, approver, first["id"], "approve")).status_code == 409
    second = (await (await ask(client, bob, connection["id"])).get_json())["request"]
    # only the requester withdraws a request
    assert (await decide(client, approver, second["id"], "cancel")).status_code == 404
    cancelled = await decide(client, bob, second["id"], "cancel")
    assert (await cancelled.get_json())["request"]["status"] == "cancelled"
    bad = await client.post(
        f"{API}/access-requests/{second['id']}/approve", headers=approver.headers, json={"x": 1}
    )
    assert bad.status_code == 400
    listed = await client.get(f"{API}/access-requests", headers=bob.headers)
    assert sorted(r["status"] for r in (await listed.get_json())["requests"]) == [
        "cancelled",
        "denied",
    ]


async def test_the_front_door_refuses_until_approved_and_opens_after(
    client, kernel, make_user, sshd
):
    """The SSH front door's ``open_terminal`` asks the same grant as the browser's socket:
    refused while the request is pending, a shell once an approver approved it."""
    from hostgate import ClientInfo, PermissionDenied, SessionClosed

    owner = await make_user("owner", role="admin")
    bob = await make_user("bob", permissions=["connections.use_ssh"])
    approver = await make_user("approver", permissions=["access.approve"])
    connection = await guarded(client, owner, sshd)
    account = await kernel.logins.get_user(bob.id)
    caller = await kernel.front_door.sign_in(
        account, ClientInfo(ip_address="127.0.0.1"), method="publickey"
    )
    try:
        try:
            await kernel.front_door.open_terminal(caller, "prod-db", (80, 24), command="true")
        except (PermissionDenied, SessionClosed) as refused:
            assert "approved access request" in str(refused)
        else:
            raise AssertionError("an approval-required connection opened without approval")
        pending = (await (await ask(client, bob, connection["id"])).get_json())["request"]
        assert (await decide(client, approver, pending["id"], "approve")).status_code == 200
        terminal = await kernel.front_door.open_terminal(
            caller, "prod-db", None, command="echo door-$((40+2))"
        )
        output = b""
        while chunk := await terminal.read():
            output += chunk
        assert b"door-42" in output
        assert terminal.exit_status == 0
    finally:
        await kernel.front_door.sign_out(caller)
