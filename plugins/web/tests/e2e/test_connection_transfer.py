"""The user's connections as a file, from the profile (connections.import_export): the
export downloads them without secrets, the import brings them back as new connections;
a file that is not an export is refused and creates nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from .conftest import Gateway, Screens, signed_in

pytestmark = pytest.mark.peer("chromium")


def names(gateway: Gateway, token: str) -> list[str]:
    listing = gateway.api("GET", "/connections", token).json()
    found = [c["name"] for c in listing["ungrouped"]]
    for group in listing["groups"]:
        found += [c["name"] for c in group.get("connections", [])]
    return found


def test_export_and_import_connections_from_the_profile(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens, tmp_path: Path
) -> None:
    made = gateway.api(
        "POST",
        "/connections",
        admin_token,
        json={
            "name": "exported box",
            "protocol": "ssh",
            "host": "198.51.100.11",
            "port": 2222,
            "username": "ops",
            "password": "never in the file",
        },
    )
    assert made.status_code in {200, 201}, made.text

    signed_in(page, gateway)
    page.goto(gateway.url + "/profile")
    card = page.get_by_role("region", name="Your connections as a file")
    with page.expect_download() as started:
        card.get_by_role("link", name="Export connections").click()
    exported = tmp_path / started.value.suggested_filename
    started.value.save_as(str(exported))
    text = exported.read_text()
    assert "exported box" in text and "198.51.100.11" in text
    assert "never in the file" not in text

    # not an export: refused beside the field, nothing created
    junk = tmp_path / "junk.json"
    junk.write_text("this is not json")
    card.get_by_label("Export file to import").set_input_files(str(junk))
    card.get_by_role("button", name="Import", exact=True).click()
    expect(card.get_by_text("it is not JSON")).to_be_visible()
    assert names(gateway, admin_token) == ["exported box"]

    card.get_by_label("Export file to import").set_input_files(str(exported))
    card.get_by_role("button", name="Import", exact=True).click()
    expect(card.get_by_text("1 connection and 0 groups imported.")).to_be_visible()
    assert names(gateway, admin_token) == ["exported box", "exported box"]
    tree = page.get_by_role("navigation", name="Connections")
    expect(tree.get_by_text("exported box")).to_have_count(2)
    assert json.loads(text)["connections"]
    screens.check(page, "profile-transfer", scroll_to=card)
