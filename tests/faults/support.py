"""Helpers for the fault tests: killing a server's whole process tree, terminal sockets."""

from __future__ import annotations

import asyncio
import json
import signal
from typing import Any
from urllib.parse import urlencode

import httpx
import psutil

from testsupport.gateway import GatewayProcess


def kill_tree(pid: int) -> None:
    """SIGKILL a process and every descendant (sshd serves each connection in children)."""
    try:
        root = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    family = [root, *root.children(recursive=True)]
    for process in family:
        try:
            process.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(family, timeout=10)


def kill_sshd(server: Any) -> None:
    """The SSH server dies at once, with every session it serves."""
    assert server.process is not None
    kill_tree(server.process.pid)
    server.process.wait(10)
    server.process = None


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def ssh_connection(gateway: GatewayProcess, token: str, server: Any, protocol: str = "ssh") -> str:
    """Create a password connection to ``server``; its id."""
    created = httpx.post(
        f"{gateway.url}/api/v1/connections",
        headers=bearer(token),
        json={
            "name": f"fault {protocol}",
            "protocol": protocol,
            "host": server.host,
            "port": server.port,
            "username": server.username,
            "password": server.password,
        },
        timeout=30,
    )
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


class TerminalSocket:
    """A terminal through ``/ws/ssh`` with the websockets client."""

    def __init__(self, gateway: GatewayProcess, token: str, connection_id: str) -> None:
        self.gateway = gateway
        self.token = token
        self.connection_id = connection_id
        self.socket: Any = None
        self.output = bytearray()
        self.messages: list[dict[str, Any]] = []

    async def open(self) -> TerminalSocket:
        from websockets.asyncio.client import connect

        async with httpx.AsyncClient(base_url=self.gateway.url, timeout=30) as client:
            ticket = await client.post("/api/v1/auth/ws-ticket", headers=bearer(self.token))
        query = urlencode(
            {"ticket": ticket.json()["ticket"], "connectionId": self.connection_id,
             "cols": 80, "rows": 24}
        )  # fmt: skip
        self.socket = await connect(f"{self.gateway.ws_url}/ws/ssh?{query}", open_timeout=30)
        return self

    async def receive(self, timeout: float) -> bool:
        """One frame; False once the socket is closed."""
        from websockets.exceptions import ConnectionClosed

        try:
            frame = await asyncio.wait_for(self.socket.recv(), timeout)
        except ConnectionClosed:
            return False
        if isinstance(frame, bytes):
            self.output += frame
        else:
            self.messages.append(json.loads(frame))
        return True

    async def type(self, text: str) -> None:
        await self.socket.send(json.dumps({"type": "data", "data": text}))

    async def until(self, wanted: bytes, timeout: float = 20) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while wanted not in self.output:
            left = deadline - loop.time()
            if left <= 0 or not await self.receive(left):
                raise AssertionError(f"{wanted!r} not seen in {bytes(self.output[-300:])!r}")

    async def until_closed(self, timeout: float = 30) -> tuple[int | None, str]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while await self.receive(max(0.01, deadline - loop.time())):
            if loop.time() > deadline:
                raise AssertionError("the socket did not close")
        return self.socket.close_code, self.socket.close_reason or ""
