"""Session history, playback and live view in Chromium against the suite's real sshd.

- an SSH session recorded through the gateway plays in asciinema-player; its command
  markers and the output search land at the recording's times (read through the
  player's position control, which follows the player's current time);
- an RDP recording made by Chromium's MediaRecorder plays in a <video> with Range
  requests, its input events as ticks that seek the video;
- a second browser context with sessions.view_any watches the first one's terminal,
  the first one sees that it is watched, and a user without the permission is refused;
- file-transfer sessions, exports, storage and the purge.
"""

from __future__ import annotations

import json
import re
import time
from itertools import pairwise
from typing import Any

import httpx
import pytest
import websockets.sync.client
from playwright.sync_api import expect

from testsupport.gateway import ADMIN_PASSWORD
from testsupport.sshd import SshdServer, sshd  # noqa: F401 - the fixture

from .conftest import AXE_SOURCE, Gateway, Screens, server_connection, signed_in
from .terminals import NO_WEBGL, PROMPT, open_terminal, run

pytestmark = pytest.mark.peer("chromium")


def ticket(gateway: Gateway, token: str) -> str:
    response = gateway.api("POST", "/auth/ws-ticket", token)
    assert response.status_code == 200, response.text
    return str(response.json()["ticket"])


ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


class ScriptedTerminal:
    """A terminal opened through the gateway's socket from Python (as a browser would)."""

    def __init__(self, gateway: Gateway, token: str, connection_id: str, cols: int = 100) -> None:
        url = (
            f"{gateway.ws_url}/ws/ssh?ticket={ticket(gateway, token)}"
            f"&connectionId={connection_id}&cols={cols}&rows=30"
        )
        self.socket = websockets.sync.client.connect(url, max_size=2**22)
        self.output = b""

    def until(self, pattern: bytes, timeout: float = 20) -> None:
        """Wait until the output, without escape sequences, matches ``pattern``."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, ESCAPES.sub(b"", self.output)):
            left = deadline - time.monotonic()
            assert left > 0, f"{pattern!r} not seen in {self.output[-300:]!r}"
            try:
                frame = self.socket.recv(timeout=left)
            except TimeoutError:
                raise AssertionError(f"{pattern!r} not seen in {self.output[-300:]!r}") from None
            if isinstance(frame, bytes):
                self.output += frame

    def type(self, command: str, expect_output: bytes) -> None:
        self.socket.send(json.dumps({"type": "data", "data": command + "\r"}))
        self.until(re.escape(expect_output) + rb"[\s\S]*" + PROMPT.pattern.encode() + rb"\s*$")

    def close(self) -> None:
        self.socket.send(json.dumps({"type": "data", "data": "exit\r"}))
        try:
            while True:
                self.socket.recv(timeout=20)
        except websockets.exceptions.ConnectionClosed:
            pass


def recorded_session(gateway: Gateway, token: str, connection_id: str) -> str:
    """Run a few known commands with pauses between them; the session's id once it ended."""
    terminal = ScriptedTerminal(gateway, token, connection_id)
    terminal.until(PROMPT.pattern.encode() + rb"\s*$")
    terminal.type("echo first-$((20+1))", b"first-21")
    time.sleep(1.2)
    terminal.type("echo second-$((40+2))", b"second-42")
    time.sleep(1.2)
    terminal.type("printf 'needle-%s\\n' found", b"needle-found")
    time.sleep(0.5)
    terminal.close()
    for _ in range(100):
        sessions = gateway.api("GET", "/sessions", token).json()["sessions"]
        if sessions and sessions[0]["endedAt"] and sessions[0]["recordingState"] == "complete":
            return str(sessions[0]["id"])
        time.sleep(0.1)
    raise AssertionError(f"the session did not end: {sessions}")


def cast_events(gateway: Gateway, token: str, session_id: str) -> list[list[Any]]:
    response = gateway.api("GET", f"/sessions/{session_id}/recording", token)
    assert response.status_code == 200
    lines = response.text.splitlines()
    return [json.loads(line) for line in lines[1:] if line.strip()]


def position(page: Any) -> float:
    """The player's current time, as its position control shows it."""
    return float(page.get_by_role("slider", name="Position").input_value())


