"""Invite links, "must change password at first sign-in" and required two-step set-up."""

from datetime import timedelta

import pyotp
from hostgate.db.models.identity import UserInvite
from hostgate.timefmt import utcnow
from sqlmodel import select

from tests.services.identity.helpers import (
    API,
    audit_entries,
    bearer,
    enable_mfa,
    get_user,
    login,
    login_token,
)

STRONG = "correct horse battery staple"


async def invite(client, admin, username="nina", **extra):
    response = await client.post(
        f"{API}/users/invite", headers=admin.headers, json={"username": username, **extra}
    )
    assert response.status_code == 201, await response.get_json()
    return await response.get_json()


def secret_of(body):
    path = body["invite"]["path"]
    assert path.startswith("/invite#")
    return path.removeprefix("/invite#")


async def secret_of_path(response):
    assert response.status_code == 200, await response.get_json()
    return (await response.get_json())["path"].removeprefix("/invite#")


async def listed(client, admin, user_id):
    body = await (await client.get(f"{API}/users", headers=admin.headers)).get_json()
    return next(u for u in body["users"] if u["id"] == user_id)


async def test_invite_link_sets_own_password_signs_in_once(client, admin, kernel):
    body = await invite(client, admin, displayName="Nina N", role="user")
    user_id = body["user"]["id"]
    secret = secret_of(body)
    # only the hash is stored; the user has no password yet and cannot sign in
    async with kernel.db.session() as session:
        [row] = (await session.exec(select(UserInvite))).all()
    assert secret not in row.token_hash and len(row.token_hash) == 64
    assert (await get_user(kernel, user_id)).password_hash is None
    assert (await login(client, "nina", STRONG)).status_code == 401
    shown = await listed(client, admin, user_id)
    assert shown["invite"]["expired"] is False and shown["invite"]["expiresAt"]

    check = await client.post(f"{API}/auth/invite/check", json={"token": secret})
    assert check.status_code == 200
    assert (await check.get_json())["username"] == "nina"

    weak = await client.post(
        f"{API}/auth/invite/accept", json={"token": secret, "password": "password1"}
    )
    assert weak.status_code == 400 and (await weak.get_json())["code"] == "weak_password"
    accepted = await client.post(
        f"{API}/auth/invite/accept", json={"token": secret, "password": STRONG}
    )
    assert accepted.status_code == 200, await accepted.get_json()
    token = (await accepted.get_json())["token"]
    me = await client.get(f"{API}/auth/me", headers=bearer(token))
    assert (await me.get_json())["user"]["username"] == "nina"
    assert (await listed(client, admin, user_id))["invite"] is None
    assert (await login(client, "nina", STRONG)).status_code == 200

    again = await client.post(
        f"{API}/auth/invite/accept", json={"token": secret, "password": STRONG + "!"}
    )
    assert again.status_code == 404 and (await again.get_json())["code"] == "invite_used"
    assert (await login(client, "nina", STRONG)).status_code == 200  # nothing changed
    [created] = await audit_entries(kernel, "user.invite_created")
    [used] = await audit_entries(kernel, "user.invite_accepted")
    assert created.target == used.target == "nina" and created.username == "admin"
    assert secret not in str(created.details) and secret not in str(used.details)
    renew = await client.post(f"{API}/users/{user_id}/invite", headers=admin.headers, json={})
    assert renew.status_code == 409 and (await renew.get_json())["code"] == "already_accepted"


