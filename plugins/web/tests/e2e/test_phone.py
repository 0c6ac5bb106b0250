"""The session and administration screens on a phone (390x844) in Chromium.

- the live sessions, session history and file-transfer tables keep each row's actions in
  the viewport (a wide table scrolls inside its box, under its pinned action column);
- a 110-column recording keeps a readable size and scrolls sideways inside the player's
  box, while play/pause, the position and the speed stay in view;
- the administration sections scroll sideways with an arrow at the edge that has more, the
  current one scrolled into view, every one reachable with the keyboard;
- and the page itself never scrolls sideways.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from testsupport.sshd import SshdServer, sshd  # noqa: F401 - the fixture

from .conftest import PHONE, Gateway, Screens, server_connection, signed_in
from .terminals import PROMPT
from .test_sessions import ScriptedTerminal

pytestmark = pytest.mark.peer("chromium")

COLS = 110


def in_viewport(page: Any, *controls: Any) -> None:
    """Each control is visible and wholly inside the viewport, and the page does not scroll
    sideways. The width is checked before anything scrolls (a control that only a sideways
    scroll would show is the fault this looks for); then it is scrolled vertically into view
    (never sideways, as it is already there) for the height."""
    width = page.viewport_size["width"]
    height = page.viewport_size["height"]
    for control in controls:
        expect(control).to_be_visible()
        box = control.bounding_box()
        assert box is not None
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, (control, box)
        control.evaluate("e => e.scrollIntoView({ block: 'center', inline: 'nearest' })")
        box = control.bounding_box()
        assert box is not None
        assert box["y"] >= 0 and box["y"] + box["height"] <= height, (control, box)
    no_sideways_scroll(page)


def no_sideways_scroll(page: Any) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth"), page.evaluate(
        "[document.documentElement.scrollWidth, innerWidth]"
    )


def test_the_session_screens_keep_their_actions_and_controls_on_a_phone(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
    screens: Screens,
) -> None:
    connection_id = server_connection(gateway, admin_token, sshd)
    listed = httpx.post(  # a file-transfer session
        f"{gateway.url}/api/v1/sftp/{connection_id}/list",
        headers={"Authorization": f"Bearer {admin_token}", "X-File-Session-Id": "tab-1"},
        json={"path": "."},
        timeout=60,
    )
    assert listed.status_code == 200, listed.text
    terminal = ScriptedTerminal(gateway, admin_token, connection_id, cols=COLS)
    terminal.until(PROMPT.pattern.encode() + rb"\s*$")
    # a line as wide as the terminal, then a marker at its right end
    terminal.type(f"printf '%{COLS - 9}s' '' | tr ' ' =; echo wide-$((100+10))", b"wide-110")

    signed_in(page, gateway)
    page.set_viewport_size(PHONE)
    page.goto(f"{gateway.url}/sessions/live")
    live = page.get_by_role("region", name="Live sessions")
    in_viewport(
        page,
        live.get_by_role("link", name="Watch admin's session on lab-ssh"),
        live.get_by_role("button", name="End admin's session on lab-ssh"),
    )
    screens.check(page, "phone-sessions-live")

    terminal.close()
    for _ in range(100):
        [session] = gateway.api("GET", "/sessions", admin_token).json()["sessions"]
        if session["endedAt"] and session["recordingState"] == "complete":
            break
        page.wait_for_timeout(100)
    assert session["recordingState"] == "complete", session
    page.goto(f"{gateway.url}/sessions")
    history = page.get_by_role("region", name="Session history")
    play_link = history.get_by_role("link", name=re.compile("^Play the recording of lab-ssh"))
    in_viewport(
        page,
        history.get_by_role("link", name=re.compile("^Details of the SSH session on lab-ssh")),
        play_link,
    )
    screens.check(page, "phone-sessions-history", scroll_to=play_link)

    page.goto(f"{gateway.url}/sessions/files")
    transfers = page.get_by_role("region", name="File-transfer sessions")
    in_viewport(
        page,
        transfers.get_by_role("button", name=re.compile("^Events of lab-ssh")),
        transfers.get_by_role("link", name=re.compile("as CSV$")),
        transfers.get_by_role("link", name=re.compile("as JSON$")),
    )
    screens.check(page, "phone-sessions-files")

    page.goto(f"{gateway.url}/sessions/{session['id']}/play")
    screen = page.get_by_role("region", name="Recording screen")
    play = page.get_by_role("button", name="Play recording")
    in_viewport(
        page,
        play,
        page.get_by_role("slider", name="Position"),
        page.get_by_label("Speed"),
        page.get_by_label("Fit to width"),
    )
    expect(page.get_by_label("Fit to width")).to_be_checked()
    # fitted to a phone, the recording is not shrunk below a readable size: its box
    # scrolls sideways (about 7 px a column: a 12 px monospace font) and the page does not
    wide = "e => [e.scrollWidth, e.clientWidth]"
    for _ in range(50):
        content, box = screen.evaluate(wide)
        if content > box:
            break
        page.wait_for_timeout(100)
    assert content >= COLS * 7 > box, (content, box)
    fitted = content
    play.click()
    expect(screen).to_contain_text("wide-110", timeout=10_000)
    no_sideways_scroll(page)
    screens.check(page, "phone-sessions-player", scroll_to=page.get_by_label("Speed"))

    # actual size (the player's own font size), once rebuilt: still wider than its box,
    # scrolling inside it, the page not sideways
    page.get_by_label("Fit to width").uncheck()
    expect(screen).to_contain_text("wide-110")
    for _ in range(50):
        content, box = screen.evaluate(wide)
        if content != fitted:
            break
        page.wait_for_timeout(100)
    assert content != fitted and content >= COLS * 6 > box, (content, fitted, box)
    no_sideways_scroll(page)
    in_viewport(page, page.get_by_role("button", name=re.compile("^(Play|Pause) recording$")))


def test_the_admin_sections_scroll_sideways_on_a_phone(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    signed_in(page, gateway)
    page.set_viewport_size(PHONE)
    page.goto(f"{gateway.url}/admin/backup")
    nav = page.get_by_role("navigation", name="Administration")
    last = nav.get_by_role("link", name="Backup and restore")
    first = nav.get_by_role("link", name="Users")
    # the current section, the last, is scrolled into view; an arrow says there is more before
    expect(last).to_have_attribute("aria-current", "page")
    in_viewport(page, last)
    more_before = nav.get_by_role("button", name="‹", include_hidden=True)
    more_after = nav.get_by_role("button", name="›", include_hidden=True)
    expect(more_before).to_be_visible()
    expect(more_after).to_have_count(0)
    assert first.bounding_box()["x"] < 0  # cut off on the left
    screens.check(page, "phone-admin-sections")

    # the keyboard reaches every section, each scrolled into view as it gets the focus
    last.focus()
    for _ in range(nav.get_by_role("link").count() - 1):
        page.keyboard.press("Shift+Tab")
    expect(first).to_be_focused()
    in_viewport(page, first)
    expect(more_after).to_be_visible()
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{gateway.url}/admin/users")
    expect(first).to_have_attribute("aria-current", "page")
    in_viewport(page, first)

    # the arrow scrolls the row for a pointer
    more_after.click()
    expect(more_before).to_be_visible()
