"""Gateway-side VNC recording against a real Xvnc: records, key frames, range reads, caps.

The test plays a small RFB client that accepts only Raw (plus ZRLE and Tight, which
the recording relay must filter out) and decodes what it gets itself, so what the
recording holds is checked by a decoder of its own, not the relay's scanner.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest
from hostgate.services.sessions.stream_recording import (
    CHANNEL_CLIENT,
    CHANNEL_SERVER,
    CHANNEL_SYNC,
    RECORD_HEAD,
    StreamRecord,
    iter_records,
    parse_header,
)
from hostgate_vnc import recording

from testsupport.wire import Wire
from testsupport.xvnc import TEST_PASSWORD

from .test_vnc_relay import server_init, vnc_path

WIDTH, HEIGHT = 800, 600
ZRLE, TIGHT, RAW, DESKTOP_SIZE, CURSOR = 16, 7, 0, -223, -239
PIXEL_FORMAT = struct.pack(">BBBBHHHBBBxxx", 32, 24, 0, 1, 255, 255, 255, 16, 8, 0)


def update_need(message: bytes) -> tuple[int, bool]:
    """Bytes the Raw-only FramebufferUpdate at the start of ``message`` needs, and whether
    that count is final (False: more rectangle headers are still to come)."""
    if len(message) < 4:
        return 4, False
    (count,) = struct.unpack_from(">H", message, 2)
    position = 4
    for _ in range(count):
        if len(message) < position + 12:
            return position + 12, False
        _, _, w, h, encoding = struct.unpack_from(">HHHHi", message, position)
        position += 12
        if encoding == RAW:
            position += w * h * 4
        elif encoding == CURSOR:
            position += w * h * 4 + (w + 7) // 8 * h
        elif encoding != DESKTOP_SIZE:
            raise AssertionError(f"the relay let encoding {encoding} through")
    return position, True


def covered(message: bytes) -> int:
    """Pixels the Raw rectangles of an update cover."""
    (count,) = struct.unpack_from(">H", message, 2)
    position, area = 4, 0
    for _ in range(count):
        _, _, w, h, encoding = struct.unpack_from(">HHHHi", message, position)
        position += 12
        if encoding == RAW:
            area += w * h
            position += w * h * 4
        elif encoding == CURSOR:
            position += w * h * 4 + (w + 7) // 8 * h
    return area


def cursor_rects(message: bytes) -> list[bytes]:
    """The Cursor rectangles (header and body) of a Raw-only update, in order."""
    (count,) = struct.unpack_from(">H", message, 2)
    position, found = 4, []
    for _ in range(count):
        _, _, w, h, encoding = struct.unpack_from(">HHHHi", message, position)
        size = w * h * 4 if encoding == RAW else 0
        if encoding == CURSOR:
            size = w * h * 4 + (w + 7) // 8 * h
            found.append(message[position : position + 12 + size])
        position += 12 + size
    return found


async def read_update(wire: Wire) -> bytes:
    """One FramebufferUpdate, read by its own Raw decoding."""
    message = bytearray(await wire.read(4))
    assert message[0] == 0, f"expected a FramebufferUpdate, got type {message[0]}"
    while True:
        need, final = update_need(bytes(message))
        if final and len(message) >= need:
            return bytes(message)
        message += await wire.read(need - len(message))


async def record_session(
    client: Any,
    kernel: Any,
    user: Any,
    connection_id: str,
    *,
    full_updates: int,
    cursor: bool = False,
) -> None:
    """A noVNC-like session: Raw only, a click and a key, until ``full_updates`` full screens."""
    async with client.websocket(vnc_path(kernel, user, connection_id)) as socket:
        wire = Wire(socket)
        assert await wire.read(12) == b"RFB 003.008\n"
        await wire.send(b"RFB 003.008\n")
        assert await wire.read(2) == bytes([1, 1])
        await wire.send(bytes([1]))
        assert await wire.read(4) == struct.pack(">I", 0)
        await wire.send(bytes([1]))
        assert (await server_init(wire))[:2] == (WIDTH, HEIGHT)
        await wire.send(bytes([0, 0, 0, 0]) + PIXEL_FORMAT)
        encodings = [ZRLE, TIGHT, RAW, DESKTOP_SIZE] + ([CURSOR] if cursor else [])
        await wire.send(struct.pack(f">BxH{len(encodings)}i", 2, len(encodings), *encodings))
        await wire.send(struct.pack(">BBHH", 5, 1, 10, 20))  # left button down: a click
        await wire.send(struct.pack(">BBHH", 5, 0, 10, 20))
        await wire.send(struct.pack(">BBxxI", 4, 1, 0x61))  # "a" down
        await wire.send(struct.pack(">BBxxI", 4, 0, 0x61))
        await wire.send(recording.update_request(WIDTH, HEIGHT))
        seen = 0
        while seen < full_updates:
            # the first full update answers our request; the rest the relay's key frame requests
            update = await read_update(wire)
            if covered(update) >= WIDTH * HEIGHT:
                seen += 1


async def ended_session(client: Any, user: Any) -> dict[str, Any]:
    """The user's one session once it has ended (the socket's close ends it a moment later)."""
    for _ in range(1000):
        listed = await (await client.get("/api/v1/sessions", headers=user.headers)).get_json()
        [entry] = listed["sessions"]
        if entry["endedAt"] is not None:
            return dict(entry)
        await asyncio.sleep(0.01)
    raise AssertionError("the session never ended")


def server_segments(records: list[StreamRecord]) -> dict[int, bytes]:
    """The server's bytes after each sync record (by its offset), up to the next one."""
    segments: dict[int, bytearray] = {}
    current: bytearray | None = None
    for record in records:
        if record.channel == CHANNEL_SYNC:
            current = segments.setdefault(record.offset, bytearray())
        elif record.channel == CHANNEL_SERVER:
            assert current is not None
            current += record.data
    return {offset: bytes(data) for offset, data in segments.items()}


