"""authlib is imported when a flow first needs it, not when the app starts."""

from __future__ import annotations

from testsupport.lazyimports import loaded_after_start

AUTHORIZE = """
from hostgate_oidc.provider import OidcClient, OidcSettings, ProviderMetadata
metadata = ProviderMetadata(
    issuer="https://idp.example", authorization_endpoint="https://idp.example/auth",
    token_endpoint="https://idp.example/token", jwks_uri="https://idp.example/jwks",
    userinfo_endpoint="", algorithms=("RS256",),
)
client = OidcClient(OidcSettings(issuer="https://idp.example", client_id="c", client_secret=""), {})
request = client.login_request(metadata, "https://gw.example/cb", "s", "n", "v" * 43)
assert "code_challenge=" in request.url
"""


def test_starting_an_app_with_the_pack_does_not_import_authlib(template_db, tmp_path):
    loaded = loaded_after_start("hostgate_oidc.plugin", template_db, tmp_path, then=AUTHORIZE)
    assert "hostgate_oidc" in loaded.started
    assert "authlib" not in loaded.started
    assert "authlib" in loaded.then  # the authorize step loads it
