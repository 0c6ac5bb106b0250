"""Keyboard alone: sign in, open a connection's terminal, go to the profile, with the focus
visible at every step; the command palette (Ctrl+K); the one Dialog's focus trap and
Escape; the theme chooser remembered per browser."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.gateway import ADMIN_PASSWORD
from testsupport.sshd import SshdServer, sshd  # noqa: F401 - the fixture

from .conftest import Gateway, Screens, signed_in
from .terminals import NO_WEBGL

pytestmark = pytest.mark.peer("chromium")

FOCUSED = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const style = getComputedStyle(el);
  return {
    name: el.getAttribute("aria-label") || (el.labels && el.labels[0] ? el.labels[0].innerText : "")
      || el.innerText || el.value || "",
    focusVisible: el.matches(":focus-visible"),
    outline: style.outlineStyle,
    width: parseFloat(style.outlineWidth),
    inTerminal: !!el.closest(".xterm"),
  };
}"""


def focused(page: Any) -> dict[str, Any]:
    """What has the keyboard focus, checked to be visibly marked (a 2px+ outline)."""
    info = page.evaluate(FOCUSED)
    assert info is not None, "nothing has the focus"
    assert info["focusVisible"], info
    assert info["outline"] != "none" and info["width"] >= 2, info
    return info  # type: ignore[no-any-return]