def split_updates(data: bytes) -> list[bytes]:
    """Whole Raw FramebufferUpdates, nothing left over."""
    updates = []
    while data:
        assert data[0] == 0
        need, final = update_need(data)
        assert final and need <= len(data)
        updates.append(data[:need])
        data = data[need:]
    return updates


def records_of(data: bytes) -> tuple[dict[str, Any], list[StreamRecord]]:
    meta, start = parse_header(data)
    records = list(iter_records(data, start))
    assert (
        sum(RECORD_HEAD.size + len(r.data) for r in records) == len(data) - start
    )  # nothing left over
    return meta, records


@pytest.fixture
def quick_key_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recording, "KEY_FRAME_SECONDS", 0.2)


async def test_a_session_is_recorded_with_key_frames_and_read_by_range(
    client, kernel, make_user, make_connection, xvnc, quick_key_frames
):
    user = await make_user("alice")
    connection = await make_connection(
        user, "vnc", xvnc.host, xvnc.port, name="desk", password=TEST_PASSWORD
    )
    await record_session(client, kernel, user, connection.id, full_updates=3)
    entry = await ended_session(client, user)
    assert entry["hasRecording"] is True
    assert entry["recordingState"] == "complete"
    detail = await (
        await client.get(f"/api/v1/sessions/{entry['id']}", headers=user.headers)
    ).get_json()
    assert detail["recordingFormat"] == "rfb"
    url = f"/api/v1/sessions/{entry['id']}/recording"

    response = await client.get(url, headers=user.headers)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/x-hostgate-rfb"
    data = await response.get_data()
    assert entry["fileSize"] == len(data)
    assert TEST_PASSWORD.encode() not in data
    meta, records = records_of(data)
    assert meta["protocol"] == "vnc"
    assert meta["format"] == "rfb"
    first = records[0]
    assert first.channel == CHANNEL_SYNC
    assert struct.unpack(">HH", first.data[:4]) == (WIDTH, HEIGHT)
    assert first.data.endswith(b"hostgate-vnc-test")
    # between two sync records the server's bytes are whole RFB messages: here Raw
    # updates, decoded independently of the relay's scanner
    segments = server_segments(records)
    assert any(segments.values())
    for segment in segments.values():
        split_updates(segment)
    # input: the key without its keysym, the pointer as it was
    inputs = [r.data for r in records if r.channel == CHANNEL_CLIENT]
    assert struct.pack(">BBxxI", 4, 1, 0) in inputs
    assert struct.pack(">BBHH", 5, 1, 10, 20) in inputs
    assert all(struct.pack(">I", 0x61) not in item for item in inputs if item[0] == 4)
    times = [r.elapsed_ms for r in records]
    assert times == sorted(times)

    index = await (await client.get(f"{url}/keyframes", headers=user.headers)).get_json()
    frames = index["keyFrames"]
    assert len(frames) >= 1
    by_offset = {r.offset: r for r in records}
    for frame in frames:
        sync = by_offset[frame["offset"]]
        assert sync.channel == CHANNEL_SYNC
        assert struct.unpack(">HH", sync.data[:4]) == (WIDTH, HEIGHT)
        first_update = split_updates(segments[sync.offset])[0]
        assert covered(first_update) >= WIDTH * HEIGHT
        assert sync.elapsed_ms == frame["elapsed"]

    # a seek: a Range read from the last key frame holds exactly the rest
    offset = frames[-1]["offset"]
    ranged = await client.get(url, headers={**user.headers, "Range": f"bytes={offset}-"})
    assert ranged.status_code == 206
    assert ranged.headers["Content-Range"] == f"bytes {offset}-{len(data) - 1}/{len(data)}"
    tail = await ranged.get_data()
    assert tail == data[offset:]
    assert next(iter_records(tail, 0)).channel == CHANNEL_SYNC

    events = await (await client.get(f"{url}/events", headers=user.headers)).get_json()
    kinds = [event["event_type"] for event in events["events"]]
    assert kinds.count("click") == 1
    assert kinds.count("key") == 1


