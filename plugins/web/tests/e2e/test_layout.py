"""Layout, and no internals shown to people (issue 32, items 7 and 8): the administration
screens without the connection sidebar, a sidebar folded to give the screen the room, an
audit table that fits at 1280 and 390 px with its targets named alike, one message at a
time on the sign-in card, the history before "Delete all session history", fields a
protocol does not use not offered, pack fields and settings help by their labels, the
terminal's default font shipped with the app, and the system's errno put in words.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from plugins.ssh.tests.sftp_support import give, workdir  # noqa: F401 - the fixture
from testsupport.sshd import SshdServer

from .conftest import DESKTOP, PHONE, Gateway, Screens, server_connection, signed_in
from .terminals import open_terminal, run

pytestmark = pytest.mark.peer("chromium")

# how far the element's content reaches past its box, sideways (0: it fits)
OVERFLOW = "el => el.scrollWidth - el.clientWidth"
# how many lines the text of each element takes (1 each: nothing wraps)
LINES = """els => els.map((el) => {
  const range = document.createRange();
  range.selectNodeContents(el);
  return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
})"""


def sidebar(page: Any) -> Any:
    return page.get_by_role("navigation", name="Connections")


def toggle(page: Any) -> Any:
    return page.get_by_role("banner").get_by_role("button", name="Connections")


def test_admin_screens_start_without_the_sidebar_and_the_audit_table_fits(
    page: Any, gateway: Gateway, admin_token: str, sshd: SshdServer, screens: Screens
) -> None:
    # the same connection named by three kinds of entry: created (its address as the
    # target), host key accepted (its id as the target)
    connection_id = server_connection(gateway, admin_token, sshd, name="lab-ssh")
    signed_in(page, gateway)
    expect(sidebar(page)).to_be_visible()

    page.get_by_role("navigation", name="Sections").get_by_role(
        "link", name="Administration"
    ).click()
    expect(page.get_by_role("navigation", name="Administration")).to_be_visible()
    expect(sidebar(page)).to_be_hidden()
    expect(toggle(page)).to_have_attribute("aria-expanded", "false")
    toggle(page).click()  # still there when wanted
    expect(sidebar(page)).to_be_visible()
    expect(toggle(page)).to_have_attribute("aria-expanded", "true")
    toggle(page).click()
    expect(sidebar(page)).to_be_hidden()

    page.get_by_role("navigation", name="Administration").get_by_role(
        "link", name="Audit log"
    ).click()
    table = page.get_by_role("table")
    created = table.get_by_role("row").filter(has_text="Connection: created")
    accepted = table.get_by_role("row").filter(has_text="Connection: host key accepted")
    expect(created).to_have_count(1)
    expect(accepted).to_have_count(1)
    for row in (created, accepted):
        # a name, with the id on hover: whichever form the event wrote as its target
        name = row.get_by_title(re.compile(f"Connection id {connection_id}"))
        expect(name).to_have_text("lab-ssh")
    # event types in words, not codes
    expect(table).not_to_contain_text("connection.created")

    for size in (DESKTOP, PHONE):
        page.set_viewport_size(size)
        page.wait_for_timeout(50)  # one frame for the layout
        assert table.evaluate(OVERFLOW) <= 0, f"the table scrolls sideways at {size}"
        assert page.get_by_role("main").evaluate(OVERFLOW) <= 0, f"the screen does at {size}"
        times = table.get_by_text(re.compile(r"\d{4}, \d{2}:\d{2}$")).filter(visible=True)
        expect(times.first).to_be_visible()
        assert set(times.evaluate_all(LINES)) == {1}, f"a date wraps at {size}"
    page.set_viewport_size(DESKTOP)
    screens.check(page, "admin-audit-fits", scroll_to=table)


def test_the_sidebar_folds_and_stays_folded(page: Any, gateway: Gateway, admin_token: str) -> None:
    signed_in(page, gateway)
    main = page.get_by_role("main")
    wide = main.evaluate("el => el.clientWidth")
    expect(toggle(page)).to_have_attribute("aria-expanded", "true")
    toggle(page).click()
    expect(sidebar(page)).to_be_hidden()
    assert main.evaluate("el => el.clientWidth") > wide  # the screen has the room
    page.reload()
    expect(page.get_by_role("heading", level=1).first).to_be_visible()
    expect(sidebar(page)).to_be_hidden()  # remembered in this browser
    toggle(page).click()
    expect(sidebar(page)).to_be_visible()


def test_the_sign_in_card_shows_one_message_at_a_time(
    page: Any, gateway: Gateway, admin_token: str
) -> None:
    page.goto(gateway.url + "/?sso_error=state%20expired")
    expect(page.get_by_text("Single sign-on failed: state expired")).to_be_visible()
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("alert")).to_have_count(1)
    expect(page.get_by_role("alert")).not_to_contain_text("Single sign-on")
    expect(page.get_by_text("Single sign-on failed")).to_be_hidden()


def test_history_comes_before_delete_all(page: Any, gateway: Gateway, admin_token: str) -> None:
    signed_in(page, gateway)
    page.goto(gateway.url + "/sessions")
    search = page.get_by_role("button", name="Search", exact=True)
    delete_all = page.get_by_role("button", name="Delete all session history…")
    expect(delete_all).to_be_visible()
    buttons = page.get_by_role("main").get_by_role("button").all_inner_texts()
    assert buttons.index("Search") < buttons.index("Delete all session history…")
    assert search.bounding_box()["y"] < delete_all.bounding_box()["y"]


def test_forms_and_pages_say_things_in_words(
    page: Any, gateway: Gateway, admin_token: str, sshd: SshdServer, screens: Screens
) -> None:
    connection_id = server_connection(gateway, admin_token, sshd, name="lab-ssh")
    signed_in(page, gateway)
    # a pack's field by its label and a switch as yes/no, not "promptOnConnect false"
    page.goto(f"{gateway.url}/connections/{connection_id}")
    details = page.get_by_role("main")
    expect(details).to_contain_text("The browser sends the password when a terminal opens")
    expect(details).not_to_contain_text("promptOnConnect")

    # no private key on a VNC form; there on an SSH one
    page.goto(gateway.url + "/connections/new")
    page.get_by_label("Protocol").select_option("vnc")
    expect(page.get_by_label("Host", exact=True)).to_be_visible()
    expect(page.get_by_label("Private key", exact=True)).to_have_count(0)
    page.get_by_label("Protocol").select_option("ssh")
    expect(page.get_by_label("Private key", exact=True)).to_be_visible()

    # the settings help names other settings by their labels, not their keys
    page.goto(gateway.url + "/admin/settings/network")
    form = page.get_by_role("form", name="Network access")
    expect(form).to_contain_text("“Allow”")
    expect(form.get_by_text(re.compile(r"\bnetwork\.(allow|protected|deny)\b"))).to_have_count(0)
    screens.check(page, "settings-help-labels")


def test_a_refused_connection_is_said_in_words(
    page: Any, gateway: Gateway, admin_token: str
) -> None:
    # a port nothing listens on: the LDAP test reports what the system said
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    gateway.set_settings(
        admin_token,
        auth__ldap_enabled=True,
        auth__ldap_url=f"ldap://127.0.0.1:{closed}",
        auth__ldap_search_base="dc=example,dc=org",
    )
    signed_in(page, gateway)
    page.goto(gateway.url + "/admin/settings/auth.ldap")
    page.get_by_role("button", name="Test connection").click()
    failure = page.get_by_role("alert")
    expect(failure).to_contain_text("refused")
    expect(failure).not_to_contain_text("Errno")


def test_the_terminal_font_ships_with_the_app_and_touch_screens_get_a_key_row(
    page: Any, gateway: Gateway, lab_ssh: str, screens: Screens
) -> None:
    fonts: list[str] = []
    page.on("requestfinished", lambda r: fonts.append(r.url) if ".woff2" in r.url else None)
    screen = open_terminal(page, lab_ssh, "lab-ssh")
    run(page, screen, "echo ab_cd_ef; echo 'ab cd ef'", "ab cd ef")
    # the underscores are drawn: the row that has them does not look like the one with
    # blanks (xterm.js's DOM renderer clipped DejaVu Sans Mono's "_", which reaches below
    # the cell, so that both looked alike). xterm's rows have no role of their own.
    rows = screen.locator(".xterm-rows > div")
    underscores = rows.filter(has_text=re.compile(r"^ab_cd_ef\s*$"))
    blanks = rows.filter(has_text=re.compile(r"^ab cd ef\s*$"))
    assert underscores.screenshot() != blanks.screenshot()
    # the family the default settings name is the app's own file (not a font the machine
    # may lack), loaded before the terminal measured its cells
    loaded = page.evaluate(
        """() => [...document.fonts]
          .filter((f) => f.family.replace(/["']/g, "") === "DejaVu Sans Mono")
          .filter((f) => f.status === "loaded")
          .map((f) => f.weight)"""
    )
    assert "400" in loaded and "700" in loaded, loaded
    assert fonts and all(url.startswith(gateway.url + "/assets/") for url in fonts), fonts
    assert page.evaluate("() => document.fonts.check('14px \"DejaVu Sans Mono\"')")

    # the key row (shown by itself on a touch screen): an arrow moves the cursor, Ctrl is
    # held for the next key (Ctrl+U empties the line the shell was given)
    page.get_by_role("button", name="Keys").click()
    keys = page.get_by_role("toolbar", name="Keys for lab-ssh")
    screen.click()
    page.keyboard.insert_text("echo ab-cd")
    keys.get_by_role("button", name="Left arrow").click()
    keys.get_by_role("button", name="Left arrow").click()
    page.keyboard.insert_text("X")
    page.keyboard.press("Enter")
    expect(screen).to_contain_text("ab-Xcd")
    page.keyboard.insert_text("echo junk")
    ctrl = keys.get_by_role("button", name="Ctrl")
    ctrl.click()
    expect(ctrl).to_have_attribute("aria-pressed", "true")
    page.keyboard.insert_text("u")
    expect(ctrl).to_have_attribute("aria-pressed", "false")
    run(page, screen, "echo clean-line", re.compile(r"clean-line\s*clean-line"))
    assert "junk" not in screen.inner_text()
    screens.check(page, "terminal-font-keys")


def test_search_says_when_output_is_not_indexed(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    signed_in(page, gateway)
    page.goto(gateway.url + "/sessions?q=needle")
    note = page.get_by_text("Terminal output is not indexed on this gateway")
    expect(note).to_be_visible()
    expect(note).to_contain_text("only commands are searched")
    screens.check(page, "sessions-search-not-indexed")
    page.goto(gateway.url + "/sessions?q=needle&kind=command")  # commands alone: nothing missing
    expect(page.get_by_text(re.compile("Nothing found for"))).to_be_visible()
    expect(note).to_be_hidden()
    gateway.set_settings(admin_token, recordings__index_output=True)
    page.goto(gateway.url + "/sessions?q=needle")
    expect(page.get_by_text(re.compile("Nothing found for"))).to_be_visible()
    expect(note).to_be_hidden()


def test_the_file_browser_has_a_path_bar(
    page: Any, gateway: Gateway, admin_token: str, sshd: SshdServer, screens: Screens
) -> None:
    connection_id = server_connection(gateway, admin_token, sshd, name="box", protocol="sftp")
    signed_in(page, gateway)
    page.goto(f"{gateway.url}/connections/{connection_id}/files")
    expect(page.get_by_role("table")).to_be_visible()
    bar = page.get_by_role("search", name="Go to a folder")
    # a small folder of every machine with sshd: /etc's 170 rows took the listing past
    # its 15 s under load, and axe-core minutes over four screens
    bar.get_by_label("Path of a folder to open").fill("/etc/ssh/")
    bar.get_by_role("button", name="Go").click()
    expect(page).to_have_url(re.compile(r"\?path=%2Fetc%2Fssh$"))
    expect(page.get_by_role("row").filter(has_text="sshd_config").first).to_be_visible()
    crumbs = page.get_by_role("navigation", name="Folder path").get_by_role("listitem")
    expect(crumbs).to_have_text(["/", "etc", "ssh"])
    # one "/" for the root, not the root's "/" and then a separator "/" ("/ / etc")
    separators = crumbs.evaluate_all(
        "els => els.map((el) => getComputedStyle(el, '::after').content)"
    )
    assert separators[0] == "none", separators
    expect(bar.get_by_label("Path of a folder to open")).to_have_value("/etc/ssh")
    screens.check(page, "files-path-bar")


def test_several_files_are_downloaded_and_deleted_at_once(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,
    workdir: Path,  # noqa: F811
    screens: Screens,
) -> None:
    for name in ("one.txt", "two.txt", "keep.txt"):
        (workdir / name).write_text(f"content of {name}")
    (workdir / "old").mkdir()
    (workdir / "old" / "inner.txt").write_text("inner")
    give(workdir)
    connection_id = server_connection(gateway, admin_token, sshd, name="box", protocol="sftp")
    signed_in(page, gateway)
    page.goto(f"{gateway.url}/connections/{connection_id}/files?path={workdir.name}")
    expect(page.get_by_role("table")).to_be_visible()
    for name in ("one.txt", "two.txt"):
        page.get_by_label(f"Select {name}").check()
    chosen = page.get_by_role("group", name="Selected items")
    expect(chosen).to_contain_text("2 selected")

    # each through its own plain download link: the files as the server has them
    got: dict[str, str] = {}
    page.on("download", lambda d: got.__setitem__(d.suggested_filename, d.path()))
    with page.expect_download():
        chosen.get_by_role("button", name="Download selected").click()
    for _ in range(100):  # the second download's event, up to 10 s
        if len(got) == 2:
            break
        page.wait_for_timeout(100)
    assert sorted(got) == ["one.txt", "two.txt"]
    assert Path(got["two.txt"]).read_text() == "content of two.txt"

    page.get_by_label("Select old").check()
    expect(chosen).to_contain_text("3 selected")
    screens.check(page, "files-selected")
    chosen.get_by_role("button", name="Delete selected…").click()
    page.get_by_role("button", name="Delete", exact=True).click()
    expect(page.get_by_label("Select keep.txt")).to_be_visible()
    expect(page.get_by_label("Select one.txt")).to_have_count(0)
    expect(chosen).to_have_count(0)
    assert sorted(p.name for p in workdir.iterdir()) == ["keep.txt"]  # what the server did
