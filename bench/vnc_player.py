"""The browser's VNC player on a one-hour recording: time to the first picture, seeks.

.venv/bin/python bench/vnc_player.py [--minutes 60] [--seeks 8]

A real ``hostgate serve``; into its database and recordings directory goes a
synthetic one-hour VNC session, written with the gateway's own writers
(``StreamRecording`` over ``RecordingWriter``: encrypted slots, the stream header,
timed records, the key frame index and the input-event timeline), its content
shaped like an office desktop seen through the recording relay (1280x800, 32 bpp,
the encodings the relay keeps):

- every ``KEY_FRAME_SECONDS`` (the relay's, 10 s) a sync record (ServerInit) and a
  full-screen Hextile update: 92 % of its 16x16 tiles one colour (background,
  window fills), 8 % raw (text, icons), about 340 KB;
- between them, 5 updates a second of a 128x16 raw strip (typing, a clock, a
  cursor blinking), with the browser's pointer moves (10 a second), a click every
  5 s and a burst of keys every 20 s in the input channel and on the timeline.

Chromium (Playwright, /usr/bin/chromium) signs in and opens the session's page;
printed:

- time to the first picture: from the navigation's start until the player's canvas
  shows the key frame (more than 3 colours). Target: < 1 s.
- seeks: the position bar set to ``--seeks`` places spread over the hour, each 9.9 s
  after a key frame (the most a seek decodes: nearly a whole interval), timed until
  the player shows that position with the picture drawn. Target: < 500 ms (median;
  the slowest printed too).
- the recording's size and key frames.

Figures (2026-12-07, two cores shared with four other helpers' test runs, load
average 10-14, three runs): first picture 1.39-2.27 s (medians of 3), of which the
player's own part (range read, decode, one draw) is 0.2-0.55 s and the app's boot
before it the rest; seek median 459-569 ms, slowest 704-1519 ms. The player before
its own framebuffer (noVNC drawing every tile and line): 1.17-1.31 s and
1.86-1.89 s at load 13-16.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import struct
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import Row, median, print_table  # noqa: E402

from testsupport.gateway import ADMIN_PASSWORD, ENCRYPTION_KEY, GatewayProcess  # noqa: E402

MIB = 1024 * 1024
WIDTH, HEIGHT = 1280, 800
TILE = 16
KEY_FRAME_SECONDS = 10.0
# noVNC's pixel format (32 bpp, little-endian, red at bit 0): what the relay records
PIXEL_FORMAT = struct.pack(">BBBBHHHBBBxxx", 32, 24, 0, 1, 255, 255, 255, 0, 8, 16)
NAME = b"office desktop"
CHROMIUM = "/usr/bin/chromium"
CANVAS_COLOURS = """(canvas) => {
  if (!canvas || canvas.width === 0) return 0;
  const { data } = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height);
  const seen = new Set();
  for (let i = 0; i < data.length; i += 4 * 97) {
    seen.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
  }
  return seen.size;
}"""
PICTURE = "() => (" + CANVAS_COLOURS + ")(document.querySelector('.screen-box canvas')) > 3"


def server_init() -> bytes:
    """A sync record's body: the ServerInit the relay writes before each key frame."""
    return struct.pack(">HH", WIDTH, HEIGHT) + PIXEL_FORMAT + struct.pack(">I", len(NAME)) + NAME


def pixel(rng: random.Random) -> bytes:
    return bytes((rng.randrange(256), rng.randrange(256), rng.randrange(256), 0))


