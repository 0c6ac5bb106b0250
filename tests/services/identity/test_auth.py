"""/auth/*: status, setup (and its race), providers, login, logout, me, ws-ticket, cookies."""

import asyncio

from hostgate import LoginMethod, hookimpl
from hostgate.app import create_app
from hostgate.db.models.identity import User
from hostgate.security.tickets import TICKET_TTL_SECONDS
from hostgate.services.identity import accounts
from sqlmodel import select

from tests.services.identity.helpers import API, ISO, audit_entries, bearer, login, login_token


async def test_status_then_setup_creates_the_first_admin(client, kernel):
    response = await client.get(f"{API}/auth/status")
    assert response.status_code == 200
    assert await response.get_json() == {"needsSetup": True}

    response = await client.post(
        f"{API}/auth/setup",
        json={"username": "root", "password": "s3cret-pass", "displayName": "Root Admin"},
    )
    assert response.status_code == 200
    body = await response.get_json()
    assert set(body) == {"token", "user"}
    assert body["user"]["username"] == "root"
    assert body["user"]["role"] == "admin"
    cookie = response.headers["Set-Cookie"]
    assert cookie.startswith(f"hostgate_token={body['token']};")
    for part in ("HttpOnly", "Path=/", "SameSite=Strict", "Max-Age="):
        assert part in cookie
    assert "Secure" not in cookie  # plain http here

    assert await (await client.get(f"{API}/auth/status")).get_json() == {"needsSetup": False}
    me = await client.get(f"{API}/auth/me", headers=bearer(body["token"]))
    assert (await me.get_json())["user"]["displayName"] == "Root Admin"
    assert [e.event_type for e in await audit_entries(kernel)] == ["user.setup", "auth.login"]

    again = await client.post(
        f"{API}/auth/setup", json={"username": "other", "password": "s3cret-pass"}
    )
    assert again.status_code == 409
    assert (await again.get_json())["code"] == "setup_completed"


async def test_setup_is_refused_once_any_user_exists(client, make_user):
    await make_user("someone")
    response = await client.post(
        f"{API}/auth/setup", json={"username": "root", "password": "s3cret-pass"}
    )
    assert response.status_code == 409


async def test_setup_validates_before_anything_is_stored(client):
    short = await client.post(f"{API}/auth/setup", json={"username": "root", "password": "short"})
    assert short.status_code == 400
    assert "8 characters" in (await short.get_json())["error"]
    spaced = await client.post(
        f"{API}/auth/setup", json={"username": "two words", "password": "long-enough"}
    )
    assert spaced.status_code == 400
    assert await (await client.get(f"{API}/auth/status")).get_json() == {"needsSetup": True}


async def test_concurrent_setups_create_exactly_one_admin(client, kernel, monkeypatch):
    # Line the four requests up after hashing, so all of them check "no user yet"
    # before any of them commits: the race the guard row must settle.
    real_hash = accounts.hash_password
    arrived = []
    go = asyncio.Event()

    async def lined_up_hash(password):
        hashed = await real_hash(password)
        arrived.append(1)
        if len(arrived) == 4:
            go.set()
        await go.wait()
        return hashed

    monkeypatch.setattr(accounts, "hash_password", lined_up_hash)

    async def attempt(name):
        return await client.post(
            f"{API}/auth/setup", json={"username": name, "password": "s3cret-pass"}
        )

    responses = await asyncio.gather(*(attempt(f"admin{i}") for i in range(4)))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200, 409, 409, 409]
    async with kernel.db.session() as session:
        assert len((await session.exec(select(User))).all()) == 1


async def test_providers_reports_every_login_pack_false_when_none_is_installed(client, kernel):
    """Without login packs /auth/providers still has the ldap, oidc and passkey keys, all false."""
    await kernel.settings.update({"auth.ldap_enabled": True, "auth.oidc_enabled": True})
    body = await (await client.get(f"{API}/auth/providers")).get_json()
    assert body == {
        "local": True,
        "ldap": False,
        "oidc": False,
        "oidcButtonLabel": "Sign in with SSO",
        "passkey": False,
    }


async def test_providers_reports_local_and_pack_keys(config):
    class FakeLdap:
        @hookimpl
        def register_login_methods(self):
            return [LoginMethod(name="fake", providers=lambda k: {"ldap": True, "passkey": True})]

    app = create_app(config, plugins=[FakeLdap()])
    async with app.test_app() as test_app:
        client = test_app.test_client()
        body = await (await client.get(f"{API}/auth/providers")).get_json()
        assert body == {
            "local": True,
            "ldap": True,
            "oidc": False,
            "oidcButtonLabel": "Sign in with SSO",
            "passkey": True,
        }
        kernel = app.extensions["hostgate"]
        await kernel.settings.update({"auth.local_enabled": False, "auth.oidc_button_label": "Go"})
        body = await (await client.get(f"{API}/auth/providers")).get_json()
        assert body["local"] is False and body["oidcButtonLabel"] == "Go"


