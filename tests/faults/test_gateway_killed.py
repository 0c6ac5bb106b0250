"""``kill -9`` of the gateway in the middle of a recorded terminal session.

After a restart on the same data directory the session is marked ended, and its
recording holds everything up to the last flush (the ticker flushes every second):
a valid asciicast whose every line is JSON, including the output seen more than a
second before the kill.

A kill -9 during a backup import is covered by ``tests/services/backup/test_crash.py``
(the old state stays, or the complete new one once its commit happened).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from tests.faults.support import TerminalSocket, bearer, ssh_connection
from testsupport.gateway import GatewayProcess


async def test_recording_survives_a_kill_9(sshd: Any, tmp_path: Any) -> None:
    gateway = GatewayProcess(tmp_path / "data").start()
    try:
        token = gateway.setup_admin()
        connection_id = ssh_connection(gateway, token, sshd)
        terminal = await TerminalSocket(gateway, token, connection_id).open()
        await terminal.type("echo flushed-$((40+2))\r")
        await terminal.until(b"flushed-42")
        await asyncio.sleep(2.5)
        await terminal.type("echo maybe-$((40+3))\r")
        gateway.kill()
        gateway.start()
        async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as client:
            listed = (await client.get("/api/v1/sessions", headers=bearer(token))).json()
            [entry] = listed["sessions"]
            assert entry["endedAt"] is not None
            assert entry["recordingState"] == "complete"
            cast = await client.get(f"/api/v1/sessions/{entry['id']}/recording",
                                    headers=bearer(token))  # fmt: skip
        assert cast.status_code == 200
        text = cast.text
        assert text.endswith("\n")
        header, *events = (json.loads(line) for line in text[:-1].split("\n"))
        assert header["version"] == 2
        output = "".join(event[2] for event in events if event[1] == "o")
        assert "flushed-42" in output
        assert entry["fileSize"] == len(cast.content)
    finally:
        gateway.stop()
    assert gateway.unhandled() == []
