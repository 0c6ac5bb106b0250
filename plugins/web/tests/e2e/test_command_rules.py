"""Command rules in Chromium against the suite's real sshd, on one gateway for the module.

- The admin finds Administration → Command rules with Ctrl+K, writes a block rule and an
  approve rule in the form, changes one, deletes a third, and asks the "Test this
  command" box what a few lines would meet.
- alice's terminal tab says when a rule blocks her line (the shell never runs it) and
  while one holds it; the admin, in a browser of his own, sees the count on his avatar
  come up live, finds the command (with alice and the connection) under Held commands,
  approves it, and it runs in alice's shell; the next held line he denies, and it never runs.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.gateway import ADMIN_PASSWORD
from testsupport.sshd import SshdServer, sshd  # noqa: F401 - the fixture

from .conftest import AXE_SOURCE, Gateway, Screens, server_connection, signed_in
from .terminals import NO_WEBGL, open_terminal, run

pytestmark = pytest.mark.peer("chromium")


def rule_form(page: Any, name: str, action: str, match: str, pattern: str) -> None:
    """Fill the open rule form and save it."""
    form = page.get_by_role("form", name=re.compile("command rule|Edit the rule"))
    form.get_by_label("Rule name").fill(name)
    form.get_by_label("Action").select_option(action)
    form.get_by_label("The command line").select_option(match)
    form.get_by_label("Pattern").fill(pattern)
    form.get_by_role("button", name="Save rule").click()
    expect(
        page.get_by_role("alert")
        .or_(page.get_by_role("status"))
        .filter(has_text=f"The rule {name} is saved")
    ).to_be_visible()


def verdict_of(page: Any, command: str) -> Any:
    """Ask the test box about ``command``; its verdict."""
    page.get_by_label("Command to test").fill(command)
    page.get_by_role("button", name="Test", exact=True).click()
    return page.locator(".verdict")


def test_an_admin_writes_rules_and_tests_commands_against_them(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    signed_in(page, gateway)
    page.keyboard.press("Control+k")
    page.keyboard.type("command rules")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile("/admin/command-rules$"))
    expect(page.get_by_role("list", name="Command rules")).to_contain_text("No rule yet")

    page.get_by_role("button", name="New rule").click()
    rule_form(page, "no rm", "block", "prefix", "rm -rf")
    page.get_by_role("button", name="New rule").click()
    rule_form(page, "sudo waits", "approve", "glob", "sudo *")
    page.get_by_role("button", name="New rule").click()
    rule_form(page, "flag curl", "alert", "regex", "curl .*\\| *sh")

    # change one: the pattern and the priority
    rules = page.get_by_role("list", name="Command rules")
    rules.get_by_role("button", name="Edit sudo waits").click()
    page.get_by_label("Pattern").fill("sudo reboot*")
    page.get_by_label("Priority").fill("5")
    page.get_by_role("button", name="Save rule").click()
    expect(rules.get_by_role("listitem").first).to_contain_text(
        "Holds for approval lines matching sudo reboot* on every connection, for everyone."
    )
    # delete one
    rules.get_by_role("button", name="Delete flag curl").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete rule").click()
    expect(rules.get_by_role("listitem")).to_have_count(2)

    stored = gateway.api("GET", "/command-rules", admin_token).json()["rules"]
    assert [(r["name"], r["action"], r["match"], r["pattern"], r["priority"]) for r in stored] == [
        ("sudo waits", "approve", "glob", "sudo reboot*", 5),
        ("no rm", "block", "prefix", "rm -rf", 100),
    ]

    expect(verdict_of(page, "rm   -rf /srv")).to_contain_text(
        "Blocked: it would never be sent — rule no rm"
    )
    expect(verdict_of(page, "sudo reboot now")).to_contain_text("Held for approval")
    expect(page.locator(".verdict")).to_contain_text("rule sudo waits")
    allowed = "Allowed: no enabled rule matches this command."
    expect(verdict_of(page, "sudo ls")).to_have_text(allowed)
    # a rule turned off no longer counts
    rules.get_by_label("On: no rm").uncheck()
    expect(
        page.get_by_role("status")
        .or_(page.get_by_role("alert"))
        .filter(has_text="The rule no rm is off")
    ).to_be_visible()
    expect(verdict_of(page, "rm -rf /srv")).to_have_text(
        "Allowed: no enabled rule matches this command."
    )
    rules.get_by_label("On: no rm").check()
    expect(verdict_of(page, "rm -rf /srv")).to_contain_text("Blocked")
    screens.check(page, "admin-command-rules")
    page.get_by_role("button", name="New rule").click()
    screens.check(page, "admin-command-rule-form", scroll_to=page.get_by_label("Pattern"))


def test_a_blocked_line_is_told_and_a_held_one_runs_once_another_user_approves_it(
    page: Any,
    browser: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
    screens: Screens,
) -> None:
    for body in (
        {"name": "no rm", "action": "block", "match": "prefix", "pattern": "rm -rf"},
        {"name": "echo waits", "action": "approve", "match": "prefix", "pattern": "echo held"},
    ):
        response = gateway.api("POST", "/command-rules", admin_token, json=body)
        assert response.status_code == 201, response.text
    user = gateway.api(
        "POST",
        "/users",
        admin_token,
        json={"username": "alice", "password": ADMIN_PASSWORD, "role": "user"},
    )
    assert user.status_code == 201, user.text
    alice = gateway.login("alice")
    connection_id = server_connection(gateway, alice, sshd)
    page.context.add_init_script(NO_WEBGL)
    signed_in(page, gateway, "alice")
    screen = open_terminal(page, connection_id, "lab-ssh")
    tab = page.get_by_role("region", name="Terminal lab-ssh")

    # blocked: the shell never runs it, the tab says which rule refused it
    run(
        page,
        screen,
        "rm -rf /tmp/gone-$((2*3)) || echo ran-$((5*5))",
        "Command blocked by rule 'no rm'",
    )
    notice = tab.locator(".ruled")
    expect(notice).to_have_attribute("data-state", "blocked")
    expect(notice).to_contain_text("Command blocked (rule no rm)")
    expect(screen).not_to_contain_text("ran-25")
    screens.check(page, "terminal-command-blocked")

    # the approver's browser, open before the command is held: the count comes live
    context = browser.new_context(
        viewport={"width": 1280, "height": 800}, color_scheme="light", locale="en-GB"
    )
    context.add_init_script(path=AXE_SOURCE)
    try:
        admin = context.new_page()
        admin.set_default_timeout(15_000)
        signed_in(admin, gateway)
        account = admin.get_by_role("button", name=re.compile("account menu"))
        expect(account).not_to_contain_text("held commands")

        screen.click()
        page.keyboard.insert_text("echo held-$((6*7))")
        page.keyboard.press("Enter")
        expect(notice).to_have_attribute("data-state", "held")
        expect(notice).to_contain_text("Waiting for an approver (rule echo waits)")
        expect(notice).to_contain_text("Ctrl-C withdraws it")
        screens.check(page, "terminal-command-held")
        expect(screen).not_to_contain_text("held-42")

        expect(account).to_contain_text("held commands: 1")
        account.click()
        admin.get_by_role("link", name=re.compile("Held commands")).click()
        held = admin.get_by_role("list", name="Held commands")
        expect(held).to_contain_text("echo held-$((6*7))")
        expect(held).to_contain_text("alice on lab-ssh · rule echo waits")
        screens.check(admin, "held-commands")
        held.get_by_role("button", name="Approve echo held-$((6*7)) by alice").click()
        expect(admin.get_by_text("alice on lab-ssh: command sent.")).to_be_visible()
        expect(admin.get_by_text("No command is waiting.")).to_be_visible()
        expect(account).not_to_contain_text("held commands")
        expect(screen).to_contain_text("held-42")
        expect(notice).to_have_attribute("data-state", "approved")
        expect(notice).to_contain_text("Command approved by")

        # the next one, on the open page (it follows the live channel), is denied: never run
        run(page, screen, "echo held-no-$((7*7))", "Command held for approval")
        held.get_by_role("button", name="Deny echo held-no-$((7*7)) by alice").click()
        expect(notice).to_have_attribute("data-state", "denied")
        expect(notice).to_contain_text("Command denied by")
        expect(admin.get_by_text("No command is waiting.")).to_be_visible()
    finally:
        context.close()

    expect(screen).not_to_contain_text("held-no-49")
    types = gateway.audit_types(admin_token)
    for wanted in ("session.command_blocked", "session.command_approved", "session.command_denied"):
        assert wanted in types, types
