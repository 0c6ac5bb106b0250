"""Login sessions: listing, revocation on the next request, idle timeout, lifetime, live sockets."""

from datetime import timedelta

from hostgate.db.models.identity import LoginSession
from hostgate.services.sessions.live_sessions import LiveSession
from hostgate.timefmt import as_utc, utcnow
from sqlmodel import select

from tests.services.identity.helpers import (
    API,
    ISO,
    age_sessions,
    audit_entries,
    bearer,
    login_token,
)

UA_FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"


def register_socket(kernel, user_id, login_session_id, closed):
    async def close(reason, reason_code):
        closed.append((login_session_id, reason, reason_code))

    kernel.live.add(
        LiveSession(
            id=f"sock-{login_session_id}",
            kind="terminal",
            protocol="ssh",
            user_id=user_id,
            login_session_id=login_session_id,
            connection_id="c1",
            close=close,
        )
    )


async def session_id_of(client, token):
    body = await (
        await client.get(f"{API}/profile/login-sessions", headers=bearer(token))
    ).get_json()
    return next(s["id"] for s in body["sessions"] if s["isCurrent"])


async def test_login_sessions_list_shape(client, make_user):
    user = await make_user("ann")
    token = (
        await (
            await client.post(
                f"{API}/auth/login",
                json={"username": "ann", "password": user.password},
                headers={"User-Agent": UA_FIREFOX},
            )
        ).get_json()
    )["token"]
    response = await client.get(f"{API}/profile/login-sessions", headers=bearer(token))
    assert response.status_code == 200
    sessions = (await response.get_json())["sessions"]
    assert len(sessions) == 2
    current = [s for s in sessions if s["isCurrent"]]
    assert len(current) == 1
    row = current[0]
    assert {"id", "browser", "os", "ipAddress", "createdAt", "lastUsedAt", "isCurrent"} <= set(row)
    assert row["browser"] == "Firefox" and row["os"] == "Linux"
    assert ISO.match(row["createdAt"]) and ISO.match(row["lastUsedAt"])
    assert sessions[0]["lastUsedAt"] >= sessions[1]["lastUsedAt"]


async def test_revoke_one_session_takes_effect_at_once(client, make_user, kernel):
    user = await make_user("ben")
    other = await login_token(client, "ben", user.password)
    other_id = await session_id_of(client, other)
    closed = []
    register_socket(kernel, user.id, other_id, closed)

    response = await client.delete(f"{API}/profile/login-sessions/{other_id}", headers=user.headers)
    assert response.status_code == 200 and await response.get_json() == {"ok": True}
    assert (await client.get(f"{API}/auth/me", headers=bearer(other))).status_code == 401
    assert closed == [(other_id, "revoked", "revoked")]
    assert (await client.get(f"{API}/auth/me", headers=user.headers)).status_code == 200
    # other people's sessions and unknown ids: 404, and nothing happens
    stranger = await make_user("stranger")
    stranger_id = await session_id_of(client, stranger.token)
    before = len(await audit_entries(kernel, "auth.session_revoked"))
    response = await client.delete(
        f"{API}/profile/login-sessions/{stranger_id}", headers=user.headers
    )
    assert response.status_code == 404
    assert (await response.get_json())["code"] == "login_session_not_found"
    assert (await client.get(f"{API}/auth/me", headers=stranger.headers)).status_code == 200
    missing = await client.delete(f"{API}/profile/login-sessions/nope", headers=user.headers)
    assert missing.status_code == 404
    assert len(await audit_entries(kernel, "auth.session_revoked")) == before


async def test_revoke_current_session(client, make_user):
    user = await make_user("cat")
    own = await session_id_of(client, user.token)
    response = await client.delete(f"{API}/profile/login-sessions/{own}", headers=user.headers)
    assert response.status_code == 200
    assert (await client.get(f"{API}/auth/me", headers=user.headers)).status_code == 401


async def test_revoke_all_others_keeps_current(client, make_user, kernel):
    user = await make_user("dan")
    first = await login_token(client, "dan", user.password)
    second = await login_token(client, "dan", user.password)
    closed = []
    register_socket(kernel, user.id, await session_id_of(client, first), closed)
    register_socket(kernel, user.id, await session_id_of(client, user.token), closed)
    response = await client.delete(f"{API}/profile/login-sessions", headers=user.headers)
    assert response.status_code == 200
    for token in (first, second):
        assert (await client.get(f"{API}/auth/me", headers=bearer(token))).status_code == 401
    assert (await client.get(f"{API}/auth/me", headers=user.headers)).status_code == 200
    assert len(closed) == 1
    listed = await (
        await client.get(f"{API}/profile/login-sessions", headers=user.headers)
    ).get_json()
    assert [s["isCurrent"] for s in listed["sessions"]] == [True]


async def test_password_change_revokes_other_sessions(client, make_user):
    user = await make_user("eve")
    other = await login_token(client, "eve", user.password)
    response = await client.put(
        f"{API}/profile/password",
        headers=user.headers,
        json={"currentPassword": user.password, "newPassword": "brand-new-pass"},
    )
    assert response.status_code == 200 and await response.get_json() == {"success": True}
    assert (await client.get(f"{API}/auth/me", headers=bearer(other))).status_code == 401
    assert (await client.get(f"{API}/auth/me", headers=user.headers)).status_code == 200
    old = await client.post(
        f"{API}/auth/login", json={"username": "eve", "password": user.password}
    )
    assert old.status_code == 401
    await login_token(client, "eve", "brand-new-pass")


