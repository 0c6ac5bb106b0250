"""Joining a live terminal and moderated sessions in Chromium against the suite's real sshd.

Two browser contexts on one gateway (shared by the module):

- alice invites bob from her terminal tab's participants strip; bob's open app says so
  at once (a notice with "Join", fed by /ws/events) and Live sessions lists it; he
  joins from the notice as a participant and types into her shell; alice sees him in
  the strip and removes him, and his view says so; every step is in the audit log;
- alice ticks "Require a moderator" in the connection form: her terminal waits, input
  held, until mia (``sessions.moderate``) joins; when mia leaves it is paused.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.gateway import ADMIN_PASSWORD
from testsupport.sshd import SshdServer, sshd  # noqa: F401 - the fixture

from .conftest import AXE_SOURCE, Gateway, Screens, server_connection, signed_in
from .terminals import NO_WEBGL, commands_seen, open_terminal, run

pytestmark = pytest.mark.peer("chromium")


def make_user(gateway: Gateway, admin_token: str, username: str, role: str = "user") -> str:
    response = gateway.api(
        "POST",
        "/users",
        admin_token,
        json={"username": username, "password": ADMIN_PASSWORD, "role": role},
    )
    assert response.status_code == 201, response.text
    return gateway.login(username)


def second_page(browser: Any, gateway: Gateway, username: str) -> tuple[Any, Any]:
    """Another user's browser: a context of its own, signed in."""
    context = browser.new_context(
        viewport={"width": 1280, "height": 800}, color_scheme="light", locale="en-GB"
    )
    context.add_init_script(path=AXE_SOURCE)
    context.add_init_script(NO_WEBGL)
    page = context.new_page()
    page.set_default_timeout(15_000)
    signed_in(page, gateway, username)
    return context, page


def test_the_owner_invites_a_participant_who_types_then_removes_him(
    page: Any,
    browser: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
    screens: Screens,
) -> None:
    alice = make_user(gateway, admin_token, "alice")
    make_user(gateway, admin_token, "bob")
    connection_id = server_connection(gateway, alice, sshd)
    page.context.add_init_script(NO_WEBGL)
    signed_in(page, gateway, "alice")
    screen = open_terminal(page, connection_id, "lab-ssh")
    tab = page.get_by_role("region", name="Terminal lab-ssh")
    run(page, screen, "echo before-$((2*21))", "before-42")

    context, bob = second_page(browser, gateway, "bob")
    try:
        # bob's app is open before he is invited
        bob.goto(f"{gateway.url}/sessions/live")
        expect(bob.get_by_text("No session is open right now.")).to_be_visible()
        notices = bob.get_by_role("region", name="Invitations to join a session")
        expect(notices).to_have_count(0)

        # alice invites bob from her tab
        tab.get_by_role("button", name="People").click()
        strip = tab.get_by_role("region", name="Participants of lab-ssh")
        strip.get_by_role("button", name="Invite…").click()
        strip.get_by_label("User").fill("bob")
        strip.get_by_label("As").select_option("participant")
        strip.get_by_role("button", name="Invite", exact=True).click()
        expect(strip.get_by_role("status")).to_contain_text("bob is invited as participant")

        # bob's open app says so at once (/ws/events), with Join; Live sessions lists it too
        expect(notices).to_contain_text(
            "alice invites you to join their SSH session on lab-ssh as a participant"
        )
        joinable = bob.get_by_role("region", name="Terminals you can join")
        expect(joinable).to_contain_text("alice on lab-ssh")
        expect(joinable.get_by_role("link")).to_have_count(2)  # observer and participant
        screens.check(bob, "sessions-joinable")
        notices.get_by_role("link", name="Join alice's session on lab-ssh").click()
        expect(bob.get_by_role("status").filter(has_text="you may type")).to_be_visible()
        expect(notices).to_have_count(0)  # used: no longer offered
        mirror = bob.get_by_role("region", name="Live view of alice's session on lab-ssh")
        expect(mirror).to_contain_text("before-42")

        # alice's strip names bob as a participant, at once
        expect(strip.get_by_role("listitem")).to_have_text(re.compile(r"bob\s*participant"))
        # what bob types runs in alice's shell
        mirror.click()
        bob.keyboard.insert_text("echo from-bob-$((6*7))")
        bob.keyboard.press("Enter")
        expect(screen).to_contain_text("from-bob-42")
        expect(mirror).to_contain_text("from-bob-42")
        screens.check(page, "terminal-participants")
        screens.check(bob, "sessions-joined")

        # alice removes him: his view ends and says why
        strip.get_by_role("button", name="Remove bob from the session").click()
        expect(bob.get_by_role("alert")).to_contain_text("Removed from the session by")
        expect(strip.get_by_role("listitem")).to_have_count(0)
    finally:
        context.close()

    types = gateway.audit_types(admin_token)
    for wanted in ("session.invited", "session.joined", "session.participant_removed"):
        assert wanted in types, types
    # the command log says whose keys each command came from
    commands_seen(gateway, admin_token, page, ["echo from-bob-$((6*7))"])
    [session] = gateway.api("GET", "/sessions", admin_token).json()["sessions"]
    log = gateway.api("GET", f"/sessions/{session['id']}/commands", admin_token).json()
    typed = {entry["command"]: entry["typedBy"] for entry in log["commands"]}
    assert typed["echo from-bob-$((6*7))"] == ["bob"]
    assert typed["echo before-$((2*21))"] == []