def key_frame(rng: random.Random) -> bytes:
    """A full-screen Hextile FramebufferUpdate: mostly one-colour tiles, some raw."""
    tiles = bytearray()
    for _ in range((WIDTH // TILE) * (HEIGHT // TILE)):
        if rng.random() < 0.08:
            tiles += b"\x01" + rng.randbytes(TILE * TILE * 4)  # Raw
        else:
            tiles += b"\x02" + pixel(rng)  # BackgroundSpecified
    rect = struct.pack(">HHHHi", 0, 0, WIDTH, HEIGHT, 5)
    return struct.pack(">BxH", 0, 1) + rect + bytes(tiles)


def strip(rng: random.Random) -> bytes:
    """A small incremental update: a 128x16 raw strip somewhere on the screen."""
    x, y = rng.randrange(0, WIDTH - 128, 8), rng.randrange(0, HEIGHT - 16, 16)
    rect = struct.pack(">HHHHi", x, y, 128, 16, 0)
    return struct.pack(">BxH", 0, 1) + rect + rng.randbytes(128 * 16 * 4)


def pointer(rng: random.Random, buttons: int = 0) -> bytes:
    return struct.pack(">BBHH", 5, buttons, rng.randrange(WIDTH), rng.randrange(HEIGHT))


async def write_recording(data_dir: Path, user_id: str, connection_id: str, seconds: int) -> str:
    """The synthetic session: its row, recording file, key frames and events; its id."""
    from hostgate.db.engine import Database
    from hostgate.db.models.sessions import RecordingKeyFrame, RemoteSession, SessionInputEvent
    from hostgate.security.secretbox import SecretBox, parse_key
    from hostgate.services.sessions.recording_format import RecordingWriter, new_key
    from hostgate.services.sessions.stream_recording import StreamRecording
    from hostgate.timefmt import utcnow

    rng = random.Random(33)
    db = Database(f"sqlite+aiosqlite:///{data_dir / 'hostgate.db'}")
    secrets = SecretBox(parse_key(ENCRYPTION_KEY))
    key = new_key()
    now = utcnow()
    row = RemoteSession(
        user_id=user_id,
        username="admin",
        connection_id=connection_id,
        connection_name="office",
        protocol="vnc",
        started_at=now - timedelta(seconds=seconds),
        ended_at=now,
        end_reason="closed",
        recording_state="complete",
        recording_format="rfb",
        recording_key=secrets.seal(key),
    )
    row.recording_file = f"{row.id}.rfb"
    directory = data_dir / "recordings"
    directory.mkdir(mode=0o700, exist_ok=True)
    writer = RecordingWriter(directory / row.recording_file, key)
    meta = {"protocol": "vnc", "format": "rfb", "timestamp": int(time.time()), "title": "office"}
    recording = StreamRecording(writer, started=time.monotonic(), meta=meta, limit=None)
    recording.start()
    frames: list[tuple[int, int]] = []
    events: list[tuple[int, str]] = []
    queued = 0
    for tenth in range(seconds * 10):
        # the recorder stamps records from ``started``: move it so that now is ``tenth``
        recording.started = time.monotonic() - tenth / 10
        elapsed = tenth * 100
        if tenth % int(KEY_FRAME_SECONDS * 10) == 0:
            sync = recording.sync(server_init())
            assert sync is not None, recording.stopped
            picture = key_frame(rng)
            recording.server(picture)
            frames.append((sync, elapsed))
            queued += len(picture)
        if tenth % 2 == 0:
            update = strip(rng)
            recording.server(update)
            queued += len(update)
        recording.client(pointer(rng))
        if tenth % 50 == 25:
            recording.client(pointer(rng, 1) + pointer(rng, 0))
            events.append((elapsed, "click"))
        if tenth % 200 == 120:
            for _ in range(8):
                recording.client(struct.pack(">BBxxI", 4, 1, 0) + struct.pack(">BBxxI", 4, 0, 0))
            events.append((elapsed, "key"))
        if queued > 2 * MIB:  # let the writer task catch up (it stops past MAX_BEHIND)
            queued = 0
            while recording.size - writer.size > MIB:
                await asyncio.sleep(0.01)
    state, size, _ = await recording.close()
    assert state == "complete", state
    row.recording_size = size
    async with db.session() as session:
        session.add(row)
        await session.flush()
        for offset, elapsed in frames:
            session.add(RecordingKeyFrame(session_id=row.id, elapsed=elapsed, offset=offset))
        for elapsed, kind in events:
            session.add(SessionInputEvent(session_id=row.id, elapsed=elapsed, event_type=kind))
        await session.commit()
    await db.close()
    return row.id


def clock_pattern(seconds: float) -> str:
    """The player's position text (m:ss.d, tenths cut) near ``seconds``, as a regex start.

    A tenth either way: the position bar's 0.1 s steps are floats (39.9 shows as 39.8).
    """
    shown = []
    for near in (seconds - 0.05, seconds + 0.05):
        whole = int(near)
        tenths = int((near - whole) * 10)
        shown.append(re.escape(f"{whole // 60}:{whole % 60:02d}.{tenths} / "))
    return "^(" + "|".join(shown) + ")"


def measure_player(url: str, session_id: str, duration: float, seeks: int) -> dict[str, Any]:
    """Time to the first picture and seek times (ms) in Chromium."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.goto(url + "/")
            page.get_by_label("Username").fill("admin")
            page.get_by_label("Password").fill(ADMIN_PASSWORD)
            page.get_by_role("button", name="Sign in", exact=True).click()
            page.get_by_role("navigation", name="Connections").wait_for()
            firsts = []
            for _ in range(3):
                page.goto(url + "/")
                page.get_by_role("navigation", name="Connections").wait_for()
                began = time.perf_counter()
                page.goto(f"{url}/sessions/{session_id}", wait_until="commit")
                page.wait_for_function(PICTURE, polling="raf", timeout=60_000)
                firsts.append((time.perf_counter() - began) * 1000)
            position = page.get_by_label("Position")
            times = []
            rng = random.Random(7)
            frame_count = int(duration // KEY_FRAME_SECONDS)
            for _ in range(seeks):
                target = rng.randrange(1, frame_count - 1) * KEY_FRAME_SECONDS + 9.9
                began = time.perf_counter()
                position.evaluate(
                    "(input, value) => { input.value = String(value);"
                    " input.dispatchEvent(new Event('change', { bubbles: true })); }",
                    target,
                )
                shows = (
                    "(pattern) => new RegExp(pattern).test("
                    "document.querySelector('.controls .time').textContent)"
                    " && (" + CANVAS_COLOURS + ")(document.querySelector('.screen-box canvas')) > 3"
                )
                page.wait_for_function(
                    shows, arg=clock_pattern(target), polling="raf", timeout=60_000
                )
                times.append((time.perf_counter() - began) * 1000)
        finally:
            browser.close()
    return {"first": firsts, "seeks": times}


def user_id(me: dict[str, Any]) -> str:
    """The signed-in user's id from ``GET /auth/me``."""
    return str(me["user"]["id"] if "user" in me else me["id"])


def run(minutes: int = 60, seeks: int = 8) -> list[Row]:
    """Build the recording, measure the player; the rows."""
    root = Path(tempfile.mkdtemp(prefix="hg-bench-player-"))
    gateway = GatewayProcess(root / "gateway").start()
    try:
        token = gateway.setup_admin()
        headers = {"Authorization": f"Bearer {token}"}
        me = httpx.get(f"{gateway.url}/api/v1/auth/me", headers=headers).json()
        created = httpx.post(
            f"{gateway.url}/api/v1/connections",
            headers=headers,
            json={"name": "office", "protocol": "vnc", "host": "127.0.0.1", "port": 5999},
        )
        created.raise_for_status()
        seconds = minutes * 60
        began = time.monotonic()
        session_id = asyncio.run(
            write_recording(gateway.data_dir, user_id(me), str(created.json()["id"]), seconds)
        )
        print(f"wrote the {minutes}-minute recording in {time.monotonic() - began:.0f} s")
        detail = httpx.get(f"{gateway.url}/api/v1/sessions/{session_id}", headers=headers).json()
        stored = (gateway.data_dir / "recordings" / f"{session_id}.rfb").stat().st_size
        figures = measure_player(gateway.url, session_id, seconds, seeks)
    finally:
        gateway.stop()
    print(f"first picture (ms): {[round(v) for v in figures['first']]}")
    print(f"seeks (ms): {[round(v) for v in figures['seeks']]}")
    return [
        Row(
            f"VNC player, {minutes} min recording: first picture",
            median(figures["first"]),
            "ms",
            target="< 1000 ms",
        ),
        Row(
            "  seek 9.9 s past a key frame, median",
            median(figures["seeks"]),
            "ms",
            target="< 500 ms",
        ),
        Row("  seek, slowest", max(figures["seeks"]), "ms"),
        Row("  recording size", stored / MIB, "MiB"),
        Row("  plaintext bytes", float(detail.get("fileSize", 0)) / MIB, "MiB"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--seeks", type=int, default=8)
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()}")
    print_table(run(args.minutes, args.seeks))
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