def tab_to(page: Any, name: str | re.Pattern[str], limit: int = 25) -> dict[str, Any]:
    """Press Tab until the focused control is named ``name``; it must show its focus."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        info = page.evaluate(FOCUSED)
        label = (info or {}).get("name", "").strip()
        if (isinstance(name, str) and label == name) or (
            isinstance(name, re.Pattern) and name.search(label)
        ):
            return focused(page)
    raise AssertionError(f"Tab never reached {name!r}")


def test_sign_in_terminal_and_profile_by_keyboard_alone(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
    screens: Screens,
) -> None:
    body = {
        "name": "lab-ssh",
        "protocol": "ssh",
        "host": sshd.host,
        "port": sshd.port,
        "username": sshd.username,
        "password": sshd.password,
    }
    assert gateway.api("POST", "/connections", admin_token, json=body).status_code == 201
    page.context.add_init_script(NO_WEBGL)
    page.goto(gateway.url + "/")

    # sign in
    tab_to(page, "Username")
    page.keyboard.type("admin")
    tab_to(page, "Password")
    page.keyboard.type(ADMIN_PASSWORD)
    page.keyboard.press("Enter")
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()

    # Ctrl+K, a few letters, Enter: the terminal, after the host-key question
    page.keyboard.press("Control+k")
    palette = page.get_by_role("dialog", name="Go to")
    expect(palette).to_be_visible()
    expect(palette.get_by_role("combobox")).to_be_focused()
    focused(page)
    page.keyboard.type("lab term")
    expect(palette.get_by_role("option", selected=True)).to_have_text(
        re.compile("Open terminal: lab-ssh")
    )
    screens.check(page, "palette")
    page.keyboard.press("Enter")
    prompt = page.get_by_role("dialog", name="New host key for lab-ssh")
    expect(prompt).to_be_visible()
    expect(prompt.get_by_role("button", name="Cancel")).to_be_focused()  # the safe choice first
    tab_to(page, "Trust this key and connect")
    page.keyboard.press("Enter")
    tab = page.get_by_role("region", name="Terminal lab-ssh")
    expect(tab.get_by_role("status")).to_have_text("Connected", timeout=30_000)

    # the terminal has the keys (Tab and Ctrl+K included) ...
    assert page.evaluate(FOCUSED)["inTerminal"]
    page.keyboard.type("echo key-$((40+2))")
    page.keyboard.press("Enter")
    screen = page.get_by_role("region", name="Terminal output of lab-ssh")
    expect(screen).to_contain_text("key-42")

    # ... and Ctrl+Shift+K still opens the palette: the profile
    page.keyboard.press("Control+Shift+K")
    expect(palette).to_be_visible()
    page.keyboard.type("profile")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Your profile", level=1)).to_be_visible()
    expect(palette).to_be_hidden()
    info = tab_to(page, "Display name")  # the next Tab starts in the new screen
    assert info["name"] == "Display name"

    # what the server saw: the command typed in the terminal
    sessions = gateway.api("GET", "/sessions", admin_token).json()["sessions"]
    assert [s["connectionName"] for s in sessions] == ["lab-ssh"]


def test_dialog_keeps_the_focus_and_gives_it_back(
    page: Any, gateway: Gateway, admin_token: str
) -> None:
    body = {"name": "box", "protocol": "ssh", "host": "10.0.0.9", "port": 22}
    created = gateway.api("POST", "/connections", admin_token, json=body).json()
    signed_in(page, gateway)
    page.goto(f"{gateway.url}/connections/{created['id']}")
    delete = page.get_by_role("button", name="Delete")
    delete.focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog", name="Delete box?")
    expect(dialog).to_be_visible()
    cancel = dialog.get_by_role("button", name="Cancel")
    confirm = dialog.get_by_role("button", name="Delete connection")
    expect(cancel).to_be_focused()
    page.keyboard.press("Tab")
    expect(confirm).to_be_focused()
    page.keyboard.press("Tab")  # wraps around inside the dialog
    expect(cancel).to_be_focused()
    page.keyboard.press("Shift+Tab")
    expect(confirm).to_be_focused()
    focused(page)
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(delete).to_be_focused()  # back where it was
    assert gateway.api("GET", f"/connections/{created['id']}", admin_token).status_code == 200


def body_background(page: Any) -> str:
    return str(page.evaluate("getComputedStyle(document.body).backgroundColor"))


LIGHT_BG, DARK_BG = "rgb(245, 247, 250)", "rgb(15, 20, 26)"


def test_theme_chooser_is_remembered_in_this_browser(
    page: Any, gateway: Gateway, admin_token: str, browser: Any
) -> None:
    signed_in(page, gateway)
    assert body_background(page) == LIGHT_BG  # the system's (light) by default
    page.emulate_media(color_scheme="dark")
    assert body_background(page) == DARK_BG  # following the system
    page.emulate_media(color_scheme="light")

    page.get_by_role("button", name="account menu").click()
    themes = page.get_by_role("group", name="Theme")
    themes.get_by_role("radio", name="Dark").check()
    assert body_background(page) == DARK_BG
    page.reload()
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()
    assert body_background(page) == DARK_BG  # remembered
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    page.emulate_media(color_scheme="light")
    assert body_background(page) == DARK_BG  # the choice wins over the system

    # another browser (profile) keeps its own
    other = browser.new_context(color_scheme="light")
    try:
        second = other.new_page()
        second.goto(gateway.url + "/")
        expect(second.get_by_role("button", name="Sign in", exact=True)).to_be_visible()
        assert body_background(second) == LIGHT_BG
    finally:
        other.close()

    # the palette picks themes too; "follow the system" forgets the choice
    page.keyboard.press("Control+k")
    page.keyboard.type("theme light")
    page.keyboard.press("Enter")
    assert body_background(page) == LIGHT_BG
    page.keyboard.press("Control+k")
    page.keyboard.type("theme system")
    page.keyboard.press("Enter")
    assert page.evaluate("localStorage.getItem('hostgate.theme')") is None
    page.emulate_media(color_scheme="dark")
    assert body_background(page) == DARK_BG


def test_palette_finds_the_administration_screens_a_person_may_open(
    page: Any, gateway: Gateway, admin_token: str
) -> None:
    signed_in(page, gateway)
    page.keyboard.press("Control+k")
    palette = page.get_by_role("dialog", name="Go to")
    expect(palette.get_by_role("combobox")).to_be_focused()
    page.keyboard.type("aud")
    expect(palette.get_by_role("option", selected=True)).to_have_text(re.compile("Audit log"))
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile("/admin/audit$"))
    expect(page.get_by_role("heading", name="Audit log")).to_be_visible()

    # a plain user is not offered screens they may not open
    made = gateway.api(
        "POST", "/users", admin_token,
        json={"username": "paula", "password": ADMIN_PASSWORD, "role": "user"},
    )  # fmt: skip
    assert made.status_code == 201, made.text
    page.get_by_role("button", name="account menu").click()
    page.get_by_role("button", name="Sign out").click()
    signed_in(page, gateway, "paula")
    page.keyboard.press("Control+k")
    page.keyboard.type("aud")
    expect(palette.get_by_role("option")).to_have_text(["Nothing matches."])
