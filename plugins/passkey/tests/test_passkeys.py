"""Passkeys with a software authenticator doing real attestation and assertion."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hostgate import utcnow
from hostgate.db.models.identity import User
from sqlmodel import select

pytestmark = pytest.mark.usefixtures("passkeys_on")


async def audit_events(kernel: Any, event_type: str) -> list[Any]:
    from hostgate.db.models.audit import AuditEntry

    async with kernel.db.session() as session:
        query = select(AuditEntry).where(AuditEntry.event_type == event_type)
        return list((await session.exec(query)).all())


async def test_register_list_and_login(client, kernel, make_user, passkeys, authenticator):
    alice = await make_user("alice")
    answer = await passkeys.register(alice, authenticator, name="YubiKey")
    assert answer.status_code == 200, await answer.get_data(as_text=True)
    created = await answer.get_json()
    assert created["ok"] is True
    assert created["passkey"]["name"] == "YubiKey"
    assert created["passkey"]["createdAt"].endswith("Z")
    listing = await (await client.get("/api/v1/profile/passkeys", headers=alice.headers)).get_json()
    assert listing["passkeys"] == [
        {
            "id": created["passkey"]["id"],
            "name": "YubiKey",
            "createdAt": created["passkey"]["createdAt"],
            "lastUsedAt": None,
        }
    ]
    assert listing["canAdd"] is True and listing["maxPasskeys"] == 10
    registered = await audit_events(kernel, "auth.passkey_registered")
    assert registered[-1].details["passkeyName"] == "YubiKey"

    login = await passkeys.login(authenticator, "alice")
    assert login.status_code == 200, await login.get_data(as_text=True)
    body = await login.get_json()
    assert body["user"] == {"id": alice.id, "username": "alice", "role": "user"}
    assert "hostgate_token=" in login.headers["Set-Cookie"]
    me = await client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {body['token']}"})
    assert (await me.get_json())["user"]["username"] == "alice"
    assert (await audit_events(kernel, "auth.login"))[-1].details["method"] == "passkey"
    listing = await (await client.get("/api/v1/profile/passkeys", headers=alice.headers)).get_json()
    assert listing["passkeys"][0]["lastUsedAt"] is not None


async def test_usernameless_login(make_user, passkeys, authenticator):
    bob = await make_user("bob")
    assert (await passkeys.register(bob, authenticator)).status_code == 200
    options = await passkeys.options()
    assert options["options"]["allowCredentials"] == []
    login = await passkeys.login(authenticator)
    assert login.status_code == 200
    assert (await login.get_json())["user"]["username"] == "bob"


async def test_options_name_the_users_credentials(make_user, passkeys, authenticator):
    carol = await make_user("carol")
    await passkeys.register(carol, authenticator)
    options = (await passkeys.options("carol"))["options"]
    assert options["rpId"] == "gateway.example.org"
    assert [c["id"] for c in options["allowCredentials"]] == [authenticator.get(options)["rawId"]]


async def test_a_cloned_authenticator_is_caught_by_the_counter(
    kernel, make_user, passkeys, authenticator
):
    dave = await make_user("dave")
    await passkeys.register(dave, authenticator)
    clone = authenticator.clone()
    assert (await passkeys.login(authenticator, "dave")).status_code == 200
    # The clone's counter did not move with the original's: its assertion repeats count 1.
    answer = await passkeys.login(clone, "dave")
    assert answer.status_code == 401
    assert (await answer.get_json())["code"] == "passkey_failed"
    failed = await audit_events(kernel, "auth.login_failed")
    assert failed[-1].details["reason"] == "passkey_counter"
    assert failed[-1].username == "dave"
    # The genuine authenticator keeps working.
    assert (await passkeys.login(authenticator, "dave")).status_code == 200


async def test_a_replayed_assertion_is_rejected(kernel, make_user, passkeys, authenticator):
    erin = await make_user("erin")
    await passkeys.register(erin, authenticator)
    options = await passkeys.options("erin")
    response = authenticator.get(options["options"])
    assert (await passkeys.verify(options["challengeId"], response)).status_code == 200
    replay = await passkeys.verify(options["challengeId"], response)
    assert replay.status_code == 401
    failed = await audit_events(kernel, "auth.login_failed")
    assert failed[-1].details["reason"] == "passkey_invalid_challenge"
    # Replaying it against a fresh challenge fails the signature over the challenge.
    fresh = await passkeys.options("erin")
    assert (await passkeys.verify(fresh["challengeId"], response)).status_code == 401


async def test_another_origin_is_refused(make_user, passkeys, authenticator):
    frank = await make_user("frank")
    await passkeys.register(frank, authenticator)
    answer = await passkeys.login(authenticator, "frank", origin="https://evil.example.net")
    assert answer.status_code == 401


async def test_registration_from_another_origin_is_refused(make_user, passkeys, authenticator):
    gina = await make_user("gina")
    answer = await passkeys.register(gina, authenticator, origin="https://evil.example.net")
    assert answer.status_code == 400
    assert (await answer.get_json())["code"] == "passkey_invalid"


async def test_a_challenge_is_bound_to_its_user_and_purpose(
    client, make_user, passkeys, authenticator
):
    hank, ivy = await make_user("hank"), await make_user("ivy")
    start = await (
        await client.post("/api/v1/profile/passkeys/register/options", headers=hank.headers)
    ).get_json()
    response = authenticator.create(start["options"])
    stolen = await client.post(
        "/api/v1/profile/passkeys/register/verify",
        json={"challengeId": start["challengeId"], "response": response, "name": "x"},
        headers=ivy.headers,
    )
    assert stolen.status_code == 404
    assert (await stolen.get_json())["code"] == "invalid_challenge"
    # A registration challenge is no login challenge.
    start = await (
        await client.post("/api/v1/profile/passkeys/register/options", headers=hank.headers)
    ).get_json()
    assert (await passkeys.verify(start["challengeId"], {"id": "x"})).status_code == 401


async def test_login_challenge_for_one_user_refuses_another(make_user, passkeys, new_authenticator):
    jack, kim = await make_user("jack"), await make_user("kim")
    jack_key, kim_key = new_authenticator(), new_authenticator()
    await passkeys.register(jack, jack_key)
    await passkeys.register(kim, kim_key)
    options = await passkeys.options("jack")
    answer = await passkeys.verify(options["challengeId"], kim_key.get(options["options"]))
    assert answer.status_code == 401


async def test_rename_and_delete(client, kernel, make_user, passkeys, authenticator):
    lea = await make_user("lea")
    created = await (await passkeys.register(lea, authenticator)).get_json()
    passkey_id = created["passkey"]["id"]
    renamed = await client.put(
        f"/api/v1/profile/passkeys/{passkey_id}", json={"name": "Laptop"}, headers=lea.headers
    )
    assert renamed.status_code == 200
    listing = await (await client.get("/api/v1/profile/passkeys", headers=lea.headers)).get_json()
    assert listing["passkeys"][0]["name"] == "Laptop"
    other = await make_user("mo")
    assert (
        await client.delete(f"/api/v1/profile/passkeys/{passkey_id}", headers=other.headers)
    ).status_code == 404
    deleted = await client.delete(f"/api/v1/profile/passkeys/{passkey_id}", headers=lea.headers)
    assert deleted.status_code == 200
    assert await (await client.get("/api/v1/profile/passkeys", headers=lea.headers)).get_json() == {
        "passkeys": [],
        "canAdd": True,
        "maxPasskeys": 10,
    }
    assert (await audit_events(kernel, "auth.passkey_removed"))[-1].details[
        "passkeyId"
    ] == passkey_id
    assert (await passkeys.login(authenticator, "lea")).status_code == 401
    assert (
        await client.delete(f"/api/v1/profile/passkeys/{passkey_id}", headers=lea.headers)
    ).status_code == 404


async def test_per_user_limit(client, kernel, make_user, passkeys, authenticator):
    await kernel.settings.update({"security.passkey_max_per_user": 1})
    nina = await make_user("nina")
    assert (await passkeys.register(nina, authenticator)).status_code == 200
    again = await client.post("/api/v1/profile/passkeys/register/options", headers=nina.headers)
    assert again.status_code == 409
    listing = await (await client.get("/api/v1/profile/passkeys", headers=nina.headers)).get_json()
    assert listing["canAdd"] is False


async def test_a_locked_account_cannot_use_its_passkey(kernel, make_user, passkeys, authenticator):
    pat = await make_user("pat")
    await passkeys.register(pat, authenticator)
    async with kernel.db.session() as session:
        user = await session.get(User, pat.id)
        user.locked_until = utcnow() + timedelta(minutes=10)
        session.add(user)
        await session.commit()
    answer = await passkeys.login(authenticator, "pat")
    assert answer.status_code == 429


async def test_profile_routes_need_a_session(client):
    assert (await client.get("/api/v1/profile/passkeys")).status_code == 401
    assert (await client.post("/api/v1/profile/passkeys/register/options")).status_code == 401
    assert (await client.delete("/api/v1/profile/passkeys/x")).status_code == 401


async def test_bad_bodies(client, make_user, passkeys):
    quinn = await make_user("quinn")
    bad = await client.post(
        "/api/v1/profile/passkeys/register/verify",
        json={"challengeId": "x", "response": "not-an-object"},
        headers=quinn.headers,
    )
    assert bad.status_code == 400
    unknown = await client.post(
        "/api/v1/auth/login/passkey", json={"challengeId": "x", "response": {}, "extra": 1}
    )
    assert unknown.status_code == 400
    garbage = await passkeys.options()
    answer = await passkeys.verify(garbage["challengeId"], {"rawId": "!!!", "response": {}})
    assert answer.status_code == 401


async def test_a_personal_api_token_cannot_manage_passkeys(
    client, make_user, passkeys, authenticator
):
    ivy = await make_user("ivy")
    created = await (await passkeys.register(ivy, authenticator)).get_json()
    passkey_id = created["passkey"]["id"]
    made = await client.post("/api/v1/profile/api-tokens", json={"name": "ci"}, headers=ivy.headers)
    token = {"Authorization": f"Bearer {(await made.get_json())['secret']}"}
    for method, path, body in (
        ("POST", "/profile/passkeys/register/options", None),
        ("POST", "/profile/passkeys/register/verify", {"challengeId": "x", "response": {}}),
        ("PUT", f"/profile/passkeys/{passkey_id}", {"name": "Stolen"}),
        ("DELETE", f"/profile/passkeys/{passkey_id}", None),
    ):
        answer = await client.open(f"/api/v1{path}", method=method, json=body, headers=token)
        assert answer.status_code == 403, path
        assert (await answer.get_json())["code"] == "api_token_not_allowed", path
    listing = await (await client.get("/api/v1/profile/passkeys", headers=token)).get_json()
    assert [(p["id"], p["name"]) for p in listing["passkeys"]] == [(passkey_id, "My key")]
