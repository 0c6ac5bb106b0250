"""The app shell: top bar, the insecure-key warning, the connection tree, search, tags."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from testsupport.gateway import ADMIN_PASSWORD

from .conftest import PHONE, Gateway, Screens, signed_in, wants_default_gateway

pytestmark = pytest.mark.peer("chromium")


@pytest.fixture
def gateway_env() -> dict[str, str]:
    """No key in the environment: the gateway keeps it beside the data (insecure_key)."""
    return {"HOSTGATE_ENCRYPTION_KEY": ""}


def post(gateway: Gateway, token: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = gateway.api("POST", path, token, json=body)
    assert response.status_code in {200, 201}, response.text
    return response.json()  # type: ignore[no-any-return]


@pytest.fixture
def tree(gateway: Gateway, admin_token: str) -> None:
    """Lab > Rack 2 with connections, one ungrouped, one shared by bob."""
    lab = post(gateway, admin_token, "/connections/groups", {"name": "Lab"})
    rack = post(
        gateway, admin_token, "/connections/groups", {"name": "Rack 2", "parentId": lab["id"]}
    )
    ssh = {"protocol": "ssh", "port": 22}
    post(
        gateway,
        admin_token,
        "/connections",
        {**ssh, "name": "web-1", "host": "10.0.0.5", "groupId": lab["id"], "tags": ["prod"]},
    )
    post(
        gateway,
        admin_token,
        "/connections",
        {**ssh, "name": "db-1", "host": "10.0.2.9", "groupId": rack["id"], "tags": ["prod", "db"]},
    )
    post(gateway, admin_token, "/connections", {**ssh, "name": "laptop", "host": "192.168.1.4"})
    post(
        gateway,
        admin_token,
        "/users",
        {"username": "bob", "password": ADMIN_PASSWORD, "role": "user"},
    )
    bob = httpx.post(
        f"{gateway.url}/api/v1/auth/login", json={"username": "bob", "password": ADMIN_PASSWORD}
    ).json()["token"]
    jump = post(
        gateway,
        bob,
        "/connections",
        {**ssh, "name": "jump", "host": "jump.example", "tags": ["eu"]},
    )
    shared = gateway.api(
        "PUT",
        f"/connections/{jump['id']}/shares",
        bob,
        json={"shares": [{"shareType": "user", "targetId": "admin"}]},
    )
    assert shared.status_code == 200, shared.text


def visible_connections(page: Any) -> list[str]:
    nav = page.get_by_role("navigation", name="Connections")
    return [link.inner_text().split("\n")[-1].strip() for link in nav.get_by_role("link").all()]


def test_tree_search_tags_and_shared(
    page: Any, gateway: Gateway, tree: None, screens: Screens, request: pytest.FixtureRequest
) -> None:
    assert not wants_default_gateway(request.node)  # its gateway is never started ahead
    signed_in(page, gateway)
    nav = page.get_by_role("navigation", name="Connections")
    for name in ("web-1", "db-1", "laptop", "jump"):
        expect(nav.get_by_role("link", name=name)).to_be_visible()
    expect(nav.get_by_role("heading", name="Shared with me")).to_be_visible()
    mine = nav.get_by_role("list", name="My connections")
    expect(mine.get_by_role("link", name="jump")).to_have_count(0)
    expect(
        nav.get_by_role("list", name="Shared with me").get_by_role("link", name="jump")
    ).to_be_visible()
    screens.check(page, "shell")

    search = page.get_by_label("Search connections")
    search.fill("10.0.2")  # by host
    # db-1, "New connection" and "Import from ssh_config"
    expect(nav.get_by_role("link")).to_have_count(3)
    expect(nav.get_by_role("link", name="db-1")).to_be_visible()
    search.fill("EU")  # by tag, any case
    expect(nav.get_by_role("link", name="jump")).to_be_visible()
    expect(nav.get_by_role("link", name="web-1")).to_have_count(0)
    search.fill("nothing like this")
    expect(nav.get_by_text("No connection matches.")).to_be_visible()
    search.fill("")

    chips = nav.get_by_role("group", name="Filter by tag")
    chips.get_by_role("button", name="prod").click()
    expect(chips.get_by_role("button", name="prod")).to_have_attribute("aria-pressed", "true")
    expect(nav.get_by_role("link", name="laptop")).to_have_count(0)
    expect(nav.get_by_role("link", name="web-1")).to_be_visible()
    chips.get_by_role("button", name="db").click()  # both tags
    expect(nav.get_by_role("link", name="web-1")).to_have_count(0)
    expect(nav.get_by_role("link", name="db-1")).to_be_visible()
    chips.get_by_role("button", name="db").click()
    chips.get_by_role("button", name="prod").click()

    lab = nav.get_by_role("button", name="Lab")
    expect(lab).to_have_attribute("aria-expanded", "true")
    lab.click()
    expect(lab).to_have_attribute("aria-expanded", "false")
    expect(nav.get_by_role("link", name="web-1")).to_have_count(0)
    expect(nav.get_by_role("link", name="db-1")).to_have_count(0)
    lab.click()
    expect(nav.get_by_role("link", name="db-1")).to_be_visible()


def test_insecure_key_warning_is_dismissed_for_good(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    signed_in(page, gateway)
    warning = page.get_by_role("status").filter(
        has_text="The encryption key is stored next to the data."
    )
    expect(warning).to_be_visible()
    screens.check(page, "shell-warning")
    # what to do is a link (to the System screen's key card), not "see the admin guide"
    expect(warning).not_to_contain_text("admin guide")
    warning.get_by_role("link", name="How to supply the key apart from the data").click()
    expect(page).to_have_url(f"{gateway.url}/admin/system#encryption-key")
    expect(page.get_by_role("region", name="Encryption key")).to_contain_text(
        "HOSTGATE_ENCRYPTION_KEY"
    )
    page.go_back()
    page.get_by_role("button", name="Dismiss warning").click()
    expect(warning).to_have_count(0)
    me = gateway.api("GET", "/auth/me", admin_token).json()["user"]
    assert me["dismissedWarnings"] == ["insecure_key"]
    page.reload()
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()
    expect(warning).to_have_count(0)


def test_the_key_warning_is_only_for_those_who_can_act_on_it(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    public = httpx.get(f"{gateway.url}/api/v1/settings/public").json()["settings"]
    assert public["system.insecure_key"] is True  # the instance does have the problem
    post(gateway, admin_token, "/users", {"username": "bob", "password": ADMIN_PASSWORD})
    signed_in(page, gateway, "bob")
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()
    expect(page.get_by_text("The encryption key is stored next to the data.")).to_have_count(0)
    expect(page.get_by_role("button", name="Dismiss warning")).to_have_count(0)
    screens.check(page, "shell-user-no-warning")


def test_top_bar_and_phone_layout(
    page: Any, gateway: Gateway, admin_token: str, tree: None
) -> None:
    gateway.set_settings(admin_token, app__name="Acme Gateway")
    signed_in(page, gateway)
    expect(page.get_by_role("link", name="Acme Gateway")).to_be_visible()
    assert page.title() == "Acme Gateway"
    page.set_viewport_size(PHONE)
    nav = page.get_by_role("navigation", name="Connections")
    expect(nav).to_be_hidden()
    toggle = page.get_by_role("button", name="Connections")
    toggle.click()
    expect(nav).to_be_visible()
    nav.get_by_role("link", name="laptop").click()  # choosing one closes the drawer
    expect(page.get_by_role("heading", name="laptop")).to_be_visible()
    expect(nav).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
