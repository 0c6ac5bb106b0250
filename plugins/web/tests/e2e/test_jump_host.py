"""A connection through a jump host, set up and used in the browser: the form offers the
stored SSH connections as jump hosts, and the terminal reaches a server that only the
jump host reaches (``testsupport.jumpnet``: a network namespace)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.jumpnet import JumpNet

from .conftest import Gateway, Screens, signed_in
from .terminals import NO_WEBGL, open_terminal, run

pytestmark = pytest.mark.peer("chromium")


def test_a_terminal_through_a_jump_host_chosen_in_the_form(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    jump_net: JumpNet,
    screens: Screens,
) -> None:
    bastion = {
        "name": "bastion",
        "protocol": "ssh",
        "host": jump_net.jump.host,
        "port": jump_net.jump.port,
        "username": jump_net.jump.username,
        "password": jump_net.jump.password,
    }
    response = gateway.api("POST", "/connections", admin_token, json=bastion)
    assert response.status_code == 201, response.text
    bastion_id = str(response.json()["id"])
    gateway.trust_host_key(admin_token, bastion_id)

    page.context.add_init_script(NO_WEBGL)
    signed_in(page, gateway)
    page.goto(f"{gateway.url}/connections/new")
    form = page.locator("form.card")
    form.get_by_label("Name", exact=True).fill("inner-db")
    form.get_by_label("Host", exact=True).fill(jump_net.target.host)
    form.get_by_label("Port", exact=True).fill(str(jump_net.target.port))
    form.get_by_label("Username", exact=True).fill(jump_net.target.username)
    form.get_by_label("Password", exact=True).fill(jump_net.target.password)
    jump = form.get_by_label("Jump host")
    expect(jump).to_have_accessible_description(
        "Reach this host through a stored SSH connection (ProxyJump)."
    )
    jump.select_option(label=f"bastion ({jump_net.jump.host})")
    screens.check(page, "connection-form-jump-host")
    page.get_by_role("button", name="Create connection").click()
    expect(page.get_by_role("heading", name="inner-db")).to_be_visible()

    listed = gateway.api("GET", "/connections", admin_token).json()
    [inner] = [c for c in listed["ungrouped"] if c["name"] == "inner-db"]
    stored = gateway.api("GET", f"/connections/{inner['id']}", admin_token).json()
    assert stored["jumpHostId"] == bastion_id
    # the host-key scan goes through the jump host as well
    gateway.trust_host_key(admin_token, inner["id"])

    screen = open_terminal(page, inner["id"], "inner-db")
    run(page, screen, "echo from=${SSH_CONNECTION%% *}", "from=127.0.0.1")
    audit = gateway.api("GET", "/audit?eventType=connection.session_started", admin_token).json()[
        "entries"
    ]
    routes = [e["details"].get("route", "") for e in audit]
    assert any(r.startswith("bastion (") and "-> inner-db" in r for r in routes), routes
