"""Lockout (count, lock, unlock, expiry), the per-IP login limit, the password-check limits."""

from datetime import timedelta

from hostgate.db.models.identity import User
from hostgate.timefmt import parse_iso, utcnow

from tests.services.identity.helpers import (
    API,
    audit_entries,
    enable_mfa,
    get_user,
    login,
    login_token,
)


async def set_locked_until(kernel, user_id, when):
    async with kernel.db.session() as session:
        user = await session.get(User, user_id)
        user.locked_until = when
        session.add(user)
        await session.commit()


async def user_record(client, admin, user_id):
    users = (await (await client.get(f"{API}/users", headers=admin.headers)).get_json())["users"]
    return next(u for u in users if u["id"] == user_id)


async def test_lockout_after_max_attempts_then_unlock(client, make_user, admin, kernel):
    await kernel.settings.update({"security.max_login_attempts": 3})
    user = await make_user("lou")
    for attempt in range(1, 4):
        response = await login(client, "lou", "wrong-password")
        assert response.status_code == 401
        assert (await get_user(kernel, user.id)).failed_login_count == attempt
    record = await user_record(client, admin, user.id)
    assert record["failedLoginCount"] == 3 and record["lockedUntil"] is not None

    locked = await login(client, "lou", user.password)  # even the right password
    assert locked.status_code == 429
    body = await locked.get_json()
    assert body["code"] == "account_locked"
    assert body["error"] == f"Account locked until {record['lockedUntil']}"
    retry = int(locked.headers["Retry-After"])
    assert 29 * 60 < retry <= 30 * 60
    assert parse_iso(record["lockedUntil"]) - utcnow() <= timedelta(minutes=30)

    events = [e.event_type for e in await audit_entries(kernel)]
    assert events.count("auth.login_failed") == 3
    assert events.count("auth.account_locked") == 1
    assert events.count("auth.locked_account_attempt") == 1
    locked_event = (await audit_entries(kernel, "auth.account_locked"))[0]
    assert locked_event.user_id == user.id and locked_event.details["failedCount"] == 3

    response = await client.post(f"{API}/users/{user.id}/unlock", headers=admin.headers)
    assert response.status_code == 200 and await response.get_json() == {"success": True}
    record = await user_record(client, admin, user.id)
    assert record["failedLoginCount"] == 0 and record["lockedUntil"] is None
    await login_token(client, "lou", user.password)
    assert (await audit_entries(kernel, "user.unlocked"))[0].target == "lou"


async def test_lock_expires_and_the_count_starts_over(client, make_user, admin, kernel):
    await kernel.settings.update({"security.max_login_attempts": 2})
    user = await make_user("max")
    for _ in range(2):
        await login(client, "max", "wrong-password")
    assert (await login(client, "max", user.password)).status_code == 429
    await set_locked_until(kernel, user.id, utcnow() - timedelta(seconds=1))
    record = await user_record(client, admin, user.id)
    assert record["lockedUntil"] is None  # an expired lock is not shown as locked
    # one failure after expiry does not lock again: the count starts over
    assert (await login(client, "max", "wrong-password")).status_code == 401
    assert (await get_user(kernel, user.id)).failed_login_count == 1
    await login_token(client, "max", user.password)
    assert (await get_user(kernel, user.id)).failed_login_count == 0


async def test_successful_login_resets_the_count(client, make_user, kernel):
    user = await make_user("ned")
    await login(client, "ned", "wrong-password")
    await login(client, "ned", "wrong-password")
    assert (await get_user(kernel, user.id)).failed_login_count == 2
    await login_token(client, "ned", user.password)
    assert (await get_user(kernel, user.id)).failed_login_count == 0


async def test_unknown_usernames_lock_the_same_way(client, kernel):
    await kernel.settings.update({"security.max_login_attempts": 2})
    for _ in range(2):
        assert (await login(client, "ghost", "whatever-pass")).status_code == 401
    locked = await login(client, "ghost", "whatever-pass")
    assert locked.status_code == 429
    assert (await locked.get_json())["code"] == "account_locked"
    assert "Retry-After" in locked.headers
    locked_event = (await audit_entries(kernel, "auth.account_locked"))[0]
    assert locked_event.details["userExists"] is False


async def test_unlocking_a_user_that_is_not_locked_succeeds(client, make_user, admin):
    user = await make_user("ola")
    response = await client.post(f"{API}/users/{user.id}/unlock", headers=admin.headers)
    assert response.status_code == 200 and await response.get_json() == {"success": True}
    missing = await client.post(f"{API}/users/nope/unlock", headers=admin.headers)
    assert missing.status_code == 404


async def test_login_rate_limit_per_ip(client, make_user):
    user = await make_user("pat")
    for i in range(30):
        response = await login(client, f"nobody{i}", "wrong-password")
        assert response.status_code == 401
    limited = await login(client, "pat", user.password)
    assert limited.status_code == 429
    assert int(limited.headers["Retry-After"]) > 0
    assert (await limited.get_json())["error"] == "Too many login attempts. Please try again later."
    # X-Forwarded-For from an untrusted peer does not make a new client
    spoofed = await login(client, "pat", user.password, headers={"X-Forwarded-For": "203.0.113.9"})
    assert spoofed.status_code == 429


async def test_password_change_checks_are_rate_limited(client, make_user):
    user = await make_user("quin")
    for _ in range(10):
        response = await client.put(
            f"{API}/profile/password",
            headers=user.headers,
            json={"currentPassword": "wrong-password", "newPassword": "new-password-1"},
        )
        assert response.status_code == 400
        assert (await response.get_json())["code"] == "wrong_password"
    limited = await client.put(
        f"{API}/profile/password",
        headers=user.headers,
        json={"currentPassword": user.password, "newPassword": "new-password-1"},
    )
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0
    # the session survives: a limit is never a 401
    assert (await client.get(f"{API}/auth/me", headers=user.headers)).status_code == 200


async def test_new_password_rules(client, make_user):
    user = await make_user("rae")
    response = await client.put(
        f"{API}/profile/password",
        headers=user.headers,
        json={"currentPassword": user.password, "newPassword": "short"},
    )
    assert response.status_code == 400
    assert "8 characters" in (await response.get_json())["error"]


async def test_mfa_disable_password_checks_are_rate_limited(client, make_user, kernel):
    """Ten wrong passwords at /profile/mfa/disable give 429 + Retry-After even for the right one."""
    user = await make_user("ruth")
    await enable_mfa(client, user.token)
    for _ in range(10):
        response = await client.post(
            f"{API}/profile/mfa/disable", headers=user.headers, json={"password": "wrong-password"}
        )
        assert response.status_code == 400
        assert (await response.get_json())["code"] == "wrong_password"
    limited = await client.post(
        f"{API}/profile/mfa/disable", headers=user.headers, json={"password": user.password}
    )
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0
    # MFA stays on, and the session survives: a limit is never a 401
    assert (await get_user(kernel, user.id)).mfa_enabled is True
    assert (await client.get(f"{API}/auth/me", headers=user.headers)).status_code == 200
