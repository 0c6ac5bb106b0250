"""The login-pack contract: a pack built only from `hostgate` exports gets the same limits,
lockout, audit, session and cookie as local login; external identities are provisioned."""

import asyncio

import pytest
from hostgate import (
    LoginMethod,
    clear_session_cookie,
    current_kernel,
    hookimpl,
    public,
    request_client,
    signed_in_response,
)
from hostgate.app import create_app
from quart import Blueprint, jsonify, request

from tests.services.identity.helpers import API, audit_entries, bearer, get_user

DIRECTORY = {"dora": "dora-secret"}


def build_pack():
    """A toy directory login, written the way the LDAP/OIDC packs use kernel.logins."""
    bp = Blueprint("toy", __name__)

    @bp.post("/auth/login/toy")
    @public
    async def toy_login():
        kernel = current_kernel()
        client = request_client()
        body = await request.get_json()
        await kernel.logins.limit_ip(client)
        user = await kernel.logins.find_user(body["username"], provider="toy")
        await kernel.logins.check_not_locked(user, client, username=body["username"])
        if DIRECTORY.get(body["username"]) != body["password"]:
            await kernel.logins.record_failure(
                user, body["username"], client, reason="toy_auth_failed", provider="toy"
            )
            raise kernel.logins.invalid_credentials()
        user = await kernel.logins.provision_external(
            "toy", f"uid={body['username']}", body["username"], "Dora Explorer", "dora@toy.test"
        )
        signed = await kernel.logins.complete_login(
            user, client, method="toy", details={"provider": "toy"}
        )
        return signed_in_response(signed)

    @bp.post("/auth/toy/forget")
    @public
    async def toy_forget():
        response = jsonify({"ok": True})
        clear_session_cookie(response)
        return response

    class Pack:
        @hookimpl
        def register_login_methods(self):
            return [LoginMethod(name="toy", blueprint=bp, providers=lambda k: {"toy": True})]

    return Pack()


@pytest.fixture
def plugins():
    return [build_pack()]


async def test_pack_login_issues_a_normal_session(client, kernel):
    response = await client.post(
        f"{API}/auth/login/toy", json={"username": "dora", "password": "dora-secret"}
    )
    assert response.status_code == 200
    body = await response.get_json()
    assert body["user"]["username"] == "dora" and body["user"]["role"] == "user"
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    me = await client.get(f"{API}/auth/me", headers=bearer(body["token"]))
    assert (await me.get_json())["user"]["displayName"] == "Dora Explorer"
    user = await get_user(kernel, body["user"]["id"])
    assert user.auth_provider == "toy" and user.password_hash is None
    assert (await audit_entries(kernel, "auth.login"))[-1].details == {
        "method": "toy",
        "provider": "toy",
    }
    # the local password form cannot log into an external account
    local = await client.post(f"{API}/auth/login", json={"username": "dora", "password": "x"})
    assert local.status_code == 401
    providers = await (await client.get(f"{API}/auth/providers")).get_json()
    assert providers["toy"] is True


async def test_pack_failures_lock_like_local_ones(client, kernel):
    await kernel.settings.update({"security.max_login_attempts": 2})
    ok = await client.post(
        f"{API}/auth/login/toy", json={"username": "dora", "password": "dora-secret"}
    )
    user_id = (await ok.get_json())["user"]["id"]
    for _ in range(2):
        bad = await client.post(
            f"{API}/auth/login/toy", json={"username": "dora", "password": "wrong"}
        )
        assert bad.status_code == 401
    assert (await get_user(kernel, user_id)).failed_login_count == 2
    locked = await client.post(
        f"{API}/auth/login/toy", json={"username": "dora", "password": "dora-secret"}
    )
    assert locked.status_code == 429 and "Retry-After" in locked.headers
    failed = (await audit_entries(kernel, "auth.login_failed"))[-1]
    assert failed.details["provider"] == "toy" and failed.details["reason"] == "toy_auth_failed"


async def test_provisioning_rules(kernel, make_user):
    await make_user("erin")  # a local user holding the name
    first = await kernel.logins.provision_external(
        "ldap", "cn=erin,dc=x", "erin", "Erin One", "erin@x.test"
    )
    assert first.username == "erin_ldap" and first.auth_provider == "ldap"
    again = await kernel.logins.provision_external(
        "ldap", "cn=erin,dc=x", "erin", "Erin Renamed", "new@x.test"
    )
    assert again.id == first.id
    stored = await get_user(kernel, first.id)
    assert stored.display_name == "Erin Renamed" and stored.email == "new@x.test"
    second = await kernel.logins.provision_external(
        "ldap", "cn=erin,ou=other,dc=x", "erin", "Erin Two", ""
    )
    assert second.username == "erin_ldap2"
    boss = await kernel.logins.provision_external(
        "oidc", "sub-1", "boss", "Boss", "", role_name="admin"
    )
    _, role_permissions = await kernel.identity.role_permissions(boss.role_id)
    assert "users.manage" in role_permissions
    created = [e.target for e in await audit_entries(kernel, "user.created")]
    assert created == ["erin_ldap", "erin_ldap2", "boss"]


async def test_concurrent_first_logins_make_one_user(kernel):
    users = await asyncio.gather(
        *(
            kernel.logins.provision_external("oidc", "sub-same", "same", "Same", "")
            for _ in range(4)
        )
    )
    assert len({u.id for u in users}) == 1


async def test_pack_cookie_helpers_work_outside_login(config):
    app = create_app(config, plugins=[build_pack()])
    async with app.test_app() as test_app:
        response = await test_app.test_client().post(f"{API}/auth/toy/forget")
        assert response.headers["Set-Cookie"].startswith("hostgate_token=;")


async def test_a_suspended_pack_account_is_refused_after_its_credential(client, admin):
    ok = await client.post(
        f"{API}/auth/login/toy", json={"username": "dora", "password": "dora-secret"}
    )
    user_id = (await ok.get_json())["user"]["id"]
    suspended = await client.post(f"{API}/users/{user_id}/suspend", headers=admin.headers)
    assert suspended.status_code == 200
    right = await client.post(
        f"{API}/auth/login/toy", json={"username": "dora", "password": "dora-secret"}
    )
    assert right.status_code == 403
    assert (await right.get_json())["code"] == "account_suspended"
    assert "Set-Cookie" not in right.headers
    wrong = await client.post(
        f"{API}/auth/login/toy", json={"username": "dora", "password": "wrong"}
    )
    assert wrong.status_code == 401
