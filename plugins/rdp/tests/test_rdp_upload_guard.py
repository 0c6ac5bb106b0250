"""The gateway enforces the browser's RDP recording: a relay whose upload stops is ended.

Against a real xrdp. The test plays IronRDP and the web app's recorder: after the
RDCleanPath handshake it dribbles the bytes of an MCS Connect Initial to the server
(relay traffic that xrdp simply waits to complete) while it does, or does not,
upload recording chunks. The grace is made short through its setting; the
session ticker (once a second) does the rest.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

from hostgate.closereasons import CloseReason
from hostgate.services.sessions.recordings import UPLOAD_HANDED_OVER

from tests.services.sessions.helpers import ticket_for
from testsupport.wire import Wire

from .rdpclient import PROTOCOL_SSL, cleanpath_request, connection_request, mcs_connect_initial
from .test_rdp_relay import create_rdp, read_pdu, session_end_reason

GRACE = 1.0
DRIBBLE = 0.2
"""Seconds between the bytes the test sends through the relay."""
CLOSE_WITHIN = 20.0
"""Upper bound for the guard to act (a failure bound, not a timing assertion)."""


def guarded_path(kernel: Any, user: Any, connection_id: str, recording: str | None) -> str:
    query = {"ticket": ticket_for(kernel, user), "connectionId": connection_id}
    if recording is not None:
        query["recording"] = recording
    return f"/ws/rdp-raw?{urlencode(query)}"


class Dribbler:
    """Sends the MCS Connect Initial one byte at a time: traffic the server just waits on."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.pending = bytearray(mcs_connect_initial() * 4)

    async def step(self) -> bool:
        """One byte, then a short wait for frames; False once the socket closed."""
        if self.wire.closed is not None:
            return False
        await self.wire.socket.send(bytes(self.pending[:1]))
        del self.pending[:1]
        return await self.wire.pump(DRIBBLE)

    async def until_closed(self) -> int:
        """Keep the relay busy until the gateway closes it; the close code."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CLOSE_WITHIN
        while await self.step():
            assert loop.time() < deadline, "the gateway did not end the session"
        assert self.wire.closed is not None
        return self.wire.closed


async def handshake(wire: Wire) -> None:
    await wire.send(cleanpath_request(connection_request(PROTOCOL_SSL)))
    answer = await read_pdu(wire)
    assert answer["error"] is None


async def audit_entries(client: Any, user: Any, event: str) -> list[dict[str, Any]]:
    response = await client.get(f"/api/v1/audit?eventType={event}", headers=user.headers)
    return list((await response.get_json())["entries"])


def relays(kernel: Any) -> list[Any]:
    return [s for s in kernel.terminal_sessions.all() if s.protocol == "rdp" and not s.ended]


async def test_a_relay_lives_while_chunks_come_and_ends_when_they_stop(
    client, kernel, make_user, xrdp
):
    await kernel.settings.update({"recordings.upload_grace_seconds": GRACE})
    user = await make_user("alice")
    connection_id = await create_rdp(client, user, xrdp.host, xrdp.port, skip=True)
    created = await client.post(
        "/api/v1/sessions/rdp-session", headers=user.headers, json={"connectionId": connection_id}
    )
    recording = (await created.get_json())["sessionId"]
    assert recording is not None
    chunk_url = f"/api/v1/sessions/{recording}/recording/chunk"
    async with client.websocket(guarded_path(kernel, user, connection_id, recording)) as socket:
        wire = Wire(socket)
        await handshake(wire)
        dribbler = Dribbler(wire)
        # Uploading: the relay carries traffic for several graces and lives on.
        loop = asyncio.get_running_loop()
        until = loop.time() + 3 * GRACE
        while loop.time() < until:
            sent = await client.post(chunk_url, data=b"\x1a\x45\xdf\xa3", headers=user.headers)
            assert sent.status_code == 200
            assert await dribbler.step(), "the relay ended while chunks were coming"
        assert len(relays(kernel)) == 1
        # Several nodes: the next chunks reach another node, which moves the upload
        # there and stores each chunk's size in the shared row (as append_upload
        # does); this node sees no chunk of its own and still lets the relay live.
        await kernel.live.close_where(
            UPLOAD_HANDED_OVER, reason_code=CloseReason.SHUTTING_DOWN, id=recording
        )
        assert not kernel.recordings.uploading(recording)
        upload_size = 4 * 100
        until = loop.time() + 3 * GRACE
        while loop.time() < until:
            upload_size += 4
            await kernel.recordings.store_state(recording, state="recording", size=upload_size)
            assert await dribbler.step(), "the relay ended while another node took chunks"
        # The uploads stop, the traffic goes on: ended with the reason.
        assert await dribbler.until_closed() == 4003
    assert "Recording required" in await session_end_reason(client, user)
    [entry] = await audit_entries(client, user, "connection.recording_missing")
    assert entry["details"]["recordingSessionId"] == recording
    assert entry["details"]["uploadStarted"] is True
    assert entry["details"]["graceSeconds"] == GRACE
    detail = await (
        await client.get(f"/api/v1/sessions/{recording}", headers=user.headers)
    ).get_json()
    assert detail["recordingState"] == "stopped"
    assert detail["recordingComplete"] is False
    assert detail["recordingNote"] == "upload_stopped"
    assert detail["endedAt"] is not None
    assert detail["hasRecording"] is True  # what was uploaded stays
    late = await client.post(chunk_url, data=b"late", headers=user.headers)
    assert late.status_code == 409


async def test_a_relay_that_never_uploads_is_ended_unless_recordings_are_off(
    client, kernel, make_user, xrdp
):
    await kernel.settings.update(
        {"recordings.upload_grace_seconds": GRACE, "recordings.enabled": False}
    )
    user = await make_user("alice")
    connection_id = await create_rdp(client, user, xrdp.host, xrdp.port, skip=True)
    # Recordings off: nothing to enforce, the busy relay lives past the grace.
    async with client.websocket(guarded_path(kernel, user, connection_id, None)) as socket:
        wire = Wire(socket)
        await handshake(wire)
        dribbler = Dribbler(wire)
        loop = asyncio.get_running_loop()
        until = loop.time() + 3 * GRACE
        while loop.time() < until:
            assert await dribbler.step(), "the relay ended with recordings off"
    assert await audit_entries(client, user, "connection.recording_missing") == []

    # Recordings on, no upload ever (and a recording id that is not the caller's own
    # counts as none): ended after the grace.
    await kernel.settings.update({"recordings.enabled": True})
    path = guarded_path(kernel, user, connection_id, "not-a-recording")
    async with client.websocket(path) as socket:
        wire = Wire(socket)
        await handshake(wire)
        assert await Dribbler(wire).until_closed() == 4003
    [entry] = await audit_entries(client, user, "connection.recording_missing")
    assert entry["details"]["recordingSessionId"] is None
    assert entry["details"]["uploadStarted"] is False
