"""A VNC desktop whose clipboard is denied both ways: noVNC in Chromium, the real Xvnc.

The gateway frames the server's messages (noVNC is offered only encodings that say
their length), so the desktop must still draw and take keys; the desktop's clipboard
never reaches the browser's panel, which offers no sending.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.xdisplay import Clipboard, KeyWindow
from testsupport.xvnc import XvncServer, xvnc  # noqa: F401

from .conftest import Gateway, Screens, signed_in
from .test_desktop_vnc import CANVAS_COLOURS, open_desktop, vnc_connection

pytestmark = pytest.mark.peer("chromium")


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


def refused(gateway: Gateway, token: str) -> list[str]:
    entries = gateway.api("GET", "/audit?eventType=session.action_denied", token).json()
    return sorted(e["details"]["action"] for e in entries["entries"])


def test_vnc_clipboard_denied_both_ways(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    xvnc: XvncServer,  # noqa: F811
    key_window: KeyWindow,
    x_clipboard: Clipboard,
    screens: Screens,
) -> None:
    connection_id = vnc_connection(gateway, admin_token, xvnc, "locked-vnc")
    changed = gateway.api(
        "PUT",
        f"/connections/{connection_id}",
        admin_token,
        json={"actions": {"copy": False, "paste": False}},
    )
    assert changed.status_code == 200, changed.text
    signed_in(page, gateway)
    tab = open_desktop(page, gateway, connection_id, "locked-vnc")
    canvas = page.get_by_role("application", name="Remote desktop locked-vnc").locator("canvas")
    page.wait_for_function(f"() => ({CANVAS_COLOURS})(document.querySelector('canvas')) > 3")

    # the panel offers no sending and says why (the gateway drops a paste anyway:
    # plugins/vnc/tests/test_vnc_clipboard_rights.py sends one past the app)
    tab.get_by_role("button", name="Clipboard").click()
    box = tab.get_by_label("Clipboard text")
    expect(
        tab.get_by_text("The clipboard is not allowed on this connection for you")
    ).to_be_visible()
    expect(tab.get_by_role("button", name="Send to remote desktop")).to_have_count(0)

    # copy: the desktop's clipboard reaches the gateway, which drops it (and says so)
    x_clipboard.set("desktop secret")
    for _ in range(150):
        if "copy" in refused(gateway, admin_token):
            break
        page.wait_for_timeout(100)
    assert refused(gateway, admin_token) == ["copy"]
    expect(box).to_have_value("")  # noVNC never got the text
    # keys still go through the framed stream
    canvas.click()
    page.keyboard.type("k9")
    assert "k9" in key_window.wait_typed("k9")
    screens.check(page, "desktop-vnc-clipboard-denied")
