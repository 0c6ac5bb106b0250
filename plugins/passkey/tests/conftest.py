from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
from hostgate_passkey import plugin
from soft_webauthn import SoftWebauthnDevice

RP_ID = "gateway.example.org"
ORIGIN = "https://gateway.example.org"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Authenticator:
    """A software authenticator doing real attestation and assertion (soft-webauthn)."""

    def __init__(self) -> None:
        self.device = SoftWebauthnDevice()

    def create(self, options: dict[str, Any], origin: str = ORIGIN) -> dict[str, Any]:
        public_key = copy.deepcopy(options)
        public_key["challenge"] = unb64url(options["challenge"])
        public_key["user"]["id"] = unb64url(options["user"]["id"])
        made = self.device.create({"publicKey": public_key}, origin)
        return {
            "id": b64url(made["rawId"]),
            "rawId": b64url(made["rawId"]),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(made["response"]["clientDataJSON"]),
                "attestationObject": b64url(made["response"]["attestationObject"]),
                "transports": ["internal"],
            },
            "clientExtensionResults": {},
        }

    def get(self, options: dict[str, Any], origin: str = ORIGIN) -> dict[str, Any]:
        public_key = copy.deepcopy(options)
        public_key["challenge"] = unb64url(options["challenge"])
        made = self.device.get({"publicKey": public_key}, origin)
        handle = made["response"]["userHandle"]
        return {
            "id": b64url(made["rawId"]),
            "rawId": b64url(made["rawId"]),
            "type": "public-key",
            "response": {
                "authenticatorData": b64url(made["response"]["authenticatorData"]),
                "clientDataJSON": b64url(made["response"]["clientDataJSON"]),
                "signature": b64url(made["response"]["signature"]),
                "userHandle": b64url(handle) if handle else None,
            },
            "clientExtensionResults": {},
        }

    def clone(self) -> Authenticator:
        """A second device holding the same credential and key (a cloned authenticator)."""
        twin = Authenticator()
        for name, value in vars(self.device).items():
            setattr(twin.device, name, value)
        return twin


@pytest.fixture
def plugins() -> list[object]:
    return [plugin]


@pytest.fixture
async def passkeys_on(kernel: Any) -> None:
    await kernel.settings.update(
        {"security.passkey_rp_id": RP_ID, "security.passkey_origin": ORIGIN}
    )


@pytest.fixture
def authenticator() -> Authenticator:
    return Authenticator()


@pytest.fixture
def new_authenticator() -> type[Authenticator]:
    return Authenticator


class Passkeys:
    """Drives the routes like the web UI does."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def register(
        self, user: Any, device: Authenticator, name: str = "My key", origin: str = ORIGIN
    ) -> Any:
        start = await self.client.post(
            "/api/v1/profile/passkeys/register/options", headers=user.headers
        )
        assert start.status_code == 200, await start.get_data(as_text=True)
        body = await start.get_json()
        response = device.create(body["options"], origin)
        return await self.client.post(
            "/api/v1/profile/passkeys/register/verify",
            json={"challengeId": body["challengeId"], "response": response, "name": name},
            headers=user.headers,
        )

    async def options(self, username: str | None = None) -> dict[str, Any]:
        payload = {"username": username} if username else {}
        answer = await self.client.post("/api/v1/auth/login/passkey/options", json=payload)
        assert answer.status_code == 200, await answer.get_data(as_text=True)
        return await answer.get_json()  # type: ignore[no-any-return]

    async def login(
        self, device: Authenticator, username: str | None = None, origin: str = ORIGIN
    ) -> Any:
        body = await self.options(username)
        response = device.get(body["options"], origin)
        return await self.verify(body["challengeId"], response)

    async def verify(self, challenge_id: str, response: dict[str, Any]) -> Any:
        return await self.client.post(
            "/api/v1/auth/login/passkey",
            json={"challengeId": challenge_id, "response": response},
        )


@pytest.fixture
def passkeys(client: Any) -> Passkeys:
    return Passkeys(client)