def wait_position(page: Any, wanted: float, tolerance: float = 0.06) -> None:
    for _ in range(50):
        if abs(position(page) - wanted) <= tolerance:
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"the player is at {position(page)}, not {wanted}")


def test_a_recorded_ssh_session_plays_with_command_markers_and_search(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
    screens: Screens,
) -> None:
    connection_id = server_connection(gateway, admin_token, sshd)
    session_id = recorded_session(gateway, admin_token, connection_id)
    commands = gateway.api("GET", f"/sessions/{session_id}/commands", admin_token).json()[
        "commands"
    ]
    logged = {entry["command"]: entry["elapsed"] / 1000 for entry in commands}
    assert "echo second-$((40+2))" in logged, logged

    signed_in(page, gateway)
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Sessions").click()
    expect(page.get_by_role("heading", name="Sessions", exact=True)).to_be_visible()
    history = page.get_by_role("region", name="Session history")
    expect(history.get_by_role("cell", name="lab-ssh", exact=True)).to_be_visible()
    expect(history.get_by_role("cell", name="Recorded", exact=True)).to_be_visible()
    screens.check(page, "sessions-history")

    # filters narrow the list and live in the address
    page.get_by_label("Connection or user").fill("no-such-thing")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("No session matches these filters.")).to_be_visible()
    assert "search=no-such-thing" in page.url
    page.get_by_role("button", name="Clear filters").click()
    page.get_by_label("Protocol").select_option("ssh")
    page.get_by_label("Recording", exact=True).select_option("true")
    page.get_by_role("button", name="Filter").click()
    expect(history.get_by_role("cell", name="lab-ssh", exact=True)).to_be_visible()
    page.reload()
    expect(page.get_by_label("Protocol")).to_have_value("ssh")
    expect(history.get_by_role("cell", name="lab-ssh", exact=True)).to_be_visible()

    history.get_by_role("link", name=re.compile("^Play the recording of lab-ssh")).click()
    expect(page).to_have_url(f"{gateway.url}/sessions/{session_id}/play")
    player = page.get_by_role("region", name="Recording player")
    slider = page.get_by_role("slider", name="Position")
    expect(slider).to_be_visible()
    # one set of controls: the app's; asciinema-player's own bar (no role or label of its
    # own, hence its class) is not stacked above them
    expect(
        page.get_by_role("region", name="Recording screen").locator(".ap-control-bar")
    ).to_have_count(0)
    expect(page.get_by_role("button", name=re.compile("^(Play|Pause) recording$"))).to_have_count(1)

    # with pauses kept as they were, the player's clock is the recording's
    page.get_by_label("Skip pauses longer than").select_option("0")
    expect(slider).to_be_visible()
    wait_position(page, 0)

    # a command's marker: the player goes to the moment it was entered
    jump = page.get_by_role("button", name=re.compile(r"^Jump to .*: echo second-\$\(\(40\+2\)\)$"))
    jump.click()
    wait_position(page, logged["echo second-$((40+2))"])
    expect(player).to_contain_text("echo second-$((40+2))")
    expect(jump.locator("xpath=..")).to_have_attribute("aria-current", "true")
    page.get_by_role("button", name=re.compile(r"^Jump to .*: echo first-")).click()
    wait_position(page, logged["echo first-$((20+1))"])

    # search finds the output (not the typed command) and goes to when it appeared
    appeared = next(
        e[0] for e in cast_events(gateway, admin_token, session_id) if "needle-found" in e[2]
    )
    page.get_by_label("Text to find in the output").fill("NEEDLE-found")
    page.get_by_role("button", name="Find").click()
    expect(page.get_by_role("status").filter(has_text="Match 1 of 1")).to_be_visible()
    wait_position(page, appeared)
    expect(player).to_contain_text("needle-found")
    page.get_by_label("Text to find in the output").fill("never printed")
    page.get_by_role("button", name="Find").click()
    expect(page.get_by_text("“never printed” is not in the output.")).to_be_visible()

    # speed and the idle limit rebuild the player at the same moment of the recording
    speeds = page.get_by_label("Speed").locator("option").all_inner_texts()
    assert speeds == ["0.5×", "1×", "1.5×", "2×", "4×", "8×"]
    page.get_by_label("Speed").select_option("8")
    wait_position(page, appeared)
    # played from the first command at half speed: several seconds of playback, so the
    # pause comes before the end (from the last output at 8x the player was at the end in
    # well under a second, and the pause button gone, on a loaded machine)
    page.get_by_label("Speed").select_option("0.5")
    page.get_by_role("button", name=re.compile(r"^Jump to .*: echo first-")).click()
    wait_position(page, logged["echo first-$((20+1))"])
    page.get_by_role("button", name="Play recording").click()
    expect(page.get_by_role("button", name="Pause recording")).to_be_visible()
    page.get_by_role("button", name="Pause recording").click()
    expect(page.get_by_role("button", name="Play recording")).to_be_visible()
    page.get_by_label("Skip pauses longer than").select_option("1")
    page.get_by_role("button", name=re.compile(r"^Jump to .*: echo second-")).click()
    # every pause longer than 1 s counts as 1 s: where the command is on that clock
    marker = logged["echo second-$((40+2))"]
    times = [0.0, *(e[0] for e in cast_events(gateway, admin_token, session_id) if e[0] <= marker)]
    expected = marker - sum(max(0.0, b - a - 1) for a, b in pairwise([*times, marker]))
    assert expected < marker - 0.1  # the recording has 1.2 s pauses before the command
    wait_position(page, expected)  # the jump waits for the rebuilt player
    expect(page.get_by_label("Fit to width")).to_be_checked()
    screens.check(
        page, "sessions-player", scroll_to=page.get_by_role("link", name="Download recording")
    )

    # the download is the raw recording; who opened it is in the detail for auditors
    download = page.get_by_role("link", name="Download recording")
    assert download.get_attribute("href") == f"/api/v1/sessions/{session_id}/recording"
    viewers = page.get_by_role("region", name="Who played or watched it")
    expect(viewers).to_contain_text("opened the recording")
    audit = gateway.api(
        "GET", "/audit", admin_token, params={"eventType": "session.recording_viewed"}
    ).json()["entries"]
    assert any(entry["details"]["sessionId"] == session_id for entry in audit)