async def test_admin_reset_revokes_every_session(client, make_user, admin, kernel):
    user = await make_user("fay")
    closed = []
    register_socket(kernel, user.id, await session_id_of(client, user.token), closed)
    response = await client.post(
        f"{API}/users/{user.id}/reset-password",
        headers=admin.headers,
        json={"newPassword": "reset-by-admin"},
    )
    assert response.status_code == 200
    assert (await client.get(f"{API}/auth/me", headers=user.headers)).status_code == 401
    assert len(closed) == 1
    await login_token(client, "fay", "reset-by-admin")


async def test_user_deletion_ends_their_sessions(client, make_user, admin, kernel):
    user = await make_user("gus")
    closed = []
    register_socket(kernel, user.id, await session_id_of(client, user.token), closed)
    response = await client.delete(f"{API}/users/{user.id}", headers=admin.headers)
    assert response.status_code == 200
    me = await client.get(f"{API}/auth/me", headers=user.headers)
    assert me.status_code == 401
    assert closed and closed[0][1:] == ("user deleted", "user_deleted")
    async with kernel.db.session() as session:
        rows = (
            await session.exec(select(LoginSession).where(LoginSession.user_id == user.id))
        ).all()
    assert rows == []


async def test_idle_timeout(client, make_user, kernel):
    user = await make_user("hal")
    await kernel.settings.update({"security.idle_timeout_minutes": 10})
    await age_sessions(kernel, user.id, minutes=9)
    assert (await client.get(f"{API}/auth/me", headers=user.headers)).status_code == 200
    await age_sessions(kernel, user.id, minutes=11)
    response = await client.get(f"{API}/auth/me", headers=user.headers)
    assert response.status_code == 401
    assert (await response.get_json())["code"] == "session_idle_timeout"
    # once timed out it stays revoked, even if the clock were turned back
    await age_sessions(kernel, user.id, minutes=1)
    assert (await client.get(f"{API}/auth/me", headers=user.headers)).status_code == 401


async def test_idle_timeout_zero_means_none(client, make_user, kernel):
    user = await make_user("ida")
    await age_sessions(kernel, user.id, minutes=60 * 24 * 20)
    assert (await client.get(f"{API}/auth/me", headers=user.headers)).status_code == 200


async def test_heartbeat_does_not_reset_the_idle_clock(client, make_user, kernel):
    user = await make_user("ian")
    await kernel.settings.update({"security.idle_timeout_minutes": 10})
    await age_sessions(kernel, user.id, minutes=8)
    ok = await client.get(f"{API}/auth/me?heartbeat=1", headers=user.headers)
    assert ok.status_code == 200
    async with kernel.db.session() as session:
        row = (
            await session.exec(select(LoginSession).where(LoginSession.user_id == user.id))
        ).one()
    assert utcnow() - as_utc(row.last_used_at) > timedelta(minutes=7)
    # a normal request does reset it
    await client.get(f"{API}/auth/me", headers=user.headers)
    async with kernel.db.session() as session:
        row = (
            await session.exec(select(LoginSession).where(LoginSession.user_id == user.id))
        ).one()
    assert utcnow() - as_utc(row.last_used_at) < timedelta(minutes=1)


async def test_session_lifetime_setting(client, make_user, kernel):
    await kernel.settings.update({"security.session_lifetime_days": 2})
    user = await make_user("jo")
    token = await login_token(client, "jo", user.password)
    async with kernel.db.session() as session:
        rows = (
            await session.exec(select(LoginSession).where(LoginSession.user_id == user.id))
        ).all()
    for row in rows:
        assert as_utc(row.expires_at) - as_utc(row.created_at) == timedelta(days=2)
    await age_sessions(kernel, user.id, expire=True)
    response = await client.get(f"{API}/auth/me", headers=bearer(token))
    assert response.status_code == 401
    assert (await response.get_json())["code"] == "session_expired"
    listed = await client.get(f"{API}/profile/login-sessions", headers=bearer(token))
    assert listed.status_code == 401


async def test_mfa_token_is_not_a_session_token(client, make_user, kernel):
    user = await make_user("kim")
    mfa_token = kernel.identity.issue_mfa_token(user.id)
    for path in ("/auth/me", "/profile"):
        assert (await client.get(f"{API}{path}", headers=bearer(mfa_token))).status_code == 401
    ticket = await client.post(f"{API}/auth/ws-ticket", headers=bearer(mfa_token))
    assert ticket.status_code == 401
    disable = await client.post(
        f"{API}/profile/mfa/disable", headers=bearer(mfa_token), json={"password": user.password}
    )
    assert disable.status_code == 401


async def test_socket_check_honours_idle_timeout_and_revocation(client, make_user, kernel):
    user = await make_user("lia")
    ticket = (await (await client.post(f"{API}/auth/ws-ticket", headers=user.headers)).get_json())[
        "ticket"
    ]
    login_session_id = (await kernel.tickets.redeem(ticket)).login_session_id
    assert await kernel.identity.check_login_session(login_session_id)
    await kernel.settings.update({"security.idle_timeout_minutes": 5})
    await age_sessions(kernel, user.id, minutes=6)
    assert not await kernel.identity.check_login_session(login_session_id)
    await age_sessions(kernel, user.id, minutes=1)
    assert await kernel.identity.check_login_session(login_session_id)
    await client.post(f"{API}/auth/logout", headers=user.headers)
    assert not await kernel.identity.check_login_session(login_session_id)
