"""Ownership, sharing and each permission rule (WIRE-FACTS §3.3), over HTTP."""

from __future__ import annotations

from hostgate.services.sessions.live_sessions import LiveSession

from tests.services.connections.support import (
    PASSWORD,
    PRIVATE_KEY,
    TOKEN,
    audit_entries,
    create,
    get_json,
    send,
)

USE = "connections.use_fakedesk"


async def share(client, owner, connection_id, *items, expect=200):
    body = {"shares": [{"shareType": t, "targetId": i} for t, i in items]}
    return await send(client, "PUT", f"/connections/{connection_id}/shares", owner, body, expect)


async def test_create_needs_connections_create(client, make_user):
    nobody = await make_user("nobody", permissions=[])
    error = await create(client, nobody, expect=403)
    assert "connections.create" in error["error"]
    creator = await make_user("creator", permissions=["connections.create"])
    await create(client, creator)


async def test_editing_own_needs_edit_own(client, make_user):
    plain = await make_user("plain", permissions=["connections.create"])
    mine = await create(client, plain)
    error = await send(
        client, "PUT", f"/connections/{mine['id']}", plain, {"name": "x"}, expect=403
    )
    assert "connections.edit_own" in error["error"]
    editor = await make_user("editor", permissions=["connections.create", "connections.edit_own"])
    theirs = await create(client, editor)
    await send(client, "PUT", f"/connections/{theirs['id']}", editor, {"name": "x"})


async def test_editing_others_needs_edit_any_and_sharing_grants_no_edit(client, make_user):
    owner = await make_user("owner")
    mate = await make_user("mate")  # role "user": edit_own only
    conn = await create(client, owner)
    path = f"/connections/{conn['id']}"
    await send(client, "PUT", path, mate, {"name": "x"}, expect=404)  # cannot even see it
    await share(client, owner, conn["id"], ("user", mate.id))
    assert (await get_json(client, path, mate))["canEdit"] is False
    error = await send(client, "PUT", path, mate, {"name": "x"}, expect=403)
    assert "connections.edit_any" in error["error"]
    boss = await make_user("boss", permissions=["connections.edit_any"])
    body = await send(client, "PUT", path, boss, {"name": "by boss"})
    assert body["connection"]["name"] == "by boss"
    assert body["connection"]["ownerId"] == owner.id


async def test_deleting_own_needs_delete_own_and_others_delete_any(client, make_user):
    keeper = await make_user("keeper", permissions=["connections.create", "connections.share"])
    own = await create(client, keeper)
    error = await send(client, "DELETE", f"/connections/{own['id']}", keeper, expect=403)
    assert "connections.delete_own" in error["error"]

    owner = await make_user("owner")
    mate = await make_user("mate")  # has delete_own
    conn = await create(client, owner)
    await share(client, owner, conn["id"], ("user", mate.id))
    error = await send(client, "DELETE", f"/connections/{conn['id']}", mate, expect=403)
    assert "connections.delete_any" in error["error"]
    reaper = await make_user("reaper", permissions=["connections.delete_any"])
    await send(client, "DELETE", f"/connections/{conn['id']}", reaper)
    await send(client, "DELETE", f"/connections/{own['id']}", reaper)


async def test_sharing_needs_connections_share_and_ownership_or_edit_any(client, make_user):
    owner = await make_user("owner", permissions=["connections.create", "connections.edit_own"])
    mate = await make_user("mate")
    conn = await create(client, owner)
    error = await share(client, owner, conn["id"], ("user", mate.id), expect=403)
    assert "connections.share" in error["error"]
    error = await create(client, owner, shared=True, expect=403)
    assert "connections.share" in error["error"]

    sharer = await make_user("sharer")  # role "user" includes connections.share
    theirs = await create(client, sharer)
    await share(client, sharer, theirs["id"], ("user", mate.id))
    # mate can see it and holds connections.share, but owns it not and lacks edit_any
    await share(client, mate, theirs["id"], ("user", owner.id), expect=403)
    await get_json(client, f"/connections/{theirs['id']}/shares", mate, expect=403)
    await send(client, "PUT", f"/connections/{theirs['id']}", mate, {"shared": True}, expect=403)

    admin = await make_user("chief", permissions=["connections.share", "connections.edit_any"])
    body = await share(client, admin, theirs["id"], ("role", "user"))
    assert [s["shareType"] for s in body["shares"]] == ["role"]
    listed = await get_json(client, f"/connections/{theirs['id']}/shares", admin)
    assert listed["shares"][0]["targetName"] == "user"


async def test_shared_with_a_user_or_a_role_is_listed_and_readable(client, make_user, kernel):
    owner = await make_user("owner")
    mate = await make_user("mate")
    stranger = await make_user("stranger", permissions=[USE])
    by_user = await create(client, owner, name="by-user", password=PASSWORD, token=TOKEN)
    by_role = await create(client, owner, name="by-role")
    hidden = await create(client, owner, name="hidden")
    await share(client, owner, by_user["id"], ("user", "mate"))  # a username works too
    await share(client, owner, by_role["id"], ("role", mate.role_id))

    listing = await get_json(client, "/connections", mate)
    shared = listing["sharedConnections"]
    assert [c["name"] for c in shared] == ["by-role", "by-user"]
    assert all(c["isShared"] is True and c["groupId"] is None for c in shared)
    assert listing["groups"] == [] and listing["ungrouped"] == []
    detail = await get_json(client, f"/connections/{by_user['id']}", mate)
    assert detail["isShared"] is True and detail["hasPassword"] is True
    assert detail["shares"] == []  # only the owner (or edit_any) sees who else has it
    await get_json(client, f"/connections/{hidden['id']}", mate, expect=404)

    assert (await get_json(client, "/connections", stranger))["sharedConnections"] == []
    await get_json(client, f"/connections/{by_role['id']}", stranger, expect=404)

    owner_view = await get_json(client, f"/connections/{by_user['id']}/shares", owner)
    assert owner_view["shares"][0]["targetId"] == mate.id
    assert owner_view["shares"][0]["targetName"] == "mate"
    entry = (await audit_entries(kernel, "connection.shared"))[0]
    assert entry.details["added"] == [{"shareType": "user", "targetId": mate.id}]