def make_user(gateway: Gateway, admin_token: str, username: str) -> str:
    response = gateway.api(
        "POST",
        "/users",
        admin_token,
        json={"username": username, "password": ADMIN_PASSWORD, "role": "user"},
    )
    assert response.status_code == 201, response.text
    return gateway.login(username)


def test_live_view_follows_a_terminal_and_the_watched_user_sees_it(
    page: Any,
    browser: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
    screens: Screens,
) -> None:
    alice = make_user(gateway, admin_token, "alice")
    bob = make_user(gateway, admin_token, "bob")
    connection_id = server_connection(gateway, alice, sshd)

    # alice's browser: a terminal
    page.context.add_init_script(NO_WEBGL)
    signed_in(page, gateway, "alice")
    screen = open_terminal(page, connection_id, "lab-ssh")
    tab = page.get_by_role("region", name="Terminal lab-ssh")
    run(page, screen, "echo before-$((2*21))", "before-42")

    # without sessions.view_any the watch socket is refused (4003), and alice is not told
    [live] = gateway.api("GET", "/sessions/active", admin_token).json()["sessions"]
    refused = websockets.sync.client.connect(
        f"{gateway.ws_url}/ws/sessions/{live['id']}/watch?ticket={ticket(gateway, bob)}"
    )
    assert "sessions.view_any" in json.loads(refused.recv(timeout=10))["message"]
    with pytest.raises(websockets.exceptions.ConnectionClosed) as closed:
        refused.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4003
    assert gateway.api("GET", "/sessions/active", bob).json()["sessions"] == []

    # the admin's browser, a second context: the live list, then the live view
    viewer_context = browser.new_context(
        viewport={"width": 1280, "height": 800}, color_scheme="light", locale="en-GB"
    )
    viewer_context.add_init_script(path=AXE_SOURCE)
    try:
        admin = viewer_context.new_page()
        admin.set_default_timeout(15_000)
        signed_in(admin, gateway)
        admin.goto(f"{gateway.url}/sessions/live")
        rows = admin.get_by_role("region", name="Live sessions")
        expect(rows.get_by_role("cell", name="alice", exact=True)).to_be_visible()
        screens.check(admin, "sessions-live")
        rows.get_by_role("link", name="Watch alice's session on lab-ssh").click()
        expect(admin.get_by_role("status").filter(has_text="Live · read-only")).to_be_visible()
        mirror = admin.get_by_role("region", name="Live view of alice's session on lab-ssh")
        expect(mirror).to_contain_text("before-42")  # the current screen first

        # alice is told, at once
        expect(tab.get_by_role("status").filter(has_text="watching this session")).to_have_text(
            re.compile("Admin is watching this session")
        )
        # what alice runs appears in the admin's view as it happens
        run(page, screen, "echo live-$((6*7))-now", "live-42-now")
        expect(mirror).to_contain_text("live-42-now", timeout=5_000)
        screens.check(admin, "sessions-watch")
        screens.check(page, "terminal-watched")
        # folded to a small badge for the terminal's room: still there, still said
        watched = tab.get_by_role("status").filter(has_text="watching this session")
        full = watched.bounding_box()
        tab.get_by_role("button", name="Fold the watched notice").click()
        expect(watched).to_be_visible()
        expect(watched).to_have_text(re.compile("Admin is watching this session"))
        folded = watched.bounding_box()
        assert full is not None and folded is not None and folded["width"] < full["width"] / 2
        screens.check(page, "terminal-watched-folded")
        tab.get_by_role("button", name="Show the watched notice").click()
        expect(watched).to_be_visible()

        # the viewer cannot type into alice's terminal
        mirror.click()
        admin.keyboard.type("echo from-the-viewer\n")
        run(page, screen, "echo still-$((1+1))", "still-2")
        expect(screen).not_to_contain_text("from-the-viewer")

        # the viewer leaves: alice's banner goes away; both ends are in the audit log
        admin.goto(f"{gateway.url}/sessions/live")
        expect(tab.get_by_role("status").filter(has_text="watching this session")).to_have_count(0)
        types = gateway.audit_types(admin_token)
        assert "session.live_view_started" in types and "session.live_view_ended" in types

        # ending alice's session with a reason: her tab says who and why
        admin.get_by_role("button", name="End alice's session on lab-ssh").click()
        admin.get_by_label("Reason (optional)").fill("maintenance window")
        admin.get_by_role("button", name="End session").click()
        expect(tab.get_by_role("alert")).to_contain_text("Terminated by admin: maintenance window")
        expect(admin.get_by_text("No session is open right now.")).to_be_visible(timeout=10_000)
    finally:
        viewer_context.close()


