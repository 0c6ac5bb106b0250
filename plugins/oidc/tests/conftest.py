from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from hostgate_oidc import plugin

from testsupport.oidc import (  # noqa: F401
    OidcProvider,
    RegisteredClient,
    issuer_relay,
    oidc_provider,
)

REDIRECT_URI = "https://hostgate.test/api/v1/auth/oidc/callback"


@pytest.fixture
def plugins() -> list[object]:
    return [plugin]


@pytest.fixture(scope="session")
def registration(oidc_provider: OidcProvider) -> RegisteredClient:  # noqa: F811
    return oidc_provider.register_client(REDIRECT_URI)


@pytest.fixture
def oidc_config(oidc_provider: OidcProvider, registration: RegisteredClient) -> dict[str, Any]:  # noqa: F811
    return {
        "auth.oidc_enabled": True,
        "auth.oidc_issuer": oidc_provider.issuer,
        "auth.oidc_client_id": registration.client_id,
        "auth.oidc_client_secret": registration.client_secret,
        "auth.oidc_redirect_uri": REDIRECT_URI,
        "auth.oidc_ca_cert": oidc_provider.ca_pem,
    }


@pytest.fixture
async def oidc_on(kernel: Any, oidc_config: dict[str, Any]) -> dict[str, Any]:
    await kernel.settings.update(oidc_config)
    return oidc_config


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


class Flow:
    """The browser's part of a login: hostgate -> provider -> hostgate."""

    def __init__(self, client: Any, provider: OidcProvider) -> None:  # noqa: F811
        self.client = client
        self.provider = provider

    @staticmethod
    def query(url: str) -> dict[str, str]:
        return query_of(url)

    async def start(self) -> str:
        answer = await self.client.get("/api/v1/auth/oidc/authorize")
        assert answer.status_code == 200, await answer.get_data(as_text=True)
        return str((await answer.get_json())["url"])

    async def sign_in(self, url: str, sub: str) -> dict[str, str]:
        return await asyncio.to_thread(self.provider.sign_in, url, sub)

    async def callback(self, params: dict[str, str], client: Any = None) -> Any:
        return await (client or self.client).get("/api/v1/auth/oidc/callback", query_string=params)

    async def login(self, sub: str) -> Any:
        return await self.callback(await self.sign_in(await self.start(), sub))

    @staticmethod
    def sso_error(answer: Any) -> str:
        """The message of a callback's ``/?sso_error=...`` redirect (asserts it is one)."""
        assert answer.status_code == 302
        location = answer.headers["Location"]
        assert location.startswith("/?sso_error="), location
        return unquote(location.split("=", 1)[1])


@pytest.fixture
def flow(client: Any, oidc_provider: OidcProvider) -> Flow:  # noqa: F811
    return Flow(client, oidc_provider)