async def test_expired_revoked_and_unknown_links_say_which(client, admin, kernel):
    body = await invite(client, admin, "omar", expiresInHours=1)
    user_id, first = body["user"]["id"], secret_of(body)
    async with kernel.db.session() as session:
        row = (await session.exec(select(UserInvite))).one()
        row.expires_at = utcnow() - timedelta(seconds=1)
        session.add(row)
        await session.commit()
    expired = await client.post(f"{API}/auth/invite/check", json={"token": first})
    assert expired.status_code == 404 and (await expired.get_json())["code"] == "invite_expired"
    assert (await listed(client, admin, user_id))["invite"]["expired"] is True

    renewed = await client.post(
        f"{API}/users/{user_id}/invite", headers=admin.headers, json={"expiresInHours": 24}
    )
    assert renewed.status_code == 200
    second = (await renewed.get_json())["path"].removeprefix("/invite#")
    gone = await client.post(f"{API}/auth/invite/check", json={"token": first})
    assert (await gone.get_json())["code"] == "invite_revoked"
    assert (
        await client.post(f"{API}/auth/invite/check", json={"token": second})
    ).status_code == 200

    revoked = await client.delete(f"{API}/users/{user_id}/invite", headers=admin.headers)
    assert revoked.status_code == 200
    refused = await client.post(
        f"{API}/auth/invite/accept", json={"token": second, "password": STRONG}
    )
    assert refused.status_code == 404 and (await refused.get_json())["code"] == "invite_revoked"
    assert (await get_user(kernel, user_id)).password_hash is None
    [entry] = await audit_entries(kernel, "user.invite_revoked")
    assert entry.target == "omar"
    none_left = await client.delete(f"{API}/users/{user_id}/invite", headers=admin.headers)
    assert none_left.status_code == 404 and (await none_left.get_json())["code"] == "no_invite"

    # a reset meanwhile makes an open link moot
    third = await secret_of_path(
        await client.post(f"{API}/users/{user_id}/invite", headers=admin.headers, json={})
    )
    reset = await client.post(
        f"{API}/users/{user_id}/reset-password",
        headers=admin.headers,
        json={"newPassword": STRONG},
    )
    assert reset.status_code == 200
    moot = await client.post(f"{API}/auth/invite/check", json={"token": third})
    assert moot.status_code == 404 and (await moot.get_json())["code"] == "invite_used"
    assert (await listed(client, admin, user_id))["invite"] is None

    unknown = await client.post(f"{API}/auth/invite/check", json={"token": "x" * 43})
    assert unknown.status_code == 404 and (await unknown.get_json())["code"] == "invite_invalid"
    bad = await client.post(
        f"{API}/users/invite", headers=admin.headers, json={"username": "p", "expiresInHours": 0}
    )
    assert bad.status_code == 400


async def test_must_change_password_gates_the_api_until_changed(client, admin, kernel):
    response = await client.post(
        f"{API}/users",
        headers=admin.headers,
        json={"username": "paul", "password": STRONG, "mustChangePassword": True},
    )
    assert response.status_code == 201 and (await response.get_json())["mustChangePassword"]
    token = await login_token(client, "paul", STRONG)
    me = await (await client.get(f"{API}/auth/me", headers=bearer(token))).get_json()
    assert me["user"]["pendingStep"] == "password_change"
    blocked = await client.get(f"{API}/connections", headers=bearer(token))
    assert blocked.status_code == 403
    assert (await blocked.get_json())["code"] == "password_change_required"
    ticket = await client.post(f"{API}/auth/ws-ticket", headers=bearer(token))
    assert ticket.status_code == 403

    same = await client.put(
        f"{API}/profile/password",
        headers=bearer(token),
        json={"currentPassword": STRONG, "newPassword": STRONG},
    )
    assert same.status_code == 400 and (await same.get_json())["code"] == "same_password"
    changed = await client.put(
        f"{API}/profile/password",
        headers=bearer(token),
        json={"currentPassword": STRONG, "newPassword": STRONG + " again"},
    )
    assert changed.status_code == 200
    assert (await client.get(f"{API}/connections", headers=bearer(token))).status_code == 200
    me = await (await client.get(f"{API}/auth/me", headers=bearer(token))).get_json()
    assert me["user"]["pendingStep"] is None

    # an administrator's reset can ask for it again
    user_id = me["user"]["id"]
    reset = await client.post(
        f"{API}/users/{user_id}/reset-password",
        headers=admin.headers,
        json={"newPassword": STRONG + " reset", "mustChangePassword": True},
    )
    assert reset.status_code == 200
    assert (await get_user(kernel, user_id)).must_change_password is True
    token = await login_token(client, "paul", STRONG + " reset")
    assert (await client.get(f"{API}/connections", headers=bearer(token))).status_code == 403


