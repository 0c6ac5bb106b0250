"""RDP desktop tabs: IronRDP's web client through the gateway's RDCleanPath relay.

The server is the suite's xrdp, with a real desktop behind it (xrdp's VNC module in
front of an Xvnc, testsupport.xrdp): what the remote side saw is read on that X
display (keys that reached a focused window, the X clipboard). The browser records
the session (MediaRecorder, WebM chunks, input events); the API then serves it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.peers import stop
from testsupport.xdisplay import Clipboard, KeyWindow
from testsupport.xrdp import XrdpServer, start_xrdp
from testsupport.xvnc import TEST_PASSWORD, XvncServer, start_xvnc

from .conftest import ARTIFACTS, Gateway, Screens, signed_in

pytestmark = pytest.mark.peer("chromium")

CANVAS = "document.querySelector('iron-remote-desktop').shadowRoot.querySelector('canvas')"
# distinct colours in the canvas (sampled): a blank desktop has one
CANVAS_COLOURS = f"""() => {{
  const canvas = {CANVAS};
  if (!canvas || !canvas.width) return 0;
  const copy = document.createElement("canvas");
  copy.width = canvas.width;
  copy.height = canvas.height;
  const context = copy.getContext("2d");
  context.drawImage(canvas, 0, 0);
  const {{ data }} = context.getImageData(0, 0, copy.width, copy.height);
  const seen = new Set();
  for (let i = 0; i < data.length; i += 4 * 97) {{
    seen.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
  }}
  return seen.size;
}}"""


@dataclass
class RdpDesktop:
    """xrdp in front of an Xvnc, and a key window on the Xvnc's display."""

    xrdp: XrdpServer
    xvnc: XvncServer
    window: KeyWindow


def start_desktop(root: Path) -> RdpDesktop:
    xvnc = start_xvnc(
        root / "xvnc", password=TEST_PASSWORD, width=800, height=560, desktop="hostgate-rdp"
    )
    try:
        xrdp = start_xrdp(root / "xrdp", desktop=xvnc)
    except BaseException:
        stop(xvnc.process)
        raise
    return RdpDesktop(xrdp, xvnc, KeyWindow(xvnc.display, xvnc.width, xvnc.height))


def stop_desktop(desktop: RdpDesktop) -> None:
    desktop.window.close()
    stop(desktop.xrdp.process)
    stop(desktop.xvnc.process)


@pytest.fixture
def rdp_desktop(tmp_path: Path) -> Iterator[RdpDesktop]:
    desktop = start_desktop(tmp_path / "desktop")
    yield desktop
    stop_desktop(desktop)


