"""Personal API tokens: made by a signed-in person, shown once, stored hashed, limited to a
subset of the owner's permissions (cut down live by the role), refused where a login is
required, revocable by the owner and by user administrators, and named in the audit log."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from hostgate.db.models.identity import ApiToken, Role
from hostgate.timefmt import utcnow
from sqlmodel import select

from tests.services.identity.helpers import API, audit_entries, bearer, login


async def make_token(client: Any, user: Any, **body: Any) -> dict[str, Any]:
    response = await client.post(
        f"{API}/profile/api-tokens", headers=user.headers, json={"name": "ci", **body}
    )
    assert response.status_code == 201, await response.get_json()
    return await response.get_json()  # type: ignore[no-any-return]


async def test_a_token_is_shown_once_stored_hashed_and_acts_as_its_owner(app, make_user, kernel):
    client = app.test_client()
    user = await make_user(permissions=["connections.create"])
    made = await make_token(client, user, expiresInDays=7)
    secret = made["secret"]
    assert secret.startswith("hgt_") and len(secret) > 40
    assert made["token"]["prefix"] == secret[:12]
    assert made["token"]["permissions"] == ["connections.create"]
    assert made["token"]["state"] == "active"

    async with kernel.db.session() as session:
        row = (await session.exec(select(ApiToken))).one()
    assert row.token_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in repr(row.model_dump())

    me = await client.get(f"{API}/auth/me", headers=bearer(secret))
    assert me.status_code == 200
    body = await me.get_json()
    assert body["user"]["username"] == user.username
    assert body["user"]["permissions"] == ["connections.create"]

    listed = await (await client.get(f"{API}/profile/api-tokens", headers=user.headers)).get_json()
    assert [t["id"] for t in listed["tokens"]] == [made["token"]["id"]]
    assert secret not in str(listed)
    assert listed["tokens"][0]["lastUsedAt"] is not None
    assert listed["tokens"][0]["lastUsedIp"]  # the test client's address
    for entry in await audit_entries(kernel):
        assert secret not in str(entry.details)


async def test_a_token_holds_only_what_its_owner_holds_and_shrinks_with_the_role(
    app, make_user, kernel
):
    client = app.test_client()
    user = await make_user(permissions=["users.manage", "audit.view_any"])
    refused = await client.post(
        f"{API}/profile/api-tokens",
        headers=user.headers,
        json={"name": "x", "permissions": ["users.manage", "settings.manage"]},
    )
    assert refused.status_code == 403
    assert (await refused.get_json())["code"] == "permission_not_held"
    assert (await client.get(f"{API}/profile/api-tokens", headers=user.headers)).status_code == 200

    narrow = (await make_token(client, user, permissions=["users.manage"]))["secret"]
    assert (await client.get(f"{API}/users", headers=bearer(narrow))).status_code == 200
    # the token lacks audit.view_any although its owner holds it
    assert (await client.get(f"{API}/audit/users", headers=bearer(narrow))).status_code == 403
    assert (await client.get(f"{API}/audit/users", headers=user.headers)).status_code == 200

    async with kernel.db.session() as session:
        role = await session.get(Role, user.role_id)
        role.permissions = ["audit.view_any"]
        session.add(role)
        await session.commit()
    # the owner lost users.manage: the token lost it at once
    assert (await client.get(f"{API}/users", headers=bearer(narrow))).status_code == 403
    me = await (await client.get(f"{API}/auth/me", headers=bearer(narrow))).get_json()
    assert me["user"]["permissions"] == []


async def test_a_token_cannot_stand_in_for_a_login(app, make_user, kernel):
    client = app.test_client()
    user = await make_user(role="admin")
    secret = (await make_token(client, user))["secret"]
    token = bearer(secret)
    refused = [
        ("POST", "/profile/api-tokens", {"name": "again"}),
        ("PUT", "/profile/password", {"currentPassword": user.password, "newPassword": "x" * 12}),
        ("POST", "/profile/mfa/setup", None),
        ("POST", "/profile/mfa/disable", {"password": user.password}),
        ("DELETE", "/profile/login-sessions", None),
        ("POST", "/auth/logout", None),
    ]
    for method, path, body in refused:
        response = await client.open(f"{API}{path}", method=method, headers=token, json=body)
        assert response.status_code == 403, (path, await response.get_json())
        assert (await response.get_json())["code"] == "api_token_not_allowed", path
    # nothing changed: the password still signs in, no MFA secret pending, no extra token
    login = await client.post(
        f"{API}/auth/login", json={"username": user.username, "password": user.password}
    )
    assert login.status_code == 200
    async with kernel.db.session() as session:
        assert len((await session.exec(select(ApiToken))).all()) == 1
    # what a script does is allowed
    assert (await client.get(f"{API}/connections", headers=token)).status_code == 200
    assert (await client.post(f"{API}/auth/ws-ticket", headers=token)).status_code == 200


async def test_revoked_and_expired_tokens_are_refused_and_audited(app, make_user, admin, kernel):
    client = app.test_client()
    user = await make_user(permissions=[])
    first = await make_token(client, user)
    second = await make_token(client, user, expiresInDays=1)
    third = await make_token(client, user)

    response = await client.delete(
        f"{API}/profile/api-tokens/{first['token']['id']}", headers=user.headers
    )
    assert response.status_code == 200
    response = await client.get(f"{API}/auth/me", headers=bearer(first["secret"]))
    assert response.status_code == 401
    assert (await response.get_json())["code"] == "api_token_revoked"

    async with kernel.db.session() as session:
        row = await session.get(ApiToken, second["token"]["id"])
        row.expires_at = utcnow() - timedelta(seconds=1)
        session.add(row)
        await session.commit()
    response = await client.get(f"{API}/auth/me", headers=bearer(second["secret"]))
    assert (await response.get_json())["code"] == "api_token_expired"

    unknown = await client.get(f"{API}/auth/me", headers=bearer("hgt_" + "A" * 43))
    assert unknown.status_code == 401

    # another user cannot revoke it; an administrator lists and revokes anyone's
    other = await make_user(permissions=[])
    response = await client.delete(
        f"{API}/profile/api-tokens/{third['token']['id']}", headers=other.headers
    )
    assert response.status_code == 404
    everyone = await client.get(f"{API}/api-tokens?userId={user.id}", headers=admin.headers)
    assert everyone.status_code == 200
    rows = (await everyone.get_json())["tokens"]
    assert {r["id"]: r["state"] for r in rows} == {
        first["token"]["id"]: "revoked",
        second["token"]["id"]: "expired",
        third["token"]["id"]: "active",
    }
    assert all(r["user"]["username"] == user.username for r in rows)
    assert (await client.get(f"{API}/api-tokens", headers=user.headers)).status_code == 403
    response = await client.delete(
        f"{API}/api-tokens/{third['token']['id']}", headers=admin.headers
    )
    assert response.status_code == 200
    assert (await client.get(f"{API}/auth/me", headers=bearer(third["secret"]))).status_code == 401

    created = await audit_entries(kernel, "auth.api_token_created")
    revoked = await audit_entries(kernel, "auth.api_token_revoked")
    assert len(created) == 3
    assert [e.username for e in revoked] == [user.username, "admin"]
    assert revoked[1].target == user.username


async def test_what_a_token_does_is_attributed_to_it(app, make_user, kernel):
    client = app.test_client()
    user = await make_user(permissions=[])
    made = await make_token(client, user)
    response = await client.put(
        f"{API}/profile", headers=bearer(made["secret"]), json={"displayName": "From CI"}
    )
    assert response.status_code == 200
    entries = [e for e in await audit_entries(kernel) if e.user_id == user.id]
    last = entries[-1]
    assert last.details.get("apiTokenId") == made["token"]["id"]


async def test_bad_input_is_refused_and_makes_nothing(app, make_user, kernel):
    client = app.test_client()
    user = await make_user(permissions=[])
    for body in (
        {"name": ""},
        {"name": "x", "expiresInDays": 0},
        {"name": "x", "expiresInDays": 10_000},
        {"name": "x", "permissions": "all"},
        {"name": "x", "extra": 1},
        {"name": "   "},
    ):
        response = await client.post(f"{API}/profile/api-tokens", headers=user.headers, json=body)
        assert response.status_code == 400, body
    async with kernel.db.session() as session:
        assert (await session.exec(select(ApiToken))).all() == []


async def test_users_manage_cannot_reset_its_own_password_token_or_session(app, make_user, kernel):
    """``POST /users/:id/reset-password`` on oneself would skip the current-password check
    of ``PUT /profile/password``: refused, for a token and a browser session alike."""
    client = app.test_client()
    manager = await make_user(permissions=["users.manage"])
    secret = (await make_token(client, manager))["secret"]
    for headers in (bearer(secret), manager.headers):
        response = await client.post(
            f"{API}/users/{manager.id}/reset-password",
            headers=headers,
            json={"newPassword": "Taken-over-42"},
        )
        assert response.status_code == 403
        body = await response.get_json()
        assert body["code"] == "cannot_reset_own_password"
        assert "PUT /profile/password" in body["error"]
    # nothing changed: the old password signs in, the new one does not, nothing audited
    assert (await login(client, manager.username, manager.password)).status_code == 200
    assert (await login(client, manager.username, "Taken-over-42")).status_code == 401
    assert await audit_entries(kernel, "user.password_reset") == []
    assert (await client.get(f"{API}/auth/me", headers=bearer(secret))).status_code == 200


async def test_an_admin_password_reset_ends_the_users_api_tokens(app, make_user, admin, kernel):
    client = app.test_client()
    user = await make_user(permissions=[])
    live = await make_token(client, user)
    already = await make_token(client, user)
    await client.delete(f"{API}/profile/api-tokens/{already['token']['id']}", headers=user.headers)
    assert (await client.get(f"{API}/auth/me", headers=bearer(live["secret"]))).status_code == 200
    reset = await client.post(
        f"{API}/users/{user.id}/reset-password",
        headers=admin.headers,
        json={"newPassword": "A-new-password-42"},
    )
    assert reset.status_code == 200, await reset.get_json()
    refused = await client.get(f"{API}/auth/me", headers=bearer(live["secret"]))
    assert refused.status_code == 401
    assert (await refused.get_json())["code"] == "api_token_revoked"
    [entry] = await audit_entries(kernel, "user.password_reset")
    # the one already revoked is not named
    assert entry.details["apiTokenIds"] == [live["token"]["id"]]
    listed = await client.get(f"{API}/api-tokens?userId={user.id}", headers=admin.headers)
    assert {t["state"] for t in (await listed.get_json())["tokens"]} == {"revoked"}


async def test_a_role_with_no_permissions_ends_the_users_api_tokens(app, make_user, admin, kernel):
    client = app.test_client()
    user = await make_user("robin", role="user")
    kept = await make_token(client, user)
    # another role that still holds something leaves the tokens alone
    narrow = await client.post(
        f"{API}/roles",
        headers=admin.headers,
        json={"name": "narrow", "permissions": ["audit.view_any"]},
    )
    assert narrow.status_code == 201, await narrow.get_json()
    moved = await client.put(
        f"{API}/users/{user.id}", headers=admin.headers, json={"role": "narrow"}
    )
    assert moved.status_code == 200
    assert (await client.get(f"{API}/auth/me", headers=bearer(kept["secret"]))).status_code == 200
    empty = await client.post(
        f"{API}/roles", headers=admin.headers, json={"name": "nothing", "permissions": []}
    )
    assert empty.status_code == 201, await empty.get_json()
    moved = await client.put(
        f"{API}/users/{user.id}", headers=admin.headers, json={"role": "nothing"}
    )
    assert moved.status_code == 200
    refused = await client.get(f"{API}/auth/me", headers=bearer(kept["secret"]))
    assert (await refused.get_json())["code"] == "api_token_revoked"
    [*_, entry] = await audit_entries(kernel, "user.updated")
    assert entry.details["apiTokenIds"] == [kept["token"]["id"]]
    # the person still signs in (an admin may give a role back); the token stays ended
    assert (await login(client, user.username, user.password)).status_code == 200


async def test_deleting_a_user_ends_their_api_tokens(app, make_user, admin, kernel):
    client = app.test_client()
    user = await make_user(permissions=[])
    made = await make_token(client, user)
    gone = await client.delete(f"{API}/users/{user.id}", headers=admin.headers)
    assert gone.status_code == 200
    refused = await client.get(f"{API}/auth/me", headers=bearer(made["secret"]))
    assert refused.status_code == 401
    async with kernel.db.session() as session:
        assert (await session.exec(select(ApiToken))).all() == []