WEBM_FROM_MEDIARECORDER = """async () => {
  const canvas = document.createElement("canvas");
  canvas.width = 320; canvas.height = 200;
  const g = canvas.getContext("2d");
  const stream = canvas.captureStream(15);
  const recorder = new MediaRecorder(stream, { mimeType: "video/webm" });
  const parts = [];
  recorder.ondataavailable = (e) => { if (e.data.size) parts.push(e.data); };
  recorder.start(500);
  const started = performance.now();
  await new Promise((done) => {
    const draw = () => {
      const t = (performance.now() - started) / 1000;
      g.fillStyle = `hsl(${(t * 120) % 360} 70% 50%)`; g.fillRect(0, 0, 320, 200);
      g.fillStyle = "#fff"; g.font = "32px sans-serif"; g.fillText(t.toFixed(1), 20, 100);
      if (t < 2.5) requestAnimationFrame(draw); else done();
    };
    draw();
  });
  recorder.stop();
  await new Promise((done) => (recorder.onstop = done));
  return parts;
}"""

UPLOAD = """async ([sessionId, parts]) => {
  for (const part of parts) {
    const response = await fetch(`/api/v1/sessions/${sessionId}/recording/chunk`, {
      method: "POST", body: part, headers: { "Content-Type": "application/octet-stream" },
    });
    if (!response.ok) throw new Error(`chunk: ${response.status}`);
  }
}"""


