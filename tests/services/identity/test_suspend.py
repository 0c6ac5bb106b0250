"""Suspend and resume a user: no sign-in by any method, sessions/tokens/sockets end, guards."""

from hostgate.db.models.identity import User

from tests.services.identity.helpers import (
    API,
    audit_entries,
    bearer,
    enable_mfa,
    get_user,
    login,
    login_token,
)
from tests.services.identity.test_sessions import register_socket, session_id_of


async def listed(client, admin, user_id):
    body = await (await client.get(f"{API}/users", headers=admin.headers)).get_json()
    return next(u for u in body["users"] if u["id"] == user_id)


async def new_api_token(client, user):
    response = await client.post(
        f"{API}/profile/api-tokens", headers=user.headers, json={"name": "ci"}
    )
    assert response.status_code == 201, await response.get_json()
    return (await response.get_json())["token"]


async def test_suspend_ends_everything_and_refuses_sign_in_until_resumed(
    client, make_user, admin, kernel
):
    user = await make_user("sue")
    api_token = await new_api_token(client, user)
    closed = []
    register_socket(kernel, user.id, await session_id_of(client, user.token), closed)
    assert (await listed(client, admin, user.id))["suspended"] is False

    response = await client.post(f"{API}/users/{user.id}/suspend", headers=admin.headers)
    assert response.status_code == 200 and await response.get_json() == {"success": True}
    assert (await listed(client, admin, user.id))["suspended"] is True
    assert (await client.get(f"{API}/auth/me", headers=user.headers)).status_code == 401
    assert (await client.get(f"{API}/auth/me", headers=bearer(api_token))).status_code == 401
    assert [c[1:] for c in closed] == [("account suspended", "revoked")]

    right = await login(client, "sue", user.password)
    assert right.status_code == 403
    body = await right.get_json()
    assert body["code"] == "account_suspended" and "suspended" in body["error"]
    # a wrong password learns nothing about the suspension
    wrong = await login(client, "sue", "not-the-password")
    assert wrong.status_code == 401 and (await wrong.get_json())["code"] != "account_suspended"
    [entry] = await audit_entries(kernel, "user.suspended")
    assert entry.target == "sue" and entry.username == "admin"

    response = await client.post(f"{API}/users/{user.id}/resume", headers=admin.headers)
    assert response.status_code == 200
    assert (await listed(client, admin, user.id))["suspended"] is False
    token = await login_token(client, "sue", user.password)
    assert (await client.get(f"{API}/auth/me", headers=bearer(token))).status_code == 200
    # the API token revoked by the suspension stays revoked
    assert (await client.get(f"{API}/auth/me", headers=bearer(api_token))).status_code == 401
    assert len(await audit_entries(kernel, "user.resumed")) == 1


async def test_suspended_user_with_mfa_is_refused_before_the_code(client, make_user, admin):
    user = await make_user("mia")
    await enable_mfa(client, user.token)
    response = await client.post(f"{API}/users/{user.id}/suspend", headers=admin.headers)
    assert response.status_code == 200
    response = await login(client, "mia", user.password)
    assert response.status_code == 403
    body = await response.get_json()
    assert body["code"] == "account_suspended" and "mfaToken" not in body


async def test_bad_targets_change_nothing(client, make_user, admin, kernel):
    unknown = await client.post(f"{API}/users/no-such-user/suspend", headers=admin.headers)
    assert unknown.status_code == 404
    assert (
        await client.post(f"{API}/users/no-such-user/resume", headers=admin.headers)
    ).status_code == 404
    own = await client.post(f"{API}/users/{admin.id}/suspend", headers=admin.headers)
    assert own.status_code == 403 and (await own.get_json())["code"] == "cannot_suspend_self"
    assert (await get_user(kernel, admin.id)).suspended is False
    assert (await client.get(f"{API}/auth/me", headers=admin.headers)).status_code == 200
    plain = await make_user("pat")
    denied = await client.post(f"{API}/users/{admin.id}/suspend", headers=plain.headers)
    assert denied.status_code == 403
    assert (await get_user(kernel, admin.id)).suspended is False
    assert await audit_entries(kernel, "user.suspended") == []


async def test_last_administrator_who_can_sign_in_is_not_suspended(
    client, make_user, admin, kernel
):
    # a second administrator without any way in (no password, no login method of theirs)
    other = await make_user("oda", role="admin")
    async with kernel.db.session() as session:
        row = await session.get(User, other.id)
        row.password_hash = None
        session.add(row)
        await session.commit()
    response = await client.post(f"{API}/users/{admin.id}/suspend", headers=other.headers)
    assert response.status_code == 409
    assert (await response.get_json())["code"] == "would_lock_out"
    assert (await get_user(kernel, admin.id)).suspended is False
    assert (await client.get(f"{API}/auth/me", headers=admin.headers)).status_code == 200
    # once another administrator can sign in, the suspension goes through
    third = await make_user("ivy", role="admin")
    response = await client.post(f"{API}/users/{admin.id}/suspend", headers=third.headers)
    assert response.status_code == 200
    assert (await get_user(kernel, admin.id)).suspended is True
