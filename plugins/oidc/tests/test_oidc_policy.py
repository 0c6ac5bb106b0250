"""Every request to the identity provider obeys the target network policy."""

from __future__ import annotations

from typing import Any

import pytest
from hostgate_oidc.provider import _secure_url

from testsupport.fixtures import store_unchecked

pytestmark = pytest.mark.peer("oidc-provider-mock")


async def denials(client: Any, admin: Any) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/audit?eventType=network.denied", headers=admin.headers)
    return list((await response.get_json())["entries"])


async def test_discovery_of_a_refused_issuer_is_not_fetched(client, admin, kernel, oidc_on):
    await kernel.settings.update({"network.deny": "127.0.0.1"})
    for _ in range(3):  # anyone may ask; the refusal is remembered for a few seconds
        answer = await client.get("/api/v1/auth/oidc/authorize")
        body = await answer.get_json()
        assert answer.status_code == 502, body
        assert body["code"] == "oidc_target_denied"
        assert "network.deny" in body["error"]
    [entry] = await denials(client, admin)
    assert entry["details"]["purpose"] == "oidc"
    assert entry["target"] == oidc_on["auth.oidc_issuer"].removeprefix("https://").rstrip("/")


async def test_endpoints_the_discovery_document_names_are_checked_too(
    flow, client, admin, kernel, oidc_provider, oidc_on
):
    oidc_provider.set_user("sub-carol", preferred_username="carol")
    url = await flow.start()  # discovery allowed and cached
    params = await flow.sign_in(url, "sub-carol")
    await kernel.settings.update({"network.deny": "127.0.0.1"})
    message = flow.sso_error(await flow.callback(params))
    assert "token endpoint" in message
    assert "network policy does not allow" in message
    [entry] = await denials(client, admin)
    assert entry["details"]["purpose"] == "oidc"

    await kernel.settings.update({"network.deny": ""})
    answer = await flow.login("sub-carol")
    assert answer.headers["Location"] == "/?sso=success"


@pytest.mark.parametrize("url", ["https://[::1", "https://a\x00b/jwks", "ftp://idp.example/"])
def test_a_url_that_does_not_parse_is_not_usable(url):
    assert not _secure_url(url)


async def test_an_issuer_that_does_not_parse_is_a_clear_502(client, kernel, oidc_on):
    # refused when saved now; one stored by an older release is still used safely
    await store_unchecked(kernel, "auth.oidc_issuer", "https://[::1")
    answer = await client.get("/api/v1/auth/oidc/authorize")
    assert answer.status_code == 502
    assert (await answer.get_json())["code"] == "oidc_misconfigured"


CALLBACK = "/api/v1/auth/oidc/callback"
SHAPE = f"must be an absolute http(s) URL whose path is {CALLBACK}"
BAD_REDIRECT_URIS = [
    (f"https://gw.example.org{CALLBACK}\x00", f"{SHAPE} (no spaces or control characters)"),
    (f"https://gw.example.org{CALLBACK}\r\nSet-Cookie: x", f"{SHAPE} (no spaces or control"),
    (f"https://gw.example.org/a b{CALLBACK}", f"{SHAPE} (no spaces or control characters)"),
    (f"ftp://gw.example.org{CALLBACK}", SHAPE),
    (CALLBACK, SHAPE),
    (f"https://{CALLBACK}", SHAPE),
    ("https://gw.example.org/", SHAPE),
    ("https://gw.example.org/login", SHAPE),
    (f"https://gw.example.org{CALLBACK}/", SHAPE),
    (f"https://gw.example.org{CALLBACK}x", SHAPE),
    # the gateway is served at the root of its host: no prefix, no dot segments
    (f"https://gw.example.org/gateway{CALLBACK}", SHAPE),
    (f"https://gw.example.org/x/..{CALLBACK}", SHAPE),
    (f"https://gw.example.org/{CALLBACK}", SHAPE),
    (f"https://evil.example/?u=https://gw.example.org{CALLBACK}", SHAPE),
    (f"https://gw.example.org{CALLBACK}#top", f"{SHAPE}, without a query or fragment"),
    (f"https://gw.example.org{CALLBACK}#", f"{SHAPE}, without a query or fragment"),
    (f"https://gw.example.org{CALLBACK}?next=/admin", f"{SHAPE}, without a query or fragment"),
    (f"https://user:pw@gw.example.org{CALLBACK}", f"{SHAPE}, without user info"),
    (f"https://gw.example.org@evil.example{CALLBACK}", f"{SHAPE}, without user info"),
]


BAD_URL_SETTINGS = [
    ("auth.oidc_issuer", "http://idp.example.org", "must be an https:// URL"),
    ("auth.oidc_issuer", "https://[::1", "must be an https:// URL"),
    ("auth.oidc_issuer", "idp.example.org", "must be an https:// URL"),
    *(("auth.oidc_redirect_uri", uri, problem) for uri, problem in BAD_REDIRECT_URIS),
]


@pytest.mark.parametrize(("key", "value", "problem"), BAD_URL_SETTINGS)
async def test_a_bad_url_is_refused_when_saved_and_sign_in_keeps_working(
    client, kernel, admin, oidc_on, key, value, problem
):
    answer = await client.put(
        "/api/v1/settings",
        json={key: value, "auth.oidc_client_id": "someone-else"},
        headers=admin.headers,
    )
    assert answer.status_code == 400
    body = await answer.get_json()
    assert body["code"] == "invalid_input"
    assert body["error"].startswith(f"{key}: ") and problem in body["error"]
    for unchanged in (key, "auth.oidc_client_id"):
        assert kernel.settings.get(unchanged) == oidc_on[unchanged]
    # the provider is still reached: a 400 at save time, not a 502 at sign-in
    start = await client.get("/api/v1/auth/oidc/authorize")
    assert start.status_code == 200, await start.get_data(as_text=True)


@pytest.mark.parametrize(
    "uri",
    [
        "",
        f"https://gw.example.org{CALLBACK}",
        f"http://127.0.0.1:8080{CALLBACK}",
        f"https://[::1]:8443{CALLBACK}",
    ],
)
async def test_a_callback_url_is_saved(client, kernel, admin, oidc_on, uri):
    answer = await client.put(
        "/api/v1/settings", json={"auth.oidc_redirect_uri": uri}, headers=admin.headers
    )
    assert answer.status_code == 200, await answer.get_data(as_text=True)
    assert kernel.settings.get("auth.oidc_redirect_uri") == uri


async def test_a_saved_callback_url_is_the_one_the_provider_sees(
    client, admin, flow, oidc_provider, oidc_on
):
    """Saved through the API, as an admin does: the provider accepts it at sign-in and
    at the code exchange (it compares the redirect_uri both times)."""
    callback = f"https://gw.example.org:8443{CALLBACK}"
    registered = oidc_provider.register_client(callback)
    answer = await client.put(
        "/api/v1/settings",
        json={
            "auth.oidc_redirect_uri": callback,
            "auth.oidc_client_id": registered.client_id,
            "auth.oidc_client_secret": registered.client_secret,
        },
        headers=admin.headers,
    )
    assert answer.status_code == 200, await answer.get_data(as_text=True)
    oidc_provider.set_user("sub-pia", preferred_username="pia")
    url = await flow.start()
    assert flow.query(url)["redirect_uri"] == callback
    answer = await flow.callback(await flow.sign_in(url, "sub-pia"))
    assert answer.headers["Location"] == "/?sso=success"