async def test_required_mfa_for_a_role_enrols_before_anything_else(client, admin, make_user):
    user = await make_user("rita")
    made = await client.post(
        f"{API}/profile/api-tokens", headers=admin.headers, json={"name": "ci"}
    )
    assert made.status_code == 201, await made.get_json()
    api_token = (await made.get_json())["secret"]
    bad = await client.put(
        f"{API}/settings", headers=admin.headers, json={"security.require_mfa": "sometimes"}
    )
    assert bad.status_code == 400
    saved = await client.put(
        f"{API}/settings",
        headers=admin.headers,
        json={"security.require_mfa": "roles", "security.require_mfa_roles": "user"},
    )
    assert saved.status_code == 200, await saved.get_json()
    blocked = await client.get(f"{API}/connections", headers=user.headers)
    assert blocked.status_code == 403
    assert (await blocked.get_json())["code"] == "mfa_enrollment_required"
    me = await (await client.get(f"{API}/auth/me", headers=user.headers)).get_json()
    assert me["user"]["pendingStep"] == "mfa_enrollment"
    # the admin's role is not named: nothing asked of them
    assert (await client.get(f"{API}/connections", headers=admin.headers)).status_code == 200

    totp: pyotp.TOTP = await enable_mfa(client, user.token)
    assert totp.now()
    assert (await client.get(f"{API}/connections", headers=user.headers)).status_code == 200

    everyone = await client.put(
        f"{API}/settings", headers=admin.headers, json={"security.require_mfa": "everyone"}
    )
    assert everyone.status_code == 200
    for headers in (admin.headers, bearer(api_token)):  # their API tokens wait too
        blocked = await client.get(f"{API}/users", headers=headers)
        assert blocked.status_code == 403, (headers, await blocked.get_json())
        assert (await blocked.get_json())["code"] == "mfa_enrollment_required"
    assert (await client.get(f"{API}/connections", headers=user.headers)).status_code == 200


async def mfa_roles_setting(client, admin):
    body = await (await client.get(f"{API}/settings", headers=admin.headers)).get_json()
    return body["settings"]["security.require_mfa_roles"]


async def test_required_mfa_roles_name_existing_roles_and_follow_renames_and_deletions(
    client, admin, make_user, kernel
):
    unknown = await client.put(
        f"{API}/settings",
        headers=admin.headers,
        json={"security.require_mfa": "roles", "security.require_mfa_roles": "user, Ops, nobody"},
    )
    assert unknown.status_code == 400
    error = await unknown.get_json()
    assert error["code"] == "unknown_role"
    assert "'Ops'" in error["error"] and "'nobody'" in error["error"]
    assert "'user'" not in error["error"]
    assert await mfa_roles_setting(client, admin) == ""  # nothing of the change was stored

    made = await client.post(f"{API}/roles", headers=admin.headers, json={"name": "Ops"})
    assert made.status_code == 201
    role = await made.get_json()
    saved = await client.put(
        f"{API}/settings",
        headers=admin.headers,
        json={"security.require_mfa": "roles", "security.require_mfa_roles": "USER, ops"},
    )
    assert saved.status_code == 200, await saved.get_json()  # names compare case-insensitively

    # a rename carries the setting along (in the same audited change)
    renamed = await client.put(
        f"{API}/roles/{role['id']}", headers=admin.headers, json={"name": "Operators"}
    )
    assert renamed.status_code == 200
    assert await mfa_roles_setting(client, admin) == "USER, Operators"
    operator = await make_user("oscar")
    await client.put(
        f"{API}/users/{operator.id}", headers=admin.headers, json={"role": "Operators"}
    )
    blocked = await client.get(f"{API}/connections", headers=operator.headers)
    assert (await blocked.get_json())["code"] == "mfa_enrollment_required"
    updated = (await audit_entries(kernel, "role.updated"))[-1]
    assert updated.details["requireMfaRoles"] == {"from": "USER, ops", "to": "USER, Operators"}

    # a deletion takes the name out
    await client.put(f"{API}/users/{operator.id}", headers=admin.headers, json={"role": "user"})
    deleted = await client.delete(f"{API}/roles/{role['id']}", headers=admin.headers)
    assert deleted.status_code == 200
    assert await mfa_roles_setting(client, admin) == "USER"
    gone = (await audit_entries(kernel, "role.deleted"))[-1]
    assert gone.details["requireMfaRoles"] == {"from": "USER, Operators", "to": "USER"}
    # a role the setting does not name leaves it alone
    other = await (
        await client.post(f"{API}/roles", headers=admin.headers, json={"name": "x"})
    ).get_json()
    await client.put(f"{API}/roles/{other['id']}", headers=admin.headers, json={"name": "y"})
    assert await mfa_roles_setting(client, admin) == "USER"
