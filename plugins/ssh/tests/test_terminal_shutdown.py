"""``hostgate serve`` ends open terminals with a close frame (1001) on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import httpx
import websockets

from testsupport.gateway import write_test_config
from testsupport.peers import free_port

KEY = "5a" * 32


async def test_sigterm_closes_terminals_cleanly(sshd, tmp_path: Path):
    port = free_port()
    env = {
        **os.environ,
        "HOSTGATE_ENCRYPTION_KEY": KEY,
        "HOSTGATE_LOG_LEVEL": "WARNING",
        "HOSTGATE_CONFIG": str(write_test_config(tmp_path / "hostgate.toml")),
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hostgate",
        "--data-dir",
        str(tmp_path / "data"),
        "serve",
        "--port",
        str(port),
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=url) as http:
            for _ in range(300):
                try:
                    if (await http.get("/health")).status_code == 200:
                        break
                except httpx.HTTPError:
                    await asyncio.sleep(0.1)
            setup = await http.post(
                "/api/v1/auth/setup",
                json={"username": "root1", "password": "setup-Passw0rd", "displayName": "Root"},
            )
            headers = {"Authorization": f"Bearer {setup.json()['token']}"}
            created = await http.post(
                "/api/v1/connections",
                json={
                    "name": "box",
                    "protocol": "ssh",
                    "host": sshd.host,
                    "port": sshd.port,
                    "username": sshd.username,
                    "password": sshd.password,
                },
                headers=headers,
            )
            assert created.status_code == 201, created.text
            ticket = (await http.post("/api/v1/auth/ws-ticket", headers=headers)).json()["ticket"]
        socket_url = (
            f"ws://127.0.0.1:{port}/ws/ssh?ticket={ticket}"
            f"&connectionId={created.json()['id']}&cols=80&rows=24"
        )
        async with websockets.connect(socket_url) as socket:
            assert json.loads(await socket.recv())["message"] == "Connected"
            process.send_signal(signal.SIGTERM)
            texts: list[str] = []
            try:
                while True:
                    frame = await asyncio.wait_for(socket.recv(), 20)
                    if isinstance(frame, str):
                        texts.append(frame)
            except websockets.ConnectionClosed as closed:
                assert closed.rcvd is not None
                assert (closed.rcvd.code, closed.rcvd.reason) == (1001, "Server shutting down")
            assert json.loads(texts[-1]) == {
                "type": "error",
                "message": "Server shutting down",
                "reason": "shutting_down",
            }
        assert await asyncio.wait_for(process.wait(), 30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