async def test_the_pointer_shape_is_recorded_and_repeated_at_key_frames(
    client, kernel, make_user, make_connection, xvnc, quick_key_frames
):
    user = await make_user("alice")
    connection = await make_connection(
        user, "vnc", xvnc.host, xvnc.port, name="desk", password=TEST_PASSWORD
    )
    await record_session(client, kernel, user, connection.id, full_updates=3, cursor=True)
    entry = await ended_session(client, user)
    url = f"/api/v1/sessions/{entry['id']}/recording"
    _, records = records_of(await (await client.get(url, headers=user.headers)).get_data())
    index = await (await client.get(f"{url}/keyframes", headers=user.headers)).get_json()
    key_frames = {frame["offset"] for frame in index["keyFrames"]}
    assert len(key_frames) >= 2
    last: bytes | None = None  # the last shape Xvnc sent, in the order recorded
    repeated = 0
    for offset, segment in server_segments(records).items():
        updates = split_updates(segment)
        if offset in key_frames and last is not None:
            # the key frame's segment starts with the shape again, in an update of its own
            assert updates[0] == struct.pack(">BxH", 0, 1) + last
            assert covered(updates[1]) >= WIDTH * HEIGHT
            repeated += 1
        for update in updates:
            last = ([last] + cursor_rects(update))[-1]
    assert last is not None, "Xvnc sends the pointer's shape to a client that asks for it"
    assert repeated >= 1


async def test_the_size_cap_stops_the_recording_not_the_session(
    client, kernel, make_user, make_connection, xvnc, admin
):
    await client.put(
        "/api/v1/settings", json={"recordings.max_size_mb": 0.5}, headers=admin.headers
    )
    user = await make_user("alice")
    connection = await make_connection(user, "vnc", xvnc.host, xvnc.port, password=TEST_PASSWORD)
    # one full 800x600 Raw screen is 1.9 MB: past the cap, the session still gets it
    await record_session(client, kernel, user, connection.id, full_updates=1)
    entry = await ended_session(client, user)
    assert entry["recordingState"] == "stopped"
    detail = await (
        await client.get(f"/api/v1/sessions/{entry['id']}", headers=user.headers)
    ).get_json()
    assert detail["recordingNote"] == "size_limit"
    data = await (
        await client.get(f"/api/v1/sessions/{entry['id']}/recording", headers=user.headers)
    ).get_data()
    assert 0 < len(data) <= 0.5 * 1024 * 1024
    _, records = records_of(data)
    assert records[0].channel == CHANNEL_SYNC


async def test_retention_deletes_the_recording_and_its_index(
    client, kernel, make_user, make_connection, xvnc, admin, quick_key_frames
):
    user = await make_user("alice")
    connection = await make_connection(user, "vnc", xvnc.host, xvnc.port, password=TEST_PASSWORD)
    await record_session(client, kernel, user, connection.id, full_updates=2)
    entry = await ended_session(client, user)
    url = f"/api/v1/sessions/{entry['id']}/recording"
    assert (await (await client.get(f"{url}/keyframes", headers=user.headers)).get_json())[
        "keyFrames"
    ]
    await client.put(
        "/api/v1/settings",
        json={"recordings.retention_max_total_mb": 0.001},
        headers=admin.headers,
    )
    assert await kernel.recordings.apply_retention() == 1
    [entry] = (await (await client.get("/api/v1/sessions", headers=user.headers)).get_json())[
        "sessions"
    ]
    assert entry["hasRecording"] is False
    assert (await client.get(url, headers=user.headers)).status_code == 404
    index = await (await client.get(f"{url}/keyframes", headers=user.headers)).get_json()
    assert index["keyFrames"] == []


