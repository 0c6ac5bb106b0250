"""Without the sshd pack (its routes answer 404) the browser shows no SSH keys card and no
admin action; with the pack but the door off, keys can be kept but no connection page
offers an ssh command."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from .conftest import Gateway

pytestmark = pytest.mark.peer("chromium")


@pytest.fixture(params=["pack-disabled", "door-off"])
def gateway_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The sshd pack disabled, or installed with its listener off."""
    if request.param == "pack-disabled":
        return {"HOSTGATE_DISABLE_PLUGINS": "sshd"}
    return {"HOSTGATE_SSHD_LISTEN": "off"}


def test_no_ssh_command_without_a_listening_door(
    page: Any, gateway: Gateway, admin_token: str, lab_ssh: str, gateway_env: dict[str, str]
) -> None:
    installed = "HOSTGATE_DISABLE_PLUGINS" not in gateway_env
    answer = gateway.api("GET", "/sshd/host-keys", admin_token)
    assert answer.status_code == (200 if installed else 404)
    if installed:
        assert answer.json()["listening"] is False

    page.goto(f"{gateway.url}/connections/{lab_ssh}")
    expect(page.get_by_role("region", name="Host key")).to_be_visible()
    expect(page.get_by_role("button", name="Open terminal")).to_be_visible()
    expect(page.get_by_role("region", name="Connect with ssh")).to_have_count(0)

    page.goto(f"{gateway.url}/profile")
    # the profile's cards show once the pack's presence is known
    expect(page.get_by_role("region", name="API tokens")).to_be_visible()
    keys_card = page.get_by_role("region", name="SSH keys")
    if installed:
        expect(keys_card.get_by_text("You have no SSH keys.")).to_be_visible()
    else:
        expect(keys_card).to_have_count(0)

    page.goto(f"{gateway.url}/admin/users")
    page.get_by_label("Actions for admin").click()
    expect(page.get_by_role("button", name="Edit", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="SSH keys", exact=True)).to_have_count(
        1 if installed else 0
    )
