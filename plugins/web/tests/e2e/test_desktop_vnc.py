"""VNC desktop tabs: noVNC over the gateway's relay against the suite's real Xvnc.

What the remote side saw is read on the X display itself (testsupport.xdisplay): the
keys that reached a focused window, and the X clipboard.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.peers import stop
from testsupport.xdisplay import Clipboard, KeyWindow
from testsupport.xvnc import TEST_PASSWORD, XvncServer, start_xvnc, xvnc  # noqa: F401

from .conftest import ARTIFACTS, Gateway, Screens, signed_in

pytestmark = pytest.mark.peer("chromium")

# The number of distinct colours in the canvas (sampled): a blank desktop has one.
CANVAS_COLOURS = """(canvas) => {
  const context = canvas.getContext("2d");
  const { data } = context.getImageData(0, 0, canvas.width, canvas.height);
  const seen = new Set();
  for (let i = 0; i < data.length; i += 4 * 97) {
    seen.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
  }
  return seen.size;
}"""


def vnc_connection(gateway: Gateway, token: str, server: XvncServer, name: str) -> str:
    body = {
        "name": name,
        "protocol": "vnc",
        "host": server.host,
        "port": server.port,
        "password": TEST_PASSWORD,
    }
    response = gateway.api("POST", "/connections", token, json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


@pytest.fixture
def key_window(xvnc: XvncServer) -> Iterator[KeyWindow]:  # noqa: F811
    window = KeyWindow(xvnc.display, xvnc.width, xvnc.height)
    yield window
    window.close()


@pytest.fixture
def x_clipboard(xvnc: XvncServer) -> Iterator[Clipboard]:  # noqa: F811
    clipboard = Clipboard(xvnc.display)
    yield clipboard
    clipboard.close()


def open_desktop(page: Any, gateway: Gateway, connection_id: str, name: str) -> Any:
    page.goto(f"{gateway.url}/connections/{connection_id}")
    page.get_by_role("button", name="Open desktop").click()
    tab = page.get_by_role("region", name=f"Desktop {name}")
    expect(tab.get_by_role("status").first).to_have_text("Connected", timeout=30_000)
    return tab


def test_vnc_desktop_keyboard_clipboard_scaling_and_keys(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    xvnc: XvncServer,  # noqa: F811
    key_window: KeyWindow,
    x_clipboard: Clipboard,
    screens: Screens,
) -> None:
    connection_id = vnc_connection(gateway, admin_token, xvnc, "lab-vnc")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    signed_in(page, gateway)
    page.goto(f"{gateway.url}/connections/{connection_id}")
    expect(page.get_by_role("button", name="Open desktop")).to_be_visible()
    assert not any("/assets/vnc-" in url for url in requests)  # noVNC comes with the first desktop

    tab = open_desktop(page, gateway, connection_id, "lab-vnc")
    assert any("/assets/vnc-" in url for url in requests)
    # the relay logged in to Xvnc: the browser never asked for the VNC password
    assert not any(url.endswith(f"/connections/{connection_id}/session") for url in requests)
    tabs = page.get_by_role("navigation", name="Open terminals")
    expect(tabs.get_by_role("link", name="lab-vnc")).to_have_attribute("aria-current", "page")
    expect(page).to_have_url(re.compile(r"/desktops/d\d+$"))

    # the desktop appears: the key window's pattern, not one flat colour
    screen = page.get_by_role("application", name="Remote desktop lab-vnc")
    canvas = screen.locator("canvas")
    expect(canvas).to_be_visible()
    page.wait_for_function(f"() => ({CANVAS_COLOURS})(document.querySelector('canvas')) > 3")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    canvas.screenshot(path=str(ARTIFACTS / "desktop-vnc-canvas.png"))

    # keys typed in the browser reach the window on the X display
    canvas.click()
    page.keyboard.type("hello42")
    assert "hello42" in key_window.wait_typed("hello42")
    screens.check(page, "desktop-vnc")

    # Ctrl+Alt+Del from the toolbar arrives as the three keys
    tab.get_by_role("button", name="Ctrl+Alt+Del").click()
    for _ in range(50):
        if "Delete" in key_window.keysyms:
            break
        page.wait_for_timeout(100)
    assert {"Control_L", "Alt_L", "Delete"} <= set(key_window.keysyms)
    # and others from the Keys menu
    tab.get_by_role("button", name="Keys").click()
    tab.get_by_role("button", name="Alt+F4").click()
    for _ in range(50):
        if "F4" in key_window.keysyms:
            break
        page.wait_for_timeout(100)
    assert "F4" in key_window.keysyms

    # the keyboard stays in the desktop (Tab goes there) until Ctrl+Alt+Shift
    canvas.click()
    page.keyboard.press("Tab")
    page.keyboard.type("x")
    assert "hello42x" in key_window.wait_typed("hello42x")
    assert "Tab" in key_window.keysyms
    page.keyboard.down("Control")
    page.keyboard.down("Alt")
    page.keyboard.down("Shift")
    page.keyboard.up("Shift")
    page.keyboard.up("Alt")
    page.keyboard.up("Control")
    toolbar = tab.get_by_role("toolbar", name="Desktop controls")
    expect(toolbar.get_by_role("button", name="Fit")).to_be_focused()
    page.keyboard.type("zz")  # goes to the page now, not the desktop
    page.wait_for_timeout(500)
    assert "zz" not in key_window.typed

    # view only: nothing typed is sent
    tab.get_by_role("button", name="View only").click()
    expect(tab.get_by_role("button", name="View only")).to_have_attribute("aria-pressed", "true")
    canvas.click()
    page.keyboard.type("q")
    page.wait_for_timeout(500)
    assert "q" not in key_window.typed
    tab.get_by_role("button", name="View only").click()
    canvas.click()
    page.keyboard.type("w")
    assert "hello42xw" in key_window.wait_typed("hello42xw")

    # clipboard: the remote side copies, the panel shows it
    tab.get_by_role("button", name="Clipboard").click()
    x_clipboard.set("copied on the remote desktop")
    box = tab.get_by_label("Clipboard text")
    expect(box).to_have_value("copied on the remote desktop", timeout=15_000)
    # and the browser sends: the X clipboard holds it
    box.fill("sent from the browser ✓")
    tab.get_by_role("button", name="Send to remote desktop").click()
    assert x_clipboard.wait_for("sent from the browser ✓") == "sent from the browser ✓"
    screens.check(page, "desktop-vnc-clipboard")
    tab.get_by_role("button", name="Clipboard").click()

    # scaling: 1:1 shows the 800x600 framebuffer as is; fit shrinks it into a smaller window
    page.set_viewport_size({"width": 1000, "height": 640})
    tab.get_by_role("button", name="1:1").click()
    expect(tab.get_by_role("button", name="1:1")).to_have_attribute("aria-pressed", "true")
    page.wait_for_timeout(300)
    assert round(canvas.bounding_box()["width"]) == xvnc.width
    tab.get_by_role("button", name="Fit").click()
    page.wait_for_timeout(300)
    assert canvas.bounding_box()["width"] < xvnc.width - 50
    page.set_viewport_size({"width": 1280, "height": 800})

    # full screen holds the whole tab, and comes back
    tab.get_by_role("button", name="Full screen").click()
    page.wait_for_function(
        "() => document.fullscreenElement?.getAttribute('aria-label') === 'Desktop lab-vnc'"
    )
    tab.get_by_role("button", name="Full screen").click()
    page.wait_for_function("() => document.fullscreenElement === null")

    # closing the tab ends the session
    tabs.get_by_role("button", name="Close lab-vnc").click()
    expect(tabs).to_have_count(0)


def test_vnc_close_reason_and_reconnect(
    page: Any, gateway: Gateway, admin_token: str, tmp_path: Path, screens: Screens
) -> None:
    server = start_xvnc(
        tmp_path / "xvnc",
        password=TEST_PASSWORD,
        width=640,
        height=480,
        desktop="hostgate-stopped-desktop",
    )
    try:
        window = KeyWindow(server.display, server.width, server.height)
        connection_id = vnc_connection(gateway, admin_token, server, "stopping-vnc")
        signed_in(page, gateway)
        tab = open_desktop(page, gateway, connection_id, "stopping-vnc")
        window.close()
        stop(server.process)  # the VNC server goes away mid-session
        alert = tab.get_by_role("alert")
        # the relay's "Connection closed", in words
        expect(alert).to_have_text(
            re.compile(r"Disconnected: The server closed the connection\.\s*Reconnect"),
            timeout=15_000,
        )
        tab.get_by_role("button", name="Reconnect").click()
        # the relay's own words: the server is gone
        expect(alert).to_contain_text(
            re.compile(r"Disconnected: Cannot reach the VNC server at 127\.0\.0\.1:\d+"),
            timeout=20_000,
        )
        expect(tab.get_by_role("status").first).to_have_text("Disconnected")
        screens.check(page, "desktop-vnc-unreachable")
    finally:
        stop(server.process)