async def test_recordings_off_relays_without_recording(
    client, kernel, make_user, make_connection, xvnc, admin
):
    await client.put("/api/v1/settings", json={"recordings.enabled": False}, headers=admin.headers)
    user = await make_user("alice")
    connection = await make_connection(user, "vnc", xvnc.host, xvnc.port, password=TEST_PASSWORD)
    async with client.websocket(vnc_path(kernel, user, connection.id)) as socket:
        wire = Wire(socket)
        await wire.read(12)
        await wire.send(b"RFB 003.008\n")
        await wire.read(2)
        await wire.send(bytes([1]))
        await wire.read(4)
        await wire.send(bytes([1]))
        await server_init(wire)
        # not recorded: the browser's encodings reach the server unfiltered (ZRLE here)
        await wire.send(struct.pack(">BxH2i", 2, 2, ZRLE, RAW))
        await wire.send(recording.update_request(WIDTH, HEIGHT))
        head = await wire.read(16)
        assert struct.unpack(">i", head[12:16])[0] == ZRLE
    entry = await ended_session(client, user)
    assert entry["hasRecording"] is False


class Dropped:
    """A recorder that keeps nothing (the client scanner's own behaviour is under test)."""

    active = True

    def sync(self, data: bytes) -> int | None:
        return None

    def key_frame(self, offset: int) -> None:
        return None

    def server(self, data: bytes) -> None:
        return None

    def client(self, data: bytes) -> None:
        return None

    def input_event(self, event_type: str) -> None:
        return None


def test_a_long_paste_passes_through_without_being_held() -> None:
    recorder = Dropped()
    scanner = recording.ClientScanner(recorder, recording.ServerScanner(recorder))
    assert scanner.feed(b"\x01") == b"\x01"  # ClientInit
    announced = 8 * 1024 * 1024
    header = struct.pack(">BxxxI", 6, announced)
    piece = b"p" * (256 * 1024)
    assert scanner.feed(header + piece) == header + piece
    assert not scanner.at_boundary  # the rest of the text is still to come
    sent = len(piece)
    while sent < announced:
        assert scanner.feed(piece) == piece
        sent += len(piece)
    assert scanner.at_boundary
    pointer = struct.pack(">BBHH", 5, 0, 1, 2)
    assert scanner.feed(pointer) == pointer  # and messages are read again after it


class Kept(Dropped):
    """A recorder that keeps what the server scanner hands it, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bytes | int]] = []

    def sync(self, data: bytes) -> int | None:
        self.calls.append(("sync", data))
        return len(self.calls)

    def key_frame(self, offset: int) -> None:
        self.calls.append(("key_frame", offset))

    def server(self, data: bytes) -> None:
        self.calls.append(("server", data))


def test_the_pointer_shape_is_repeated_after_each_key_frame_sync() -> None:
    recorder = Kept()
    now = [0.0]
    scanner = recording.ServerScanner(recorder, clock=lambda: now[0])
    width, height = 4, 2
    name = b"desk"
    scanner.feed(struct.pack(">HH", width, height) + PIXEL_FORMAT + struct.pack(">I", 4) + name)
    # a 2x2 pointer shape (its mask: 1 byte a row), in an update of its own, cut mid-body
    shape = struct.pack(">HHHHi", 1, 1, 2, 2, recording.ENC_CURSOR) + bytes(range(16)) + b"\xc0\x40"
    cursor_update = struct.pack(">BxH", 0, 1) + shape
    full = struct.pack(">BxHHHHHi", 0, 1, 0, 0, width, height, RAW) + b"\x11" * (width * height * 4)
    scanner.feed(cursor_update[:20])
    scanner.feed(cursor_update[20:] + full)
    assert scanner.cursor == shape
    # both updates came while the first key frame was due: each after a sync record;
    # the full one is the key frame, its sync record followed by the shape again
    kinds = [kind for kind, _ in recorder.calls]
    # (the update's own bytes go to the recorder after the read that ended it is parsed)
    assert kinds == ["sync", "sync", "server", "server", "sync", "server", "key_frame", "server"]
    servers = [data for kind, data in recorder.calls if kind == "server"]
    assert b"".join(servers[:2]) == cursor_update  # as read: the shape's body is held whole
    assert servers[2:] == [cursor_update, full]
    recorder.calls.clear()
    now[0] = recording.KEY_FRAME_SECONDS
    scanner.feed(full)
    assert [kind for kind, _ in recorder.calls] == ["sync", "server", "key_frame", "server"]
    assert recorder.calls[1][1] == cursor_update  # the shape again, right after the sync record
    assert recorder.calls[3][1] == full
    # a shape past MAX_CURSOR is not kept (nor repeated)
    big = 200
    body = bytes(big * big * 4 + (big // 8) * big)
    huge = struct.pack(">BxHHHHHi", 0, 1, 0, 0, big, big, recording.ENC_CURSOR) + body
    scanner.feed(huge)
    assert scanner.cursor is None
    assert not scanner.broken
