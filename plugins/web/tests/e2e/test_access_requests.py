"""Access requests in the browser: a user asks for a connection that needs approval, an
approver (another browser) sees it arrive (a count on the account menu) and approves it,
the user's page changes without a reload and the terminal opens; the approver ends it,
the user's page and terminal follow at once, and the terminal offers no Reconnect; nor
does a desktop whose access ended."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from testsupport.gateway import ADMIN_PASSWORD
from testsupport.sshd import SshdServer, sshd  # noqa: F401 - the fixture
from testsupport.xvnc import TEST_PASSWORD, XvncServer, xvnc  # noqa: F401 - the fixture

from .conftest import AXE_SOURCE, Gateway, Screens, signed_in

pytestmark = pytest.mark.peer("chromium")


def test_ask_approve_use_and_end_an_access(
    page: Any,
    browser: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
    screens: Screens,
) -> None:
    made = gateway.api(
        "POST", "/users", admin_token,
        json={"username": "rita", "password": ADMIN_PASSWORD, "role": "user"},
    )  # fmt: skip
    assert made.status_code == 201, made.text
    body = {
        "name": "prod-db", "protocol": "ssh", "host": sshd.host, "port": sshd.port,
        "username": sshd.username, "password": sshd.password, "shared": True,
        "approvalRequired": True,
    }  # fmt: skip
    response = gateway.api("POST", "/connections", admin_token, json=body)
    assert response.status_code == 201, response.text
    connection_id = str(response.json()["id"])
    gateway.trust_host_key(admin_token, connection_id)

    approver_context = browser.new_context(
        viewport={"width": 1280, "height": 800}, color_scheme="light", locale="en-GB"
    )
    approver_context.add_init_script(path=AXE_SOURCE)
    try:
        admin = approver_context.new_page()
        admin.set_default_timeout(15_000)
        signed_in(admin, gateway)
        menu = admin.get_by_role("button", name="account menu")
        expect(menu).not_to_contain_text("waiting")

        signed_in(page, gateway, "rita")
        page.goto(f"{gateway.url}/connections/{connection_id}")
        card = page.get_by_role("region", name="Needs approval")
        expect(page.get_by_role("button", name="Open terminal")).to_have_count(0)
        card.get_by_label("For").select_option(label="1 hour")
        card.get_by_label("Reason").fill("INC-7 disk full")
        card.get_by_role("button", name="Request access").click()
        expect(card.get_by_role("status")).to_contain_text("waiting for an approver")
        screens.check(page, "access-request-waiting")

        # the approver's open page shows the request at once (the live channel)
        expect(menu).to_have_accessible_name(re.compile(r"account menu \(1 waiting\)$"))
        screens.check(admin, "access-requests-badge")
        menu.click()
        admin.get_by_role("link", name="Access requests").click()
        waiting = admin.get_by_role("list", name="Waiting requests")
        expect(waiting).to_contain_text("INC-7 disk full")
        screens.check(admin, "access-requests")
        waiting.get_by_role("button", name="Approve rita on prod-db").click()
        expect(admin.get_by_role("list", name="Running accesses")).to_contain_text("rita")
        expect(menu).not_to_contain_text("waiting")

        # the requester's page changes without a reload, and says until when
        expect(card.get_by_role("status")).to_contain_text("Approved until")
        screens.check(page, "access-request-approved", scroll_to=card)
        page.get_by_role("button", name="Open terminal").click()
        tab = page.get_by_role("region", name="Terminal prod-db")
        expect(tab.get_by_role("status")).to_have_text("Connected", timeout=30_000)
        page.go_back()  # the connection's page; the terminal stays open in its tab
        expect(card.get_by_role("status")).to_contain_text("Approved until")

        admin.get_by_role("button", name="End rita's access to prod-db").click()
        expect(card.get_by_role("status")).to_contain_text("Your access ended")
        expect(card.get_by_role("button", name="Request access")).to_be_visible()
        expect(page.get_by_role("button", name="Open terminal")).to_have_count(0)
        # the terminal says why, and offers no Reconnect once access has ended
        page.get_by_role("navigation", name="Open terminals").get_by_role(
            "link", name="prod-db"
        ).click()
        expect(tab.get_by_role("alert")).to_contain_text(
            "access to this connection ended", timeout=20_000
        )
        expect(tab.get_by_role("button", name="Reconnect")).to_have_count(0)
        expect(tab.get_by_role("link", name="Ask for access again")).to_be_visible()
        screens.check(page, "access-ended-terminal")
    finally:
        approver_context.close()
    statuses = [
        r["status"]
        for r in gateway.api("GET", "/access-requests?all=true", admin_token).json()["requests"]
    ]
    assert statuses == ["revoked"]


def test_a_desktop_whose_access_ended_offers_to_ask_again(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    xvnc: XvncServer,  # noqa: F811
    screens: Screens,
) -> None:
    made = gateway.api(
        "POST", "/users", admin_token,
        json={"username": "vera", "password": ADMIN_PASSWORD, "role": "user"},
    )  # fmt: skip
    assert made.status_code == 201, made.text
    body = {
        "name": "design-desk", "protocol": "vnc", "host": xvnc.host, "port": xvnc.port,
        "password": TEST_PASSWORD, "shared": True, "approvalRequired": True,
    }  # fmt: skip
    response = gateway.api("POST", "/connections", admin_token, json=body)
    assert response.status_code == 201, response.text
    connection_id = str(response.json()["id"])
    signed = httpx.post(
        f"{gateway.url}/api/v1/auth/login",
        json={"username": "vera", "password": ADMIN_PASSWORD},
        timeout=60,
    )
    assert signed.status_code == 200, signed.text
    vera = str(signed.json()["token"])
    asked = gateway.api(
        "POST", "/access-requests", vera,
        json={"connectionId": connection_id, "minutes": 60, "reason": "INC-9 redraw"},
    )  # fmt: skip
    assert asked.status_code == 201, asked.text
    request_id = asked.json()["request"]["id"]
    approved = gateway.api("POST", f"/access-requests/{request_id}/approve", admin_token, json={})
    assert approved.status_code == 200, approved.text

    signed_in(page, gateway, "vera")
    page.goto(f"{gateway.url}/connections/{connection_id}")
    page.get_by_role("button", name="Open desktop").click()
    tab = page.get_by_role("region", name="Desktop design-desk")
    expect(tab.get_by_role("status").first).to_have_text("Connected", timeout=30_000)

    ended = gateway.api("POST", f"/access-requests/{request_id}/revoke", admin_token, json={})
    assert ended.status_code == 200, ended.text
    alert = tab.get_by_role("alert")
    expect(alert).to_contain_text("access to this connection ended", timeout=20_000)
    expect(tab.get_by_role("button", name="Reconnect")).to_have_count(0)
    ask = tab.get_by_role("link", name="Ask for access again")
    expect(ask).to_be_visible()
    screens.check(page, "access-ended-desktop")
    ask.click()
    expect(page.get_by_role("region", name="Needs approval")).to_be_visible()