async def test_login_returns_token_user_and_cookie(client, make_user, kernel):
    user = await make_user("alice")
    response = await login(client, "Alice", user.password)  # usernames are case-insensitive
    assert response.status_code == 200
    body = await response.get_json()
    assert body["user"] == {"id": user.id, "username": "alice", "role": "user"}
    assert "hostgate_token=" in response.headers["Set-Cookie"]
    me = await client.get(f"{API}/auth/me", headers=bearer(body["token"]))
    assert me.status_code == 200
    me_user = (await me.get_json())["user"]
    assert set(me_user) == {
        "id",
        "username",
        "displayName",
        "role",
        "permissions",
        "dismissedWarnings",
        "pendingStep",
    }
    assert me_user["pendingStep"] is None
    assert me_user["role"] == "user" and "connections.create" in me_user["permissions"]
    login_event = (await audit_entries(kernel, "auth.login"))[-1]
    assert login_event.user_id == user.id and login_event.details["method"] == "local"


async def test_wrong_password_and_unknown_user_look_the_same(client, make_user, kernel):
    user = await make_user("bob")
    wrong = await login(client, "bob", "not-the-password")
    unknown = await login(client, "nobody", "not-the-password")
    assert wrong.status_code == unknown.status_code == 401
    assert (
        await wrong.get_json()
        == await unknown.get_json()
        == {
            "error": "Invalid username or password",
            "code": "invalid_credentials",
        }
    )
    failed = await audit_entries(kernel, "auth.login_failed")
    assert [e.details["reason"] for e in failed] == ["invalid_password", "unknown_user"]
    assert failed[0].user_id == user.id and failed[1].user_id is None


async def test_local_login_disabled_is_403(client, make_user, kernel):
    user = await make_user("carol")
    await kernel.settings.update({"auth.local_enabled": False})
    response = await login(client, "carol", user.password)
    assert response.status_code == 403
    assert (await response.get_json())["code"] == "local_login_disabled"


async def test_login_body_is_validated(client):
    assert (await client.post(f"{API}/auth/login", json={"username": "x"})).status_code == 400
    malformed = await client.post(
        f"{API}/auth/login", data="{not json", headers={"Content-Type": "application/json"}
    )
    assert malformed.status_code == 400