def test_a_moderated_connection_waits_for_a_moderator_and_pauses_without_one(
    page: Any,
    browser: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
    screens: Screens,
) -> None:
    role = gateway.api(
        "POST",
        "/roles",
        admin_token,
        json={"name": "moderators", "permissions": ["sessions.moderate"]},
    )
    assert role.status_code == 201, role.text
    alice = make_user(gateway, admin_token, "alice")
    make_user(gateway, admin_token, "mia", role="moderators")
    connection_id = server_connection(gateway, alice, sshd)
    page.context.add_init_script(NO_WEBGL)
    signed_in(page, gateway, "alice")

    # the connection form's switch
    page.goto(f"{gateway.url}/connections/{connection_id}/edit")
    page.get_by_label("Require a moderator").check()
    screens.check(
        page, "connection-form-moderation", scroll_to=page.get_by_label("Require a moderator")
    )
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("button", name="Open terminal")).to_be_visible()
    stored = gateway.api("GET", f"/connections/{connection_id}", alice).json()
    assert stored["moderation"] == "required"

    screen = open_terminal(page, connection_id, "lab-ssh")
    tab = page.get_by_role("region", name="Terminal lab-ssh")
    waiting = tab.get_by_role("alert").filter(has_text="Waiting for a moderator")
    expect(waiting).to_contain_text("your input is held")
    screens.check(page, "terminal-moderation-waiting")
    # held: what alice types does not reach the shell
    screen.click()
    page.keyboard.insert_text("echo held-$((3*3))")
    page.keyboard.press("Enter")

    context, mia = second_page(browser, gateway, "mia")
    try:
        mia.goto(f"{gateway.url}/sessions/live")
        joinable = mia.get_by_role("region", name="Terminals you can join")
        joinable.get_by_role("link", name="Join as observer: alice's session on lab-ssh").click()
        expect(mia.get_by_role("status").filter(has_text="observer, read-only")).to_be_visible()
        expect(waiting).to_have_count(0)
        run(page, screen, "echo open-$((4*4))", "open-16")
        expect(screen).not_to_contain_text("held-9")
        # mia leaves: the session pauses, and says when it ends
        mia.goto(f"{gateway.url}/sessions/live")
        paused = tab.get_by_role("alert").filter(has_text="Paused: no moderator")
        expect(paused).to_contain_text("the session ends in 60 s")
        screens.check(page, "terminal-moderation-paused")
    finally:
        context.close()
