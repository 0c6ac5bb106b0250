"""A reload loses nothing: the open tabs come back (terminals re-attached to the same shell,
checked by its PID on the suite's real sshd), an ended tab comes back ended and is marked in
the tab strip, two tabs of one connection are told apart, the file panel beside a terminal
and the recording player come back where they were; a second window of the browser takes the
tabs over and the first takes them back."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.sshd import TEST_USER, SshdServer, sshd  # noqa: F401 - the fixture
from testsupport.xvnc import XvncServer, xvnc  # noqa: F401 - the fixture

from .conftest import Gateway, Screens, server_connection, signed_in
from .terminals import open_terminal, run
from .test_desktop_vnc import open_desktop, vnc_connection
from .test_sessions import position, recorded_session

pytestmark = pytest.mark.peer("chromium")


def shell_pid(page: Any, screen: Any, marker: str) -> int:
    """The PID of the shell behind a terminal screen (``echo $$``), marked to be found again."""
    run(page, screen, f"echo {marker}-$$", re.compile(rf"{marker}-\d+"))
    return int(re.findall(rf"{marker}-(\d+)", screen.inner_text())[-1])


def session_ids(gateway: Gateway, token: str) -> set[str]:
    """Every terminal session the gateway has opened (ended ones too)."""
    return {entry["id"] for entry in gateway.api("GET", "/sessions", token).json()["sessions"]}


def test_a_reload_reattaches_the_same_shells_and_keeps_ended_tabs_ended(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
    lab_ssh: str,
    screens: Screens,
) -> None:
    folder = Path(sshd.home) / f"reload-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    user = pwd.getpwnam(TEST_USER)
    os.chown(folder, user.pw_uid, user.pw_gid)
    try:
        # the tab sections in order (a hidden tab is not in the accessibility tree)
        tab_sections = page.locator("section[aria-label='Terminal lab-ssh']")
        first = open_terminal(page, lab_ssh, "lab-ssh")
        first_pid = shell_pid(page, first, "first")
        second = open_terminal(page, lab_ssh, "lab-ssh")
        second_pid = shell_pid(page, second, "second")
        assert first_pid != second_pid
        strip = page.get_by_role("navigation", name="Open terminals")
        first_link = strip.get_by_role("link", name="lab-ssh", exact=True)
        second_link = strip.get_by_role("link", name="lab-ssh (2)", exact=True)
        expect(second_link).to_have_attribute("aria-current", "page")

        # the second tab's file panel, in a folder: it comes back with the tab
        tab = tab_sections.nth(1)
        tab.get_by_role("button", name="Files", exact=True).click()
        panel = page.get_by_role("complementary", name="Files of lab-ssh")
        panel.get_by_role("link", name=folder.name).click()
        expect(panel.get_by_role("navigation", name="Folder path")).to_contain_text(folder.name)

        # the first tab's shell ends: Reconnect opens a new one below the old scrollback
        first_link.click()
        run(page, first, "exit", "logout")
        first_tab = tab_sections.nth(0)
        expect(first_tab.get_by_role("status").first).to_have_text("Disconnected")
        first_tab.get_by_role("button", name="Reconnect").click()
        expect(first_tab.get_by_role("status").first).to_have_text("Connected")
        expect(first).to_contain_text(f"first-{first_pid}")  # the scrollback stayed
        renewed_pid = shell_pid(page, first, "renewed")
        assert renewed_pid != first_pid
        # and ends again: the tab strip marks it
        run(page, first, "exit", "logout")
        ended_link = strip.get_by_role("link", name="lab-ssh (disconnected)", exact=True)
        expect(ended_link).to_be_visible()
        expect(ended_link).to_have_attribute("title", "lab-ssh: disconnected")
        screens.check(page, "terminal-tabs-ended")

        opened = session_ids(gateway, admin_token)
        assert len(opened) == 3
        second_link.click()
        expect(second_link).to_have_attribute("aria-current", "page")
        page.reload()

        # both tabs are back, the current one re-attached to the same shell
        expect(second_link).to_have_attribute("aria-current", "page")
        expect(ended_link).to_be_visible()
        second_tab = tab_sections.nth(1)
        expect(second_tab.get_by_role("status").first).to_have_text("Connected", timeout=30_000)
        second = second_tab.get_by_role("region", name="Terminal output of lab-ssh")
        expect(second).to_contain_text(f"second-{second_pid}")  # the replayed scrollback
        assert shell_pid(page, second, "again") == second_pid
        expect(panel.get_by_role("navigation", name="Folder path")).to_contain_text(folder.name)
        expect(panel.get_by_role("link", name=folder.name)).to_have_count(0)

        # the ended tab came back ended, with its Reconnect: no new shell was opened for it
        ended_link.click()
        first_tab = tab_sections.nth(0)
        expect(first_tab.get_by_role("status").first).to_have_text("Disconnected")
        expect(first_tab.get_by_role("alert")).to_contain_text(
            "it had ended before the page was reloaded"
        )
        expect(first_tab.get_by_role("button", name="Reconnect")).to_be_visible()
        assert session_ids(gateway, admin_token) == opened
        screens.check(page, "terminal-tabs-reloaded")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_signing_out_forgets_the_tabs(
    page: Any,
    gateway: Gateway,
    lab_ssh: str,
) -> None:
    open_terminal(page, lab_ssh, "lab-ssh")
    assert page.evaluate("() => sessionStorage.getItem('hostgate.tabs')") is not None
    page.get_by_role("button", name="account menu").click()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert page.evaluate("() => sessionStorage.getItem('hostgate.tabs')") is None
    signed_in(page, gateway)
    expect(page.get_by_role("navigation", name="Open terminals")).to_have_count(0)


def test_the_player_and_the_file_browser_come_back_where_they_were(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
) -> None:
    connection_id = server_connection(gateway, admin_token, sshd)
    session_id = recorded_session(gateway, admin_token, connection_id)
    signed_in(page, gateway)

    page.goto(f"{gateway.url}/sessions/{session_id}/play")
    player = page.get_by_role("region", name="Recording player")
    page.get_by_role("button", name=re.compile(r"^Jump to .*: echo second-")).click()
    expect(page).to_have_url(re.compile(r"\?t=[1-9]\d*$"))
    moment = int(page.url.rsplit("=", 1)[1])
    page.reload()
    expect(page.get_by_role("slider", name="Position")).to_be_visible()
    # the screen at that moment: the first command's output, not yet the last one's
    expect(player.get_by_role("region", name="Recording screen")).to_contain_text("first-21")
    expect(player.get_by_role("region", name="Recording screen")).not_to_contain_text(
        "needle-found"
    )
    assert position(page) > 0
    assert page.url.endswith(f"?t={moment}")

    # the file browser's folder is in its address
    folder = Path(sshd.home) / f"reload-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    try:
        page.goto(f"{gateway.url}/connections/{connection_id}/files")
        page.get_by_role("link", name=folder.name).click()
        crumbs = page.get_by_role("navigation", name="Folder path")
        expect(crumbs).to_contain_text(folder.name)
        page.reload()
        expect(crumbs).to_contain_text(folder.name)
        expect(page.get_by_role("link", name=folder.name)).to_have_count(0)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# The app's sockets, kept where the test can reach them (the page's WebSocket, subclassed).
KEEP_SOCKETS = """
const NativeWebSocket = window.WebSocket;
window.hgSockets = [];
window.WebSocket = class extends NativeWebSocket {
  constructor(...args) {
    super(...args);
    window.hgSockets.push(this);
  }
};
"""

# What a laptop going to sleep looks like to the app: the terminal's socket ends without a
# close from the gateway (1006). It is closed for real (the gateway detaches the shell, as
# when the network goes); the app is told 1006, which no close frame can carry.
DROP_TERMINAL_SOCKET = """() => {
  const open = window.hgSockets.filter((s) => s.url.includes("/ws/ssh") && s.readyState === 1);
  const socket = open.pop();
  const onclose = socket.onclose;
  socket.onclose = null;
  socket.close();
  onclose(new CloseEvent("close", { code: 1006 }));
}"""


def test_a_dropped_socket_reattaches_to_the_same_shell_by_itself(
    page: Any,
    gateway: Gateway,
    lab_ssh: str,
) -> None:
    """The terminal's socket drops without a word from the gateway (the network went, the
    laptop slept): the tab re-attaches on its own, to the same shell, scrollback kept."""
    page.context.add_init_script(KEEP_SOCKETS)
    page.reload()
    screen = open_terminal(page, lab_ssh, "lab-ssh")
    pid = shell_pid(page, screen, "awake")
    tab = page.get_by_role("region", name="Terminal lab-ssh")
    page.evaluate(DROP_TERMINAL_SOCKET)
    expect(tab.get_by_role("status").first).to_have_text("Connecting…")
    expect(tab.get_by_role("status").first).to_have_text("Connected", timeout=30_000)
    expect(screen).to_contain_text(f"awake-{pid}")
    assert shell_pid(page, screen, "woken") == pid


def test_a_desktop_tab_connects_again_after_a_reload(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    xvnc: XvncServer,  # noqa: F811
) -> None:
    connection_id = vnc_connection(gateway, admin_token, xvnc, "lab-vnc")
    signed_in(page, gateway)
    open_desktop(page, gateway, connection_id, "lab-vnc")
    address = page.url
    assert re.search(r"/desktops/d\d+$", address)
    page.reload()
    tab = page.get_by_role("region", name="Desktop lab-vnc")
    expect(tab.get_by_role("status").first).to_have_text("Connected", timeout=30_000)
    assert page.url == address
    # the gateway saw the first session end with the page and a second one start
    sessions = gateway.api("GET", "/sessions", admin_token).json()["sessions"]
    assert [entry["protocol"] for entry in sessions] == ["vnc", "vnc"]
    assert sessions[1]["endedAt"] is not None


def test_a_second_window_takes_the_tabs_over_and_the_first_takes_them_back(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
    xvnc: XvncServer,  # noqa: F811
    lab_ssh: str,
    console: Any,
    screens: Screens,
) -> None:
    """The tabs are in one window at a time: a second window of the browser opened at the
    start page takes them over (the terminal re-attached to the same shell, its file panel at
    its folder, the desktop connected again; one opened at another page only offers them);
    the first one lets them go and takes them back on request."""
    folder = Path(sshd.home) / f"moved-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    user = pwd.getpwnam(TEST_USER)
    os.chown(folder, user.pw_uid, user.pw_gid)
    second = page.context.new_page()  # another window: the same cookie and localStorage
    second.on("pageerror", console.on_page_error)
    try:
        vnc_id = vnc_connection(gateway, admin_token, xvnc, "lab-vnc")
        open_desktop(page, gateway, vnc_id, "lab-vnc")
        screen = open_terminal(page, lab_ssh, "lab-ssh")
        pid = shell_pid(page, screen, "held")
        page.get_by_role("button", name="Files", exact=True).click()
        panel = page.get_by_role("complementary", name="Files of lab-ssh")
        panel.get_by_role("link", name=folder.name).click()
        expect(panel.get_by_role("navigation", name="Folder path")).to_contain_text(folder.name)

        # a link opened in a new browser tab (another page than the start) leaves them put
        linked = page.context.new_page()
        linked.on("pageerror", console.on_page_error)
        linked.goto(f"{gateway.url}/sessions")
        expect(linked.get_by_role("status").filter(has_text="in another window")).to_contain_text(
            "Your 2 open tabs are in another window"
        )
        expect(linked.get_by_role("navigation", name="Open terminals")).to_have_count(0)
        linked.close()
        assert shell_pid(page, screen, "stayed") == pid

        second.goto(gateway.url)
        strip = second.get_by_role("navigation", name="Open terminals")
        strip.get_by_role("link", name="lab-ssh", exact=True).click()
        tab = second.get_by_role("region", name="Terminal lab-ssh")
        expect(tab.get_by_role("status").first).to_have_text("Connected", timeout=30_000)
        moved = tab.get_by_role("region", name="Terminal output of lab-ssh")
        expect(moved).to_contain_text(f"held-{pid}")  # the scrollback came along
        assert shell_pid(second, moved, "moved") == pid
        moved_panel = second.get_by_role("complementary", name="Files of lab-ssh")
        expect(moved_panel.get_by_role("navigation", name="Folder path")).to_contain_text(
            folder.name
        )
        strip.get_by_role("link", name="lab-vnc", exact=True).click()
        desktop = second.get_by_role("region", name="Desktop lab-vnc")
        expect(desktop.get_by_role("status").first).to_have_text("Connected", timeout=30_000)

        # the first window let them go (no tab strip, no error) and offers them back
        offer = page.get_by_role("status").filter(has_text="in another window")
        expect(offer).to_contain_text("Your 2 open tabs are in another window")
        expect(page.get_by_role("navigation", name="Open terminals")).to_have_count(0)
        expect(page.get_by_role("region", name="Terminal lab-ssh")).to_have_count(0)
        screens.check(page, "tabs-in-another-window")

        page.get_by_role("button", name="Open in this window").click()
        back = page.get_by_role("region", name="Terminal lab-ssh")
        expect(back.get_by_role("status").first).to_have_text("Connected", timeout=30_000)
        screen = back.get_by_role("region", name="Terminal output of lab-ssh")
        expect(screen).to_contain_text(f"moved-{pid}")
        assert shell_pid(page, screen, "back") == pid
        expect(second.get_by_role("button", name="Open in this window")).to_be_visible()
        expect(second.get_by_role("navigation", name="Open terminals")).to_have_count(0)
        # one shell all along; the desktop connected anew each time it changed windows
        sessions = gateway.api("GET", "/sessions", admin_token).json()["sessions"]
        assert sorted(entry["protocol"] for entry in sessions) == ["ssh", "vnc", "vnc", "vnc"]
    finally:
        second.close()
        shutil.rmtree(folder, ignore_errors=True)