async def test_cookie_authenticates_and_csrf_is_checked(client, make_user):
    user = await make_user("dave")
    token = await login_token(client, "dave", user.password)
    client.set_cookie("localhost", "hostgate_token", token)
    assert (await client.get(f"{API}/auth/me")).status_code == 200
    foreign = await client.post(f"{API}/auth/ws-ticket", headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403
    own = await client.post(f"{API}/auth/ws-ticket")
    assert own.status_code == 200


async def test_secure_cookie_over_https(client, make_user):
    user = await make_user("erin")
    response = await client.post(
        f"{API}/auth/login",
        json={"username": "erin", "password": user.password},
        scheme="https",
    )
    assert response.status_code == 200
    assert "Secure" in response.headers["Set-Cookie"]


async def test_logout_revokes_and_clears_cookie(client, make_user, kernel):
    user = await make_user("frank")
    token = await login_token(client, "frank", user.password)
    response = await client.post(f"{API}/auth/logout", headers=bearer(token))
    assert response.status_code == 200
    assert await response.get_json() == {"ok": True}
    cookie = response.headers["Set-Cookie"]
    assert cookie.startswith("hostgate_token=;") and "Max-Age=0" in cookie
    after = await client.get(f"{API}/auth/me", headers=bearer(token))
    assert after.status_code == 401
    assert (await after.get_json())["code"] == "session_revoked"
    assert (await audit_entries(kernel, "auth.logout"))[-1].user_id == user.id
    # the fixture's own session is untouched
    assert (await client.get(f"{API}/auth/me", headers=user.headers)).status_code == 200


async def test_authenticated_routes_need_a_token(client):
    for method, path in [
        ("get", "/auth/me"),
        ("post", "/auth/logout"),
        ("post", "/auth/ws-ticket"),
    ]:
        response = await getattr(client, method)(f"{API}{path}")
        assert response.status_code == 401, path
    garbage = await client.get(f"{API}/auth/me", headers=bearer("not.a.jwt"))
    assert garbage.status_code == 401


async def test_ws_ticket_is_bound_and_single_use(client, make_user, kernel):
    user = await make_user("gina")
    response = await client.post(f"{API}/auth/ws-ticket", headers=user.headers)
    assert response.status_code == 200
    ticket = (await response.get_json())["ticket"]
    assert len(ticket) >= 32
    redeemed = await kernel.tickets.redeem(ticket)
    assert redeemed is not None and redeemed.user_id == user.id
    assert await kernel.identity.check_login_session(redeemed.login_session_id)
    assert await kernel.tickets.redeem(ticket) is None


class ManualClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_ws_ticket_expires_after_thirty_seconds(client, make_user, kernel):
    """A ticket from /auth/ws-ticket redeems up to 30 s after issue and is refused after that."""
    assert kernel.tickets.ttl == TICKET_TTL_SECONDS == 30.0
    clock = ManualClock()
    kernel.tickets.clock = clock
    user = await make_user("hugo")

    async def issue() -> str:
        response = await client.post(f"{API}/auth/ws-ticket", headers=user.headers)
        assert response.status_code == 200
        return (await response.get_json())["ticket"]

    in_time, too_late = await issue(), await issue()
    clock.now += 29.5
    redeemed = await kernel.tickets.redeem(in_time)
    assert redeemed is not None and redeemed.user_id == user.id
    clock.now += 1.0  # 30.5 s after issue
    assert await kernel.tickets.redeem(too_late) is None
    # a refused ticket is gone: it does not come back if the clock were to allow it
    clock.now -= 10.0
    assert await kernel.tickets.redeem(too_late) is None


async def test_timestamps_are_iso(client, admin):
    users = await (await client.get(f"{API}/users", headers=admin.headers)).get_json()
    assert ISO.match(users["users"][0]["createdAt"])
    assert ISO.match(users["users"][0]["lastLoginAt"])


async def test_control_characters_never_log_in_as_the_plain_name(client, kernel, make_user):
    bob = await make_user("bob")
    for name in ("bob\x00", "bob\n", "\tbob", "bo\x7fb", "bob\x1b[0m"):
        response = await login(client, name, bob.password)
        body = await response.get_json()
        assert response.status_code == 400, (name, body)
        assert body["code"] == "invalid_username"
    assert [e.event_type for e in await audit_entries(kernel)] == []
    sessions = await client.get(f"{API}/profile/login-sessions", headers=bob.headers)
    assert len((await sessions.get_json())["sessions"]) == 1  # only the test's own
    assert (await login(client, "bob", bob.password)).status_code == 200


async def test_control_characters_are_refused_at_setup_and_user_creation(client, make_user):
    for name in ("root\x00", "ro\x01ot"):
        setup = await client.post(
            f"{API}/auth/setup", json={"username": name, "password": "s3cret-pass"}
        )
        assert setup.status_code == 400
    admin = await make_user("admin", role="admin")
    created = await client.post(
        f"{API}/users",
        json={"username": "carol\x00", "password": "s3cret-pass", "role": "user"},
        headers=admin.headers,
    )
    assert created.status_code == 400
    users = await (await client.get(f"{API}/users", headers=admin.headers)).get_json()
    assert [u["username"] for u in users["users"]] == ["admin"]


async def test_every_new_password_meets_the_one_strength_rule(client, kernel, admin, make_user):
    """setup, user creation, an admin's reset and the profile refuse what the meter calls
    very weak (``password``, a keyboard run, the username doubled), and store nothing."""
    weak = [("password", "root"), ("qwertyuiop", "root"), ("rootroot", "root")]
    for password, username in weak:
        refused = await client.post(
            f"{API}/auth/setup", json={"username": username, "password": password}
        )
        assert refused.status_code == 400, password
        body = await refused.get_json()
        assert body["code"] == "weak_password"
        assert "too easy to guess" in body["error"]
    created = await client.post(
        f"{API}/users",
        json={"username": "carol", "password": "carolcarol"},
        headers=admin.headers,
    )
    assert created.status_code == 400
    assert (await created.get_json())["code"] == "weak_password"
    bob = await make_user("bob")
    reset = await client.post(
        f"{API}/users/{bob.id}/reset-password",
        json={"newPassword": "12345678"},
        headers=admin.headers,
    )
    assert reset.status_code == 400
    assert "newPassword is too easy to guess" in (await reset.get_json())["error"]
    changed = await client.put(
        f"{API}/profile/password",
        json={"currentPassword": bob.password, "newPassword": "Password1"},
        headers=bob.headers,
    )
    assert changed.status_code == 400
    assert (await changed.get_json())["code"] == "weak_password"
    async with kernel.db.session() as session:
        names = (await session.exec(select(User.username))).all()
    assert sorted(names) == ["admin", "bob"]
    assert await login_token(client, "bob", bob.password)  # the old password still works

    # a strong one passes everywhere
    made = await client.post(
        f"{API}/users",
        json={"username": "carol", "password": "orbit canyon lantern"},
        headers=admin.headers,
    )
    assert made.status_code == 201, await made.get_json()