def rdp_connection(gateway: Gateway, token: str, server: XrdpServer, name: str, skip: bool) -> str:
    body = {
        "name": name,
        "protocol": "rdp",
        "host": server.host,
        "port": server.port,
        "username": "tester",
        "password": TEST_PASSWORD,
        "skipCertValidation": skip,
    }
    response = gateway.api("POST", "/connections", token, json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def open_desktop(page: Any, gateway: Gateway, connection_id: str, name: str) -> Any:
    page.goto(f"{gateway.url}/connections/{connection_id}")
    page.get_by_role("button", name="Open desktop").click()
    return page.get_by_role("region", name=f"Desktop {name}")


def wait_for_log(server: XrdpServer, text: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in server.log():
            return
        time.sleep(0.1)
    raise AssertionError(f"xrdp never logged {text!r}:\n{server.log()[-3000:]}")


def test_rdp_desktop_keys_clipboard_and_recording(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    rdp_desktop: RdpDesktop,
    screens: Screens,
) -> None:
    gateway.set_settings(admin_token, recordings__enabled=True)
    connection_id = rdp_connection(gateway, admin_token, rdp_desktop.xrdp, "lab-rdp", skip=True)
    wasm: list[Any] = []
    page.on("response", lambda r: wasm.append(r) if r.url.endswith(".wasm") else None)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    signed_in(page, gateway)
    page.goto(f"{gateway.url}/connections/{connection_id}")
    expect(page.get_by_role("button", name="Open desktop")).to_be_visible()
    assert not wasm  # IronRDP's WASM comes with the first RDP desktop, not before

    tab = open_desktop(page, gateway, connection_id, "lab-rdp")
    expect(tab.get_by_role("status").first).to_have_text("Connected", timeout=30_000)
    # the WASM is a file of the gateway's, served as WebAssembly
    assert len(wasm) == 1 and wasm[0].status == 200
    assert wasm[0].header_value("content-type") == "application/wasm"

    # xrdp's login window: press Enter (the keyboard reaches xrdp), the desktop shows
    page.wait_for_function(f"() => ({CANVAS_COLOURS})() > 3")
    screen = page.get_by_role("application", name="Remote desktop lab-rdp")
    canvas = screen.locator("canvas")
    canvas.click()
    page.keyboard.press("Enter")
    wait_for_log(rdp_desktop.xrdp, "VNC connection complete")
    page.wait_for_timeout(1500)  # the first frames of the desktop
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    canvas.screenshot(path=str(ARTIFACTS / "desktop-rdp-canvas.png"))
    assert page.evaluate(f"({CANVAS_COLOURS})") > 3

    # keys typed in the browser reach the X display behind xrdp
    canvas.click()
    canvas.click(position={"x": 200, "y": 150})
    page.keyboard.type("rdp42")
    assert "rdp42" in rdp_desktop.window.wait_typed("rdp42")
    assert rdp_desktop.window.clicks >= 2
    screens.check(page, "desktop-rdp")

    # Ctrl+Alt+Del from the toolbar: the three keys
    tab.get_by_role("button", name="Ctrl+Alt+Del").click()
    for _ in range(50):
        if "Delete" in rdp_desktop.window.keysyms:
            break
        page.wait_for_timeout(100)
    assert {"Control_L", "Alt_L", "Delete"} <= set(rdp_desktop.window.keysyms)

    # the clipboard, both ways (xrdp's VNC module carries ISO-8859-1 text)
    with_clipboard = Clipboard(rdp_desktop.xvnc.display)
    try:
        tab.get_by_role("button", name="Clipboard").click()
        with_clipboard.set("copied on the rdp desktop")
        box = tab.get_by_label("Clipboard text")
        expect(box).to_have_value("copied on the rdp desktop", timeout=15_000)
        box.fill("sent over rdp")
        tab.get_by_role("button", name="Send to remote desktop").click()
        assert with_clipboard.wait_for("sent over rdp") == "sent over rdp"
    finally:
        with_clipboard.close()
    tab.get_by_role("button", name="Clipboard").click()

    # the keyboard stays in the desktop until Ctrl+Alt+Shift
    canvas.click()
    page.keyboard.press("Tab")
    page.keyboard.type("z")
    assert "rdp42z" in rdp_desktop.window.wait_typed("rdp42z")
    page.keyboard.down("Control")
    page.keyboard.down("Alt")
    page.keyboard.down("Shift")
    page.keyboard.up("Shift")
    page.keyboard.up("Alt")
    page.keyboard.up("Control")
    expect(tab.get_by_role("button", name="Clipboard")).to_be_focused()
    page.keyboard.type("qq")
    page.wait_for_timeout(500)
    assert "qq" not in rdp_desktop.window.typed

    # a few seconds of recording, then closing the tab finalizes it
    canvas.click(position={"x": 300, "y": 200})
    page.keyboard.type("ok")
    page.wait_for_timeout(2500)
    tabs = page.get_by_role("navigation", name="Open terminals")
    tabs.get_by_role("button", name="Close lab-rdp").click()
    expect(tabs).to_have_count(0)

    # what the server keeps: a finished session, a WebM file, the clicks and keys
    session = None
    for _ in range(100):
        rows = gateway.api("GET", "/sessions", admin_token).json()["sessions"]
        # (the relay's own row of the socket has no recording; the browser's has)
        recorded = [row for row in rows if row["protocol"] == "rdp" and row["hasRecording"]]
        if recorded and recorded[0]["endedAt"]:
            session = recorded[0]
            break
        page.wait_for_timeout(100)
    assert session is not None, [
        (row["protocol"], row["endedAt"], row["hasRecording"]) for row in rows
    ]
    assert session["connectionName"] == "lab-rdp" and session["fileSize"] > 1000
    assert session["recordingComplete"] is True
    # the app names its recording on the relay socket: the gateway never had to end it
    missing = gateway.api("GET", "/audit?eventType=connection.recording_missing", admin_token)
    assert missing.json()["entries"] == []
    recording = gateway.api("GET", f"/sessions/{session['id']}/recording", admin_token)
    assert recording.status_code == 200
    assert recording.headers["content-type"] == "video/webm"
    assert recording.content[:4] == b"\x1a\x45\xdf\xa3"  # EBML: a WebM file
    events = gateway.api("GET", f"/sessions/{session['id']}/recording/events", admin_token)
    kinds = [event["event_type"] for event in events.json()["events"]]
    assert kinds.count("click") >= 3 and kinds.count("key") >= 7, kinds
    elapsed = [event["elapsed"] for event in events.json()["events"]]
    assert elapsed == sorted(elapsed) and elapsed[-1] > 2000  # milliseconds


def test_rdp_certificate_check_and_close_reason(
    page: Any, gateway: Gateway, admin_token: str, rdp_desktop: RdpDesktop
) -> None:
    # the server's self-signed certificate is refused unless the connection skips the check
    strict = rdp_connection(gateway, admin_token, rdp_desktop.xrdp, "strict-rdp", skip=False)
    signed_in(page, gateway)
    tab = open_desktop(page, gateway, strict, "strict-rdp")
    alert = tab.get_by_role("alert")
    expect(alert).to_contain_text("The RDP server's certificate is not trusted", timeout=30_000)
    expect(alert).to_contain_text("set skipCertValidation on the connection")

    # accepted with skipCertValidation; then the server goes away mid-session
    lenient = rdp_connection(gateway, admin_token, rdp_desktop.xrdp, "lenient-rdp", skip=True)
    tab = open_desktop(page, gateway, lenient, "lenient-rdp")
    expect(tab.get_by_role("status").first).to_have_text("Connected", timeout=30_000)
    stop(rdp_desktop.xrdp.process)
    alert = tab.get_by_role("alert")
    expect(alert).to_contain_text(re.compile(r"Disconnected: \S+"), timeout=20_000)
    expect(tab.get_by_role("status").first).to_have_text("Disconnected")
    tab.get_by_role("button", name="Reconnect").click()
    expect(alert).to_contain_text(
        re.compile(r"Cannot reach the RDP server at 127\.0\.0\.1:\d+"), timeout=30_000
    )
