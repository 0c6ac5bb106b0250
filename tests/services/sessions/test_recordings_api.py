"""Recordings over HTTP: asciicast content, Range reads, RDP uploads, input events, access."""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

from hostgate.db.models.sessions import RemoteSession

from tests.services.sessions.helpers import Screen, socket_path, ticket_for
from testsupport.asyncssh_shell import PtyProcess
from testsupport.peers import peer_unavailable


async def record_session(client: Any, kernel: Any, user: Any, connection: Any) -> str:
    path = socket_path("localshell", ticket_for(kernel, user), connection.id, cols=90, rows=25)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.run("echo recorded-$((40+2)) 'é'", "recorded-42")
        await screen.resize(100, 30)
        await screen.run("stty size", "30 100")
        await screen.send("exit\r")
        await screen.until_closed()
    body = await (await client.get("/api/v1/sessions", headers=user.headers)).get_json()
    return str(body["sessions"][0]["id"])


async def test_terminal_recording_is_asciicast_v2(client, kernel, shell_connection, tmp_path):
    user, connection = shell_connection
    session_id = await record_session(client, kernel, user, connection)
    response = await client.get(f"/api/v1/sessions/{session_id}/recording", headers=user.headers)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/x-asciicast"
    assert response.headers["Accept-Ranges"] == "bytes"
    data = await response.get_data()
    assert int(response.headers["Content-Length"]) == len(data)
    lines = data.decode().splitlines()
    header = json.loads(lines[0])
    assert header["version"] == 2
    assert (header["width"], header["height"]) == (90, 25)
    assert isinstance(header["timestamp"], int)
    assert header["env"]["TERM"] == "xterm-256color"
    assert header["env"]["SHELL"]
    events = [json.loads(line) for line in lines[1:]]
    assert all(isinstance(e[0], float | int) and e[1] in ("o", "r") for e in events)
    assert [e[2] for e in events if e[1] == "r"] == ["100x30"]
    output = "".join(e[2] for e in events if e[1] == "o")
    assert "recorded-42 é" in output
    times = [e[0] for e in events]
    assert times == sorted(times)

    asciinema = shutil.which("asciinema")
    if asciinema is None:
        peer_unavailable("asciinema", "the asciinema CLI is not installed")
    cast = tmp_path / "session.cast"
    cast.write_bytes(data)
    played = await play_with_asciinema(asciinema, cast)
    assert b"recorded-42" in played

    # the file on disk is encrypted
    files = list((kernel.config.data_dir / "recordings").iterdir())
    assert len(files) == 1
    assert b"recorded-42" not in files[0].read_bytes()


async def test_recording_playback_is_audited(client, kernel, shell_connection, admin):
    user, connection = shell_connection
    session_id = await record_session(client, kernel, user, connection)
    url = f"/api/v1/sessions/{session_id}/recording"
    assert (await client.get(url, headers=admin.headers)).status_code == 200
    assert (
        await client.get(url, headers={**user.headers, "Range": "bytes=0-9"})
    ).status_code == 206
    assert (
        await client.get(url, headers={**user.headers, "Range": "bytes=5-9"})
    ).status_code == 206
    response = await client.get(
        "/api/v1/audit?eventType=session.recording_viewed", headers=admin.headers
    )
    entries = (await response.get_json())["entries"]
    assert sorted(e["username"] for e in entries) == ["admin", "alice"]
    assert all(e["details"]["sessionId"] == session_id for e in entries)


async def test_recording_access_is_owner_or_view_any(client, kernel, shell_connection, make_user):
    user, connection = shell_connection
    session_id = await record_session(client, kernel, user, connection)
    stranger = await make_user("eve")
    viewer = await make_user("auditor", permissions=["sessions.view_any"])
    for suffix in ("recording", "commands", "recording/events"):
        url = f"/api/v1/sessions/{session_id}/{suffix}"
        assert (await client.get(url, headers=stranger.headers)).status_code == 403, suffix
        assert (await client.get(url, headers=viewer.headers)).status_code == 200, suffix
        assert (await client.get(url)).status_code == 401, suffix
        missing = await client.get(f"/api/v1/sessions/nope/{suffix}", headers=user.headers)
        assert missing.status_code == 404


async def test_session_without_recording(client, kernel, shell_connection, admin):
    user, connection = shell_connection
    await client.put("/api/v1/settings", json={"recordings.enabled": False}, headers=admin.headers)
    path = socket_path("localshell", ticket_for(kernel, user), connection.id, cols=80, rows=24)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.send("exit\r")
        await screen.until_closed()
    [entry] = (await (await client.get("/api/v1/sessions", headers=user.headers)).get_json())[
        "sessions"
    ]
    assert entry["hasRecording"] is False
    assert entry["fileSize"] == 0
    response = await client.get(f"/api/v1/sessions/{entry['id']}/recording", headers=user.headers)
    assert response.status_code == 404


async def test_recording_size_cap(client, kernel, shell_connection, admin):
    user, connection = shell_connection
    await client.put(
        "/api/v1/settings", json={"recordings.max_size_mb": 0.002}, headers=admin.headers
    )
    path = socket_path("localshell", ticket_for(kernel, user), connection.id, cols=80, rows=24)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.run("seq 1 3000; echo done-$((1+1))", "done-2")
        await screen.send("exit\r")
        await screen.until_closed()
    [row] = await all_rows(kernel)
    assert row.recording_state == "stopped"
    assert row.recording_note == "size_limit"
    response = await client.get(f"/api/v1/sessions/{row.id}/recording", headers=user.headers)
    data = await response.get_data()
    assert 0 < len(data) <= 2097
    for line in data.decode().splitlines():
        json.loads(line)


async def all_rows(kernel: Any) -> list[RemoteSession]:
    from sqlmodel import select

    async with kernel.db.session() as db:
        return list((await db.exec(select(RemoteSession))).all())


async def play_with_asciinema(asciinema: str, cast: Any) -> bytes:
    """``asciinema cat`` needs a terminal: run it under a PTY and collect what it prints."""
    env = {**os.environ, "LANG": "C.UTF-8", "TERM": "xterm-256color"}
    player = await PtyProcess.spawn([asciinema, "cat", str(cast)], env=env)
    output = bytearray()
    try:
        while chunk := await player.read():
            output += chunk
        assert await player.process.wait() == 0, bytes(output[-500:])
    finally:
        await player.close()
    return bytes(output)
