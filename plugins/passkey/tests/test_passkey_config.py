"""The relying party can come from the config file's [plugins.passkey] table."""

from __future__ import annotations

import pytest
from hostgate.config import Config


@pytest.fixture
def config(config: Config) -> Config:
    return config.with_overrides(
        plugin_options={"passkey": {"rp_id": "hg.example.com", "origin": "https://hg.example.com"}}
    )


async def test_config_file_relying_party(client, kernel, make_user, passkeys, authenticator):
    tina = await make_user("tina")
    start = await (
        await client.post("/api/v1/profile/passkeys/register/options", headers=tina.headers)
    ).get_json()
    assert start["options"]["rp"]["id"] == "hg.example.com"
    origin = "https://hg.example.com"
    assert (await passkeys.register(tina, authenticator, origin=origin)).status_code == 200
    assert (await passkeys.login(authenticator, "tina", origin=origin)).status_code == 200
    # Settings win over the config file.
    await kernel.settings.update(
        {
            "security.passkey_rp_id": "other.example.com",
            "security.passkey_origin": "https://other.example.com",
        }
    )
    options = await passkeys.options("tina")
    assert options["options"]["rpId"] == "other.example.com"
