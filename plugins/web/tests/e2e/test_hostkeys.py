"""SSH host-key trust in the browser: the first-use and changed-key prompts, against a real
OpenSSH sshd whose host key is replaced between sessions; accept and forget."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from testsupport.gateway import ADMIN_PASSWORD
from testsupport.sshd import SshdServer, private_sshd  # noqa: F401 - the fixture

from .conftest import Gateway, Screens, server_connection, signed_in

pytestmark = pytest.mark.peer("chromium")


def keys(gateway: Gateway, token: str, connection_id: str) -> dict[str, Any]:
    response = gateway.api("GET", f"/connections/{connection_id}/host-key", token)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def fingerprint(key: dict[str, Any] | None) -> str | None:
    return None if key is None else str(key["fingerprint"])


def test_terminal_asks_on_first_use_and_on_a_changed_key(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    private_sshd: SshdServer,  # noqa: F811
    screens: Screens,
) -> None:
    connection_id = server_connection(gateway, admin_token, private_sshd, name="lab", trust=False)
    first = private_sshd.host_key_fingerprint
    signed_in(page, gateway)
    page.goto(f"{gateway.url}/connections/{connection_id}")
    open_terminal = page.get_by_role("button", name="Open terminal")
    tabs = page.get_by_role("navigation", name="Open terminals")

    # first use: the fingerprint, before any session; Cancel opens nothing, trusts nothing
    open_terminal.click()
    prompt = page.get_by_role("dialog", name="New host key for lab")
    expect(prompt).to_be_visible()
    expect(prompt.get_by_test_id("presented-fingerprint")).to_have_text(first)
    expect(prompt).to_contain_text("ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub")
    screens.check(page, "hostkey-new")
    prompt.get_by_role("button", name="Cancel").click()
    expect(prompt).to_be_hidden()
    expect(tabs).to_have_count(0)
    assert fingerprint(keys(gateway, admin_token, connection_id)["trusted"]) is None
    assert not [s for s in gateway.api("GET", "/sessions", admin_token).json()["sessions"]]

    # accepted: the gateway trusts exactly that key, and the terminal opens
    open_terminal.click()
    prompt.get_by_role("button", name="Trust this key and connect").click()
    tab = page.get_by_role("region", name="Terminal lab")
    expect(tab.get_by_role("status")).to_have_text("Connected", timeout=30_000)
    stored = keys(gateway, admin_token, connection_id)
    assert (fingerprint(stored["trusted"]), stored["pending"]) == (first, None)
    assert "connection.host_key_accepted" in gateway.audit_types(admin_token)
    tabs.get_by_role("button", name="Close lab").click()

    # the server is re-keyed: both fingerprints, a warning, and nothing opens until accepted
    second = private_sshd.restart_with_new_host_key()
    page.goto(f"{gateway.url}/connections/{connection_id}")
    open_terminal.click()
    changed = page.get_by_role("alertdialog", name="The host key of lab has changed")
    expect(changed).to_be_visible()
    expect(changed).to_contain_text(first)
    expect(changed.get_by_test_id("presented-fingerprint")).to_have_text(second)
    screens.check(page, "hostkey-changed")
    changed.get_by_role("button", name="Cancel").click()
    expect(tabs).to_have_count(0)
    stored = keys(gateway, admin_token, connection_id)
    assert (fingerprint(stored["trusted"]), fingerprint(stored["pending"])) == (first, second)

    # the connection's page shows the waiting key; the prompt accepts it
    card = page.get_by_role("region", name="Host key")
    expect(card).to_contain_text(second)
    open_terminal.click()
    changed.get_by_role("button", name="Accept the new key and connect").click()
    expect(tab.get_by_role("status")).to_have_text("Connected", timeout=30_000)
    assert fingerprint(keys(gateway, admin_token, connection_id)["trusted"]) == second
    tabs.get_by_role("button", name="Close lab").click()

    # forget: confirmed, then nothing is remembered
    page.goto(f"{gateway.url}/connections/{connection_id}")
    expect(card).to_contain_text(second)
    screens.check(page, "connection-hostkey")
    card.get_by_role("button", name="Forget host keys").click()
    page.get_by_role("dialog", name="Forget the host keys of lab?").get_by_role(
        "button", name="Forget host keys"
    ).click()
    expect(card).to_contain_text("None yet")
    assert keys(gateway, admin_token, connection_id) == {"trusted": None, "pending": None}


def test_files_of_a_shared_connection_stop_at_a_changed_key(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    private_sshd: SshdServer,  # noqa: F811
    screens: Screens,
) -> None:
    connection_id = server_connection(
        gateway, admin_token, private_sshd, name="lab", protocol="sftp", trust=False
    )
    first = gateway.trust_host_key(admin_token, connection_id)
    created = gateway.api(
        "POST", "/users", admin_token, json={"username": "bob", "password": ADMIN_PASSWORD}
    )
    assert created.status_code == 201, created.text
    shared = gateway.api(
        "PUT",
        f"/connections/{connection_id}/shares",
        admin_token,
        json={"shares": [{"shareType": "user", "targetId": "bob"}]},
    )
    assert shared.status_code == 200, shared.text
    second = private_sshd.restart_with_new_host_key()

    # bob may use the connection, not edit it: he sees why, and cannot accept
    signed_in(page, gateway, "bob")
    page.goto(f"{gateway.url}/connections/{connection_id}/files")
    changed = page.get_by_role("alertdialog", name="The host key of lab has changed")
    expect(changed.get_by_test_id("presented-fingerprint")).to_have_text(second)
    expect(changed).to_contain_text("Only someone who may edit this connection")
    expect(changed.get_by_role("button", name="Accept the new key and connect")).to_have_count(0)
    screens.check(page, "hostkey-changed-shared")
    changed.get_by_role("button", name="Close").click()
    expect(page.get_by_text("Not connected: the host key of lab was not trusted.")).to_be_visible()
    expect(page.get_by_role("table")).to_have_count(0)
    stored = keys(gateway, admin_token, connection_id)
    assert (fingerprint(stored["trusted"]), fingerprint(stored["pending"])) == (first, second)
    bob = httpx.post(
        f"{gateway.url}/api/v1/auth/login", json={"username": "bob", "password": ADMIN_PASSWORD}
    ).json()["token"]
    refused = gateway.api("POST", f"/connections/{connection_id}/host-key/accept", bob, json={})
    assert refused.status_code == 403

    # once the owner accepts it, bob's files open without a question
    accepted = gateway.api(
        "POST",
        f"/connections/{connection_id}/host-key/accept",
        admin_token,
        json={"fingerprint": second},
    )
    assert accepted.status_code == 200, accepted.text
    page.reload()
    expect(page.get_by_role("table")).to_be_visible()
    expect(page.get_by_role("dialog")).to_have_count(0)


def test_a_tabs_reconnect_asks_about_a_first_key_too(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    private_sshd: SshdServer,  # noqa: F811
    screens: Screens,
) -> None:
    connection_id = server_connection(gateway, admin_token, private_sshd, name="lab")
    signed_in(page, gateway)
    page.goto(f"{gateway.url}/connections/{connection_id}")
    page.get_by_role("button", name="Open terminal").click()
    tab = page.get_by_role("region", name="Terminal lab")
    expect(tab.get_by_role("status")).to_have_text("Connected", timeout=30_000)

    # the owner forgets the key and the server is re-keyed while the tab is open; the
    # session ends: Reconnect is a first use again, and must ask, not trust silently
    forgotten = gateway.api("DELETE", f"/connections/{connection_id}/host-key", admin_token)
    assert forgotten.status_code == 200, forgotten.text
    second = private_sshd.restart_with_new_host_key()
    [live] = gateway.api("GET", "/sessions/active", admin_token).json()["sessions"]
    ended = gateway.api("DELETE", f"/sessions/active/{live['id']}", admin_token)
    assert ended.status_code == 200, ended.text
    reconnect = tab.get_by_role("button", name="Reconnect")
    reconnect.click()
    prompt = page.get_by_role("dialog", name="New host key for lab")
    expect(prompt.get_by_test_id("presented-fingerprint")).to_have_text(second)
    expect(prompt).to_contain_text(f"{private_sshd.host}:{private_sshd.port}")
    screens.check(page, "hostkey-reconnect")
    prompt.get_by_role("button", name="Cancel").click()
    expect(tab.get_by_role("alert")).to_contain_text("the host key of lab was not trusted")
    assert keys(gateway, admin_token, connection_id)["trusted"] is None
    assert len(gateway.api("GET", "/sessions/active", admin_token).json()["sessions"]) == 0

    # trusted from the prompt: exactly that key, and the tab connects again
    reconnect.click()
    prompt.get_by_role("button", name="Trust this key and connect").click()
    expect(tab.get_by_role("status")).to_have_text("Connected", timeout=30_000)
    assert fingerprint(keys(gateway, admin_token, connection_id)["trusted"]) == second
    assert "connection.host_key_trusted" not in gateway.audit_types(admin_token)


def test_a_shared_user_sees_a_first_key_but_its_owner_trusts_it(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    private_sshd: SshdServer,  # noqa: F811
    screens: Screens,
) -> None:
    connection_id = server_connection(gateway, admin_token, private_sshd, name="lab", trust=False)
    created = gateway.api(
        "POST", "/users", admin_token, json={"username": "bob", "password": ADMIN_PASSWORD}
    )
    assert created.status_code == 201, created.text
    shared = gateway.api(
        "PUT",
        f"/connections/{connection_id}/shares",
        admin_token,
        json={"shares": [{"shareType": "user", "targetId": "bob"}]},
    )
    assert shared.status_code == 200, shared.text

    # bob may use the connection, not edit it: he sees the key, is told the owner must
    # trust it, and has no button that would decide it for everyone
    signed_in(page, gateway, "bob")
    page.goto(f"{gateway.url}/connections/{connection_id}")
    page.get_by_role("button", name="Open terminal").click()
    prompt = page.get_by_role("dialog", name="New host key for lab")
    expect(prompt.get_by_test_id("presented-fingerprint")).to_have_text(
        private_sshd.host_key_fingerprint
    )
    expect(prompt).to_contain_text("Its owner must trust this key before you connect")
    expect(prompt.get_by_role("button", name="Trust this key and connect")).to_have_count(0)
    expect(prompt.get_by_role("button", name=re.compile("Accept|Trust"))).to_have_count(0)
    screens.check(page, "hostkey-new-shared")
    prompt.get_by_role("button", name="Close").click()
    expect(page.get_by_role("navigation", name="Open terminals")).to_have_count(0)
    assert keys(gateway, admin_token, connection_id)["trusted"] is None

    # nor through the API: a clear 403, the key still visible to him
    bob = httpx.post(
        f"{gateway.url}/api/v1/auth/login", json={"username": "bob", "password": ADMIN_PASSWORD}
    ).json()["token"]
    refused = gateway.api(
        "POST",
        f"/connections/{connection_id}/host-key/accept",
        bob,
        json={"fingerprint": private_sshd.host_key_fingerprint},
    )
    assert refused.status_code == 403
    assert refused.json()["code"] == "host_key_edit_required"
    pending = keys(gateway, bob, connection_id)["pending"]
    assert fingerprint(pending) == private_sshd.host_key_fingerprint

    # once the owner trusts it, bob's terminal opens without a question
    gateway.trust_host_key(admin_token, connection_id)
    page.get_by_role("button", name="Open terminal").click()
    tab = page.get_by_role("region", name="Terminal lab")
    expect(tab.get_by_role("status")).to_have_text("Connected", timeout=30_000)
    expect(page.get_by_role("dialog")).to_have_count(0)
