"""Passkeys on/off, /auth/providers, and where the relying party comes from."""

from __future__ import annotations


async def test_disabled(client, kernel, make_user, passkeys, authenticator):
    rita = await make_user("rita")
    await kernel.settings.update(
        {
            "security.passkey_rp_id": "gateway.example.org",
            "security.passkey_origin": "https://gateway.example.org",
        }
    )
    await passkeys.register(rita, authenticator)
    providers = await (await client.get("/api/v1/auth/providers")).get_json()
    assert providers["passkey"] is True
    options = await passkeys.options("rita")
    await kernel.settings.update({"security.passkey_enabled": False})
    providers = await (await client.get("/api/v1/auth/providers")).get_json()
    assert providers["passkey"] is False
    for path, body in (
        ("/api/v1/auth/login/passkey/options", {}),
        (
            "/api/v1/auth/login/passkey",
            {
                "challengeId": options["challengeId"],
                "response": authenticator.get(options["options"]),
            },
        ),
    ):
        answer = await client.post(path, json=body)
        assert answer.status_code == 400
        assert (await answer.get_json())["code"] == "passkey_disabled"
    answer = await client.post("/api/v1/profile/passkeys/register/options", headers=rita.headers)
    assert answer.status_code == 400
    listing = await (await client.get("/api/v1/profile/passkeys", headers=rita.headers)).get_json()
    assert len(listing["passkeys"]) == 1 and listing["canAdd"] is False


async def test_relying_party_defaults_to_the_request_host(
    client, make_user, passkeys, authenticator
):
    sam = await make_user("sam")
    start = await (
        await client.post("/api/v1/profile/passkeys/register/options", headers=sam.headers)
    ).get_json()
    host = start["options"]["rp"]["id"]
    assert host == "localhost"
    origin = f"http://{host}"
    assert (await passkeys.register(sam, authenticator, origin=origin)).status_code == 200
    assert (await passkeys.login(authenticator, "sam", origin=origin)).status_code == 200
    refused = await passkeys.login(authenticator, "sam", origin="https://localhost")
    assert refused.status_code == 401


async def test_bad_settings_are_refused(client, admin):
    for change in (
        {"security.passkey_rp_id": "https://gateway.example.org"},
        {"security.passkey_origin": "gateway.example.org"},
        {"security.passkey_origin": "https://gateway.example.org/login"},
        {"security.passkey_max_per_user": 0},
    ):
        answer = await client.put("/api/v1/settings", json=change, headers=admin.headers)
        assert answer.status_code == 400, change
