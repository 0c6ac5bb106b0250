"""A connection's page (every capability of the API has a place in the app):
sharing with a user and with a role, seen by them, removed; an unknown name refused and
nothing changed. The reachability check against a listening and a closed port.
"""

from __future__ import annotations

import re
import socket
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from .conftest import Gateway, Screens, signed_in

pytestmark = pytest.mark.peer("chromium")

BOB_PASSWORD = "bob's long passphrase"


def shares_of(gateway: Gateway, token: str, connection_id: str) -> set[tuple[str, str]]:
    response = gateway.api("GET", f"/connections/{connection_id}/shares", token)
    assert response.status_code == 200, response.text
    return {(s["shareType"], s["targetName"]) for s in response.json()["shares"]}


def shared_with_bob(gateway: Gateway) -> set[str]:
    response = httpx.post(
        f"{gateway.url}/api/v1/auth/login",
        json={"username": "bob", "password": BOB_PASSWORD},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    token = response.json()["token"]
    listing = gateway.api("GET", "/connections", token).json()
    return {c["name"] for c in listing["sharedConnections"]}


def test_share_a_connection_with_a_user_and_a_role(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    made = gateway.api(
        "POST",
        "/connections",
        admin_token,
        json={"name": "shared box", "protocol": "ssh", "host": "198.51.100.9", "port": 22},
    )
    assert made.status_code in {200, 201}, made.text
    connection_id = made.json()["id"]
    added = gateway.api(
        "POST", "/users", admin_token, json={"username": "bob", "password": BOB_PASSWORD}
    )
    assert added.status_code in {200, 201}, added.text
    assert "shared box" not in shared_with_bob(gateway)

    signed_in(page, gateway)
    page.goto(f"{gateway.url}/connections/{connection_id}")
    card = page.get_by_role("region", name="Sharing")
    expect(card.get_by_text("Only you")).to_be_visible()

    # an unknown user: refused, nothing stored
    card.get_by_label("Username").fill("nobody-here")
    card.get_by_role("button", name="Share", exact=True).click()
    expect(card.get_by_role("alert")).to_be_visible()
    assert shares_of(gateway, admin_token, connection_id) == set()

    card.get_by_label("Username").fill("bob")
    card.get_by_role("button", name="Share", exact=True).click()
    expect(card.get_by_text("Shared with bob.")).to_be_visible()
    card.get_by_label("Share with").select_option("role")
    card.get_by_label("Role").fill("admin")
    card.get_by_role("button", name="Share", exact=True).click()
    expect(card.get_by_text("Shared with admin.")).to_be_visible()
    assert shares_of(gateway, admin_token, connection_id) == {("user", "bob"), ("role", "admin")}
    assert "shared box" in shared_with_bob(gateway)
    screens.check(page, "connection-shares", scroll_to=card)

    card.get_by_role("button", name="Remove bob").click()
    expect(card.get_by_text("No longer shared with bob.")).to_be_visible()
    assert shares_of(gateway, admin_token, connection_id) == {("role", "admin")}
    assert "shared box" not in shared_with_bob(gateway)


def test_check_reachability_from_the_connection_page(
    page: Any, gateway: Gateway, admin_token: str
) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: the connect is refused
    try:
        ids = {}
        for name, port in (
            ("listening", listener.getsockname()[1]),
            ("closed", closed.getsockname()[1]),
        ):
            made = gateway.api(
                "POST",
                "/connections",
                admin_token,
                json={"name": name, "protocol": "ssh", "host": "127.0.0.1", "port": port},
            )
            assert made.status_code in {200, 201}, made.text
            ids[name] = made.json()["id"]

        signed_in(page, gateway)
        page.goto(f"{gateway.url}/connections/{ids['listening']}")
        expect(page.get_by_text("Not checked")).to_be_visible()
        page.get_by_role("button", name="Check now").click()
        expect(page.get_by_text(re.compile(r"Yes, it answered in \d+ ms"))).to_be_visible()

        page.goto(f"{gateway.url}/connections/{ids['closed']}")
        page.get_by_role("button", name="Check now").click()
        expect(page.get_by_text("No answer from the host and port")).to_be_visible()
    finally:
        listener.close()
        closed.close()
