"""Import from ssh_config in the browser: paste the file, add the key file it names,
preview, import; the gateway stores the jump-host link and the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from .conftest import Gateway, Screens, signed_in

pytestmark = pytest.mark.peer("chromium")

CONFIG = """Host bastion
  HostName bastion.example.com
  User jump

Host "db main"
  HostName 10.0.0.7
  ProxyJump bastion
  IdentityFile ~/.ssh/id_db
  # hostgate-tags: prod

Match host *.corp
  User corp
"""


def test_import_from_ssh_config(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens, tmp_path: Path
) -> None:
    key = tmp_path / "id_db"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nnot a real one\n")
    signed_in(page, gateway)
    page.get_by_role("link", name="Import from ssh_config").click()
    expect(page.get_by_role("heading", name="Import from ssh_config")).to_be_visible()
    page.get_by_label("Configuration").fill(CONFIG)
    page.get_by_label("Key and included files").set_input_files(str(key))
    expect(page.get_by_role("list", name="Files added")).to_contain_text("~/.ssh/id_db")
    page.get_by_role("button", name="Preview").click()
    table = page.get_by_role("table", name="Connections to create")
    expect(table.get_by_role("row")).to_have_count(3)  # the header and two connections
    expect(table.get_by_role("row", name="db main")).to_contain_text("bastion")
    expect(page.get_by_role("list", name="Not imported")).to_contain_text("Match blocks")
    screens.check(page, "import-ssh-config")
    assert gateway.api("GET", "/connections", admin_token).json()["ungrouped"] == []

    page.get_by_role("button", name="Import 2 connections").click()
    expect(page).to_have_url(gateway.url + "/")
    tree = page.get_by_role("list", name="My connections")
    expect(tree).to_contain_text("db main")
    listed = {
        c["name"]: c for c in gateway.api("GET", "/connections", admin_token).json()["ungrouped"]
    }
    db = gateway.api("GET", f"/connections/{listed['db main']['id']}", admin_token).json()
    assert db["jumpHostId"] == listed["bastion"]["id"]
    assert db["hasPrivateKey"] is True and db["tags"] == ["prod"]