async def test_shared_with_everyone(client, make_user):
    owner = await make_user("owner")
    anyone = await make_user("anyone", permissions=[])
    conn = await create(client, owner, shared=True)
    listing = await get_json(client, "/connections", anyone)
    assert [c["id"] for c in listing["sharedConnections"]] == [conn["id"]]
    await send(client, "PUT", f"/connections/{conn['id']}", owner, {"shared": False})
    listing = await get_json(client, "/connections", anyone)
    assert listing["sharedConnections"] == []


async def test_unsharing_removes_access_and_closes_live_sessions(client, make_user, kernel):
    owner = await make_user("owner")
    mate = await make_user("mate")
    other = await make_user("other")
    conn = await create(client, owner)
    await share(client, owner, conn["id"], ("user", mate.id), ("user", other.id))
    closed: list[str] = []

    def live(user):
        async def close(reason: str, reason_code: str) -> None:
            closed.append(f"{user.username}: {reason} ({reason_code})")

        return LiveSession(
            id=f"live-{user.username}", kind="terminal", protocol="fakedesk", user_id=user.id,
            login_session_id=None, connection_id=conn["id"], close=close,
        )  # fmt: skip

    kernel.live.add(live(mate))
    kernel.live.add(live(other))
    await share(client, owner, conn["id"], ("user", other.id))
    await get_json(client, f"/connections/{conn['id']}", mate, expect=404)
    await get_json(client, f"/connections/{conn['id']}", other)
    assert closed == ["mate: the connection is no longer shared with you (not_shared)"]
    assert kernel.live.get("live-other") is not None
    await send(client, "DELETE", f"/connections/{conn['id']}", owner)
    assert closed[-1] == "other: the connection was deleted (connection_deleted)"


async def test_invalid_share_lists_change_nothing(client, make_user):
    owner = await make_user("owner")
    mate = await make_user("mate")
    conn = await create(client, owner)
    await share(client, owner, conn["id"], ("user", mate.id))
    for items in (
        [("user", mate.id), ("user", "ghost")],
        [("role", "no-such-role")],
        [("user", owner.id)],
    ):
        await share(client, owner, conn["id"], *items, expect=400)
    await send(
        client, "PUT", f"/connections/{conn['id']}/shares", owner,
        {"shares": [{"shareType": "group", "targetId": "x"}]}, expect=400,
    )  # fmt: skip
    body = await get_json(client, f"/connections/{conn['id']}/shares", owner)
    assert [s["targetId"] for s in body["shares"]] == [mate.id]


async def test_session_route_gives_the_password_to_the_owner_only_and_never_keys(
    client, make_user, kernel
):
    owner = await make_user("owner")
    mate = await make_user("mate")
    conn = await create(
        client, owner, username="admin", password=PASSWORD, privateKey=PRIVATE_KEY,
        token=TOKEN, domain="CORP",
    )  # fmt: skip
    await share(client, owner, conn["id"], ("user", mate.id))
    path = f"/connections/{conn['id']}/session"
    mine = await get_json(client, path, owner)
    assert mine["password"] == PASSWORD
    assert (mine["host"], mine["port"], mine["username"]) == ("127.0.0.1", 7900, "admin")
    assert mine["extraConfig"] == {"domain": "CORP", "secure": False}
    assert "s3cr3t" not in str({k: v for k, v in mine.items() if k != "password"})
    theirs = await get_json(client, path, mate)
    assert theirs["password"] is None and theirs["passwordWithheld"] is True
    entries = await audit_entries(kernel, "connection.credentials_requested")
    assert [(e.username, e.details["credentialsReturned"]) for e in entries] == [
        ("owner", True),
        ("mate", False),
    ]


async def test_session_route_needs_the_use_permission_and_access(client, make_user):
    owner = await make_user("owner", permissions=["connections.create"])
    conn = await create(client, owner, password=PASSWORD)
    error = await get_json(client, f"/connections/{conn['id']}/session", owner, expect=403)
    assert USE in error["error"]
    stranger = await make_user("stranger", permissions=[USE])
    await get_json(client, f"/connections/{conn['id']}/session", stranger, expect=404)


async def test_target_for_enforces_use_permission_and_visibility(client, make_user, kernel):
    from hostgate import ClientInfo

    owner = await make_user("owner")
    conn = await create(client, owner, password=PASSWORD)
    spec = kernel.protocols["fakedesk"]
    caller = await kernel.identity.caller_for_user(owner.id, None, ClientInfo(ip_address="::1"))
    target = await kernel.connections.target_for(caller, conn["id"], spec)
    assert (target.address, target.password, target.extra["secure"]) == (
        "127.0.0.1",
        PASSWORD,
        False,
    )

    limited = await make_user("limited", permissions=[])
    await share(client, owner, conn["id"], ("user", limited.id))
    limited_caller = await kernel.identity.caller_for_user(
        limited.id, None, ClientInfo(ip_address="")
    )
    import pytest
    from hostgate import NotFound, PermissionDenied

    with pytest.raises(PermissionDenied):
        await kernel.connections.target_for(limited_caller, conn["id"], spec)
    with pytest.raises(NotFound):
        await kernel.connections.target_for(caller, conn["id"], kernel.protocols["fakeshare"])