def test_an_rdp_recording_plays_in_a_video_with_ranges_and_an_input_timeline(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    response = gateway.api(
        "POST",
        "/connections",
        admin_token,
        json={"name": "desk", "protocol": "rdp", "host": "127.0.0.1", "port": 3389},
    )
    assert response.status_code == 201, response.text
    created = gateway.api(
        "POST", "/sessions/rdp-session", admin_token, json={"connectionId": response.json()["id"]}
    ).json()
    assert created["shouldRecord"] is True
    session_id = created["sessionId"]

    signed_in(page, gateway)
    # a real WebM from Chromium's MediaRecorder, uploaded in parts as the RDP client does
    handle = page.evaluate_handle(WEBM_FROM_MEDIARECORDER)
    page.evaluate(UPLOAD, [session_id, handle])
    events = [
        {"elapsed": 500, "type": "click"},
        {"elapsed": 1000, "type": "move"},
        {"elapsed": 1500, "type": "key"},
        {"elapsed": 1501, "type": "key"},
        {"elapsed": 2000, "type": "click"},
    ]
    assert (
        gateway.api(
            "POST", f"/sessions/{session_id}/recording/events", admin_token, json=events
        ).status_code
        == 200
    )
    assert (
        gateway.api("POST", f"/sessions/{session_id}/recording/finalize", admin_token).status_code
        == 200
    )

    ranges: list[str] = []
    page.on(
        "request",
        lambda request: (
            ranges.append(request.headers.get("range", ""))
            if request.url.endswith(f"/sessions/{session_id}/recording")
            else None
        ),
    )
    page.goto(f"{gateway.url}/sessions/{session_id}/play")
    video = page.get_by_label("Desktop recording of desk")
    expect(video).to_be_visible()
    for _ in range(100):
        duration = video.evaluate("v => v.duration")
        if isinstance(duration, int | float) and 0 < duration < 1e6:
            break
        page.wait_for_timeout(100)
    assert 2 <= duration <= 4, duration

    timeline = page.get_by_role("group", name=re.compile("^Clicks and keys over time"))
    ticks = timeline.get_by_role("button")
    expect(ticks).to_have_count(3)  # the move is left out; the two keys share a tick
    expect(ticks.nth(1)).to_have_accessible_name("0:01.5: 2 keys")
    ticks.nth(2).click()
    for _ in range(50):
        if abs(video.evaluate("v => v.currentTime") - 2.0) < 0.05:
            break
        page.wait_for_timeout(100)
    assert abs(video.evaluate("v => v.currentTime") - 2.0) < 0.05
    assert any(value.startswith("bytes=") for value in ranges), ranges
    screens.check(page, "sessions-video")
    download = page.get_by_role("link", name="Download input events")
    assert download.get_attribute("href") == f"/api/v1/sessions/{session_id}/recording/events"


def test_file_transfer_sessions_exports_storage_and_the_purge(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
    screens: Screens,
) -> None:
    connection_id = server_connection(gateway, admin_token, sshd)
    listed = httpx.post(
        f"{gateway.url}/api/v1/sftp/{connection_id}/list",
        headers={"Authorization": f"Bearer {admin_token}", "X-File-Session-Id": "tab-1"},
        json={"path": "."},
        timeout=60,
    )
    assert listed.status_code == 200, listed.text
    recorded_session(gateway, admin_token, connection_id)

    signed_in(page, gateway)
    page.goto(f"{gateway.url}/sessions/files")
    transfers = page.get_by_role("region", name="File-transfer sessions")
    expect(transfers.get_by_role("cell", name="lab-ssh", exact=True)).to_be_visible()
    transfers.get_by_role("button", name=re.compile("^Events of lab-ssh")).click()
    events = page.get_by_role("list", name=re.compile("^Events of lab-ssh"))
    expect(events).to_contain_text("browse")
    csv_link = transfers.get_by_role("link", name=re.compile("as CSV$"))
    exported = gateway.api(
        "GET", csv_link.get_attribute("href").removeprefix("/api/v1"), admin_token
    )
    assert exported.status_code == 200 and "browse" in exported.text
    storage = page.get_by_role("region", name="Recording storage")
    expect(storage).to_contain_text(
        re.compile(r"Recordings use \d+(\.\d)? (B|KiB) on the gateway's disk")
    )
    screens.check(page, "sessions-files")

    storage.get_by_role("button", name="Delete all session history…").click()
    page.get_by_role("button", name="Delete everything").click()
    expect(
        page.get_by_text(
            re.compile(r"Deleted 1 session, \d+ recording files? and 1 file-transfer session")
        )
    ).to_be_visible()
    expect(page.get_by_text("No file-transfer sessions yet.", exact=False)).to_be_visible()
    assert gateway.api("GET", "/sessions", admin_token).json()["sessions"] == []
    assert "sessions.purged" in gateway.audit_types(admin_token)
