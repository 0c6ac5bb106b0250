"""A VNC desktop recorded by the gateway plays in the browser: decoded from the recording alone.

The session is made in the app's own desktop tab (noVNC over the relay) against the
suite's real Xvnc, with a key window on the display so the picture is not flat; the
player then draws it from the recording alone (no VNC server replayed), seeks through
its key frames and changes speed, with the remote pointer drawn where it was.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.xdisplay import KeyWindow
from testsupport.xvnc import XvncServer, xvnc  # noqa: F401

from .conftest import ARTIFACTS, Gateway, Screens, signed_in
from .test_desktop_vnc import CANVAS_COLOURS, open_desktop, vnc_connection

pytestmark = pytest.mark.peer("chromium")


SCREEN_CANVAS = "document.querySelector('[aria-label=\"Desktop recording of rec-vnc\"] canvas')"
PICTURE = f"() => {{ const c = {SCREEN_CANVAS}; return c !== null && ({CANVAS_COLOURS})(c) > 3; }}"
TIMELINE = "Clicks and keys over time; choose one to go there"


def clock(seconds: float) -> str:
    """The player's position text (m:ss.d, tenths cut), as a pattern for its start."""
    whole = int(seconds)
    tenths = int((seconds - whole) * 10)
    return "^" + re.escape(f"{whole // 60}:{whole % 60:02d}.{tenths} / ")


@pytest.fixture
def key_window(xvnc: XvncServer) -> Iterator[KeyWindow]:  # noqa: F811
    window = KeyWindow(xvnc.display, xvnc.width, xvnc.height)
    # an arrow over it (X's own left_ptr): with no window manager the pointer is empty
    font = window.display.open_font("cursor")
    arrow = font.create_glyph_cursor(font, 68, 69, (0, 0, 0), (65535, 65535, 65535))
    window.window.change_attributes(cursor=arrow)
    window.display.sync()
    yield window
    window.close()


def test_a_recorded_vnc_session_plays_seeks_and_changes_speed(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    xvnc: XvncServer,  # noqa: F811
    key_window: KeyWindow,
    screens: Screens,
) -> None:
    connection_id = vnc_connection(gateway, admin_token, xvnc, "rec-vnc")
    signed_in(page, gateway)
    tab = open_desktop(page, gateway, connection_id, "rec-vnc")
    canvas = page.get_by_role("application", name="Remote desktop rec-vnc").locator("canvas")
    page.wait_for_function(f"() => ({CANVAS_COLOURS})(document.querySelector('canvas')) > 3")
    canvas.click()
    page.keyboard.type("rec")
    assert "rec" in key_window.wait_typed("rec")
    tabs = page.get_by_role("navigation", name="Open terminals")
    tabs.get_by_role("button", name="Close rec-vnc").click()
    expect(tabs).to_have_count(0)
    del tab

    sessions = gateway.api("GET", "/sessions", admin_token).json()["sessions"]
    [session] = [s for s in sessions if s["connectionName"] == "rec-vnc"]
    for _ in range(100):  # the relay ends the session a moment after the socket closes
        detail = gateway.api("GET", f"/sessions/{session['id']}", admin_token).json()
        if detail["endedAt"]:
            break
        page.wait_for_timeout(100)
    assert detail["recordingFormat"] == "rfb"
    assert detail["recordingState"] == "complete"
    frames = gateway.api("GET", f"/sessions/{session['id']}/recording/keyframes", admin_token)
    assert frames.json()["keyFrames"], "the first full picture is a key frame"

    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.headers.get("range", "")))
    page.goto(f"{gateway.url}/sessions/{session['id']}")
    player = page.get_by_role("region", name="Recording player")
    screen = player.get_by_role("img", name="Desktop recording of rec-vnc")
    # the first picture: the key window's pattern drawn from the recording
    page.wait_for_function(PICTURE, timeout=15_000)
    assert any(value.startswith("bytes=") for value in requests), "read by range requests"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screen.screenshot(path=str(ARTIFACTS / "vnc-player-canvas.png"))
    # the typed keys are on the timeline
    expect(
        player.get_by_role("group", name="Clicks and keys over time; choose one to go there")
    ).to_be_visible()

    # speed and play: the position moves on to the end
    player.get_by_label("Speed").select_option("16")
    player.get_by_role("button", name="Play").click()
    # ended: the button says Play again with the position moved on
    page.wait_for_function(
        """() => {
          const player = document.querySelector('[aria-label="Recording player"]');
          const button = player.querySelector('.controls button');
          return button.textContent === 'Play' && Number(player.querySelector('.seek').value) > 0;
        }""",
        timeout=30_000,
    )
    position = player.get_by_label("Position")
    # the remote pointer, in the shape Xvnc sent, where the recorded click put it: the
    # middle of the screen (the live canvas was clicked in its middle)
    pointer = screen.locator("canvas.cursor")
    expect(pointer).to_be_visible()
    drawn = pointer.bounding_box()
    picture = screen.locator(".screen canvas").bounding_box()
    assert drawn and picture
    middle_x, middle_y = picture["x"] + picture["width"] / 2, picture["y"] + picture["height"] / 2
    assert drawn["x"] - 2 <= middle_x <= drawn["x"] + drawn["width"] + 2, (drawn, picture)
    assert drawn["y"] - 2 <= middle_y <= drawn["y"] + drawn["height"] + 2, (drawn, picture)

    # a seek back to the middle: decoded from the key frame, drawn once, the pointer too
    middle = int(float(position.get_attribute("max") or "0") * 5) / 10  # on the 0.1 s steps
    position.evaluate(
        "(input, value) => { input.value = String(value);"
        " input.dispatchEvent(new Event('change', { bubbles: true })); }",
        middle,
    )
    page.wait_for_function(PICTURE, timeout=15_000)
    shown = player.locator(".time")
    expect(shown).to_have_text(re.compile(clock(middle)))
    # the key frame button goes back to the last key frame half a second or more before
    earlier = [
        f["elapsed"] / 1000
        for f in frames.json()["keyFrames"]
        if f["elapsed"] / 1000 < middle - 0.5
    ]
    player.get_by_role("button", name="‹ Key frame").click()
    expect(shown).to_have_text(re.compile(clock(earlier[-1] if earlier else 0.0)))
    screens.check(page, "vnc-player", scroll_to=player)

    # a seek to the end decodes the whole session from the key frame, drawn once: the
    # pointer's last shape, where the click left it
    position.evaluate(
        "(input, value) => { input.value = input.max;"
        " input.dispatchEvent(new Event('change', { bubbles: true })); }",
        None,
    )
    expect(pointer).to_be_visible()
    expect(pointer).to_have_js_property("width", 10)  # X's left_ptr: 10x16
