"""Connections: create, edit, delete with each protocol's declared fields; secrets write-only."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.gateway import ADMIN_PASSWORD

from .conftest import Gateway, Screens, signed_in

pytestmark = pytest.mark.peer("chromium")

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot a real key\n-----END OPENSSH PRIVATE KEY-----"


def stored(gateway: Gateway, token: str, name: str) -> dict[str, Any]:
    """The connection named ``name`` as the API shows it to its owner."""
    listing = gateway.api("GET", "/connections", token).json()
    everything = [*listing["ungrouped"], *listing["sharedConnections"]]
    stack = list(listing["groups"])
    while stack:
        group = stack.pop()
        everything += group["connections"]
        stack += group["children"]
    found = next(c for c in everything if c["name"] == name)
    return gateway.api("GET", f"/connections/{found['id']}", token).json()  # type: ignore[no-any-return]


def test_create_edit_delete_with_write_only_secrets(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    signed_in(page, gateway)
    page.get_by_role("link", name="New connection").click()
    expect(page.get_by_role("heading", name="New connection")).to_be_visible()
    expect(page.get_by_label("Protocol")).to_have_value("ssh")
    # the ssh pack's own fields, read from GET /protocols
    expect(page.get_by_label("Passphrase of the private key")).to_be_visible()
    expect(
        page.get_by_label("The browser sends the password when a terminal opens")
    ).not_to_be_checked()
    # the SSH front door forwards ports only where the connection allows it: off by default
    expect(page.get_by_label("Users may open ssh -L tunnels")).not_to_be_checked()

    page.get_by_role("button", name="Create connection").click()
    expect(page.get_by_text("Enter a name.")).to_be_visible()
    expect(page.get_by_text("Enter a host name or IP address.")).to_be_visible()

    page.get_by_label("Name", exact=True).fill("web-1")
    page.get_by_label("Host", exact=True).fill("ssh://box")  # the server refuses it, in words
    page.get_by_role("button", name="Create connection").click()
    expect(page.get_by_role("alert")).to_contain_text("host")
    assert gateway.api("GET", "/connections", admin_token).json()["ungrouped"] == []

    page.get_by_label("Host", exact=True).fill("10.0.0.5")
    page.get_by_label("Port").fill("2222")
    page.get_by_label("Username").fill("deploy")
    page.get_by_label("Password", exact=True).fill("first s3cret")
    page.get_by_label("Private key", exact=True).fill(KEY)
    page.get_by_label("Passphrase of the private key").fill("pass s3cret")
    page.get_by_label("Tags").fill("prod, EU")
    screens.check(page, "connection-form")
    page.get_by_role("button", name="Create connection").click()

    expect(page.get_by_role("heading", name="web-1")).to_be_visible()
    expect(page.get_by_text("passphrase, password, private key (set, never shown)")).to_be_visible()
    screens.check(page, "connection-view")
    server = stored(gateway, admin_token, "web-1")
    assert (server["host"], server["port"], server["username"], server["tags"]) == (
        "10.0.0.5", 2222, "deploy", ["prod", "eu"]
    )  # fmt: skip
    assert server["hasPassword"] and server["hasPrivateKey"] and server["hasPassphrase"]
    assert server["extraConfig"] == {"promptOnConnect": False, "allowPortForwarding": False}
    assert "s3cret" not in page.content()

    # edit: secrets show as "set"; replace the password, remove the key, keep the passphrase
    page.get_by_role("link", name="Edit").click()
    expect(page.get_by_role("heading", name="Edit web-1")).to_be_visible()
    password = page.get_by_role("textbox", name="Password", exact=True)
    expect(password).to_have_count(0)  # no field holding the secret, only "set"
    expect(page.get_by_role("group", name="Password")).to_contain_text("set")
    page.get_by_role("button", name="Replace password").click()
    password.fill("second s3cret")
    page.get_by_role("button", name="Remove private key").click()
    expect(page.get_by_text("will be removed")).to_be_visible()
    screens.check(page, "connection-edit")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_text("passphrase, password (set, never shown)")).to_be_visible()

    server = stored(gateway, admin_token, "web-1")
    assert server["hasPassword"] and server["hasPassphrase"] and not server["hasPrivateKey"]
    session = gateway.api("GET", f"/connections/{server['id']}/session", admin_token).json()
    assert session["password"] == "second s3cret"

    # delete, confirmed in a dialog
    page.get_by_role("button", name="Delete").click()
    dialog = page.get_by_role("dialog", name="Delete web-1?")
    expect(dialog).to_be_visible()
    screens.check(page, "connection-delete")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    assert gateway.api("GET", f"/connections/{server['id']}", admin_token).status_code == 200
    page.get_by_role("button", name="Delete").click()
    dialog.get_by_role("button", name="Delete connection").click()
    expect(page.get_by_role("heading", name="No connections yet")).to_be_visible()
    assert gateway.api("GET", f"/connections/{server['id']}", admin_token).status_code == 404


def test_the_form_follows_each_protocols_declared_fields(
    page: Any, gateway: Gateway, admin_token: str
) -> None:
    protocols = gateway.api("GET", "/protocols", admin_token).json()["protocols"]
    smb = next(p for p in protocols if p["name"] == "smb")
    signed_in(page, gateway)
    page.goto(gateway.url + "/connections/new")  # a deep link
    page.get_by_label("Protocol").select_option("smb")
    for field in smb["fields"]:
        expect(page.get_by_label(field["name"], exact=True)).to_be_visible()
    expect(page.get_by_label("Port")).to_have_attribute("placeholder", str(smb["defaultPort"]))
    expect(page.get_by_label("Passphrase of the private key")).to_have_count(0)

    page.get_by_label("Name", exact=True).fill("files")
    page.get_by_label("Host", exact=True).fill("nas.local")
    page.get_by_label("share", exact=True).fill("public")
    page.get_by_label("domain", exact=True).fill("CORP")
    page.get_by_role("button", name="Create connection").click()
    expect(page.get_by_role("heading", name="files")).to_be_visible()
    server = stored(gateway, admin_token, "files")
    assert server["protocol"] == "smb"
    assert server["extraConfig"] == {"share": "public", "domain": "CORP"}


def test_the_approval_switch_gates_a_connection_for_a_second_user(
    page: Any, browser: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    made = gateway.api(
        "POST", "/users", admin_token,
        json={"username": "gina", "password": ADMIN_PASSWORD, "role": "user"},
    )  # fmt: skip
    assert made.status_code == 201, made.text
    signed_in(page, gateway)
    page.get_by_role("link", name="New connection").click()
    page.get_by_label("Name", exact=True).fill("gated-db")
    page.get_by_label("Host", exact=True).fill("127.0.0.1")
    switch = page.get_by_label("Require an approved access request")
    expect(switch).not_to_be_checked()
    switch.check()
    screens.check(page, "connection-form-approval")
    page.get_by_role("button", name="Create connection").click()
    expect(page.get_by_role("heading", name="gated-db")).to_be_visible()
    # the owner's page says the connection is gated
    expect(page.get_by_test_id("approval-gate")).to_contain_text("Needs an approved access request")
    screens.check(page, "connection-gated-owner")
    connection = stored(gateway, admin_token, "gated-db")
    assert connection["approvalRequired"] is True
    shared = gateway.api(
        "PUT", f"/connections/{connection['id']}/shares", admin_token,
        json={"shares": [{"shareType": "user", "targetId": "gina"}]},
    )  # fmt: skip
    assert shared.status_code == 200, shared.text

    # the second user is refused and told to ask for access
    gina = gateway.login("gina")
    scan = gateway.api("POST", f"/connections/{connection['id']}/host-key/scan", gina)
    assert scan.status_code == 403, scan.text
    assert scan.json()["code"] == "access_approval_required"
    other = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-GB")
    try:
        second = other.new_page()
        second.set_default_timeout(15_000)
        signed_in(second, gateway, "gina")
        second.goto(f"{gateway.url}/connections/{connection['id']}")
        expect(second.get_by_role("region", name="Needs approval")).to_be_visible()
        expect(second.get_by_role("button", name="Open terminal")).to_have_count(0)
    finally:
        other.close()

    # unticking the switch on edit lifts the gate
    page.get_by_role("link", name="Edit").click()
    expect(switch).to_be_checked()
    switch.uncheck()
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("heading", name="gated-db")).to_be_visible()
    expect(page.get_by_test_id("approval-gate")).to_have_count(0)
    assert stored(gateway, admin_token, "gated-db")["approvalRequired"] is False


def test_check_now_says_the_network_policy_refused_the_target(
    page: Any, gateway: Gateway, admin_token: str
) -> None:
    body = {"name": "walled", "protocol": "ssh", "host": "127.0.0.1", "port": 9}
    made = gateway.api("POST", "/connections", admin_token, json=body)
    assert made.status_code == 201, made.text
    before = gateway.api("GET", "/settings", admin_token).json()["settings"]["network.deny"]
    gateway.set_settings(admin_token, network__deny="127.0.0.1")
    try:
        signed_in(page, gateway)
        page.goto(f"{gateway.url}/connections/{made.json()['id']}")
        page.get_by_role("button", name="Check now").click()
        status = page.get_by_role("status").filter(has_text="network policy")
        expect(status).to_have_text(
            "The gateway's network policy refused this target, so it was not contacted"
        )
        expect(page.get_by_text("No answer from the host")).to_have_count(0)
    finally:
        gateway.set_settings(admin_token, network__deny=before)
