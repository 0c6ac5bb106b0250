"""A telnet connection is a raw TCP pipe: it must never lead back into the gateway itself.

Against a real ``hostgate serve``, with loopback explicitly allowed by the administrator.
"""

from __future__ import annotations

import asyncio
import json
from urllib.parse import urlencode

import httpx
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from testsupport.gateway import GatewayProcess
from testsupport.peers import free_port


async def test_telnet_cannot_pipe_into_the_gateways_own_api(tmp_path):
    gateway = GatewayProcess(tmp_path / "data").start()
    try:
        headers = {"Authorization": f"Bearer {gateway.setup_admin()}"}
        async with httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=30) as http:
            allowed = await http.put(
                "/api/v1/settings",
                json={"network.allow": "loopback", "network.protected": ""},
            )
            assert allowed.status_code == 200, allowed.text
            for host in ("127.0.0.1", "localhost", "::1", "0.0.0.0"):
                created = await http.post(
                    "/api/v1/connections",
                    json={"name": host, "protocol": "telnet", "host": host, "port": gateway.port},
                )
                assert created.status_code == 201, created.text
                ticket = (await http.post("/api/v1/auth/ws-ticket")).json()["ticket"]
                query = urlencode(
                    {"ticket": ticket, "connectionId": created.json()["id"], "cols": 80, "rows": 24}
                )
                received = bytearray()
                async with connect(f"{gateway.ws_url}/ws/telnet?{query}") as socket:
                    # what an attacker would type: a request to the gateway's own API
                    request = "GET /api/v1/auth/status HTTP/1.0\r\n\r\n"
                    try:
                        await socket.send(json.dumps({"type": "data", "data": request}))
                        while True:
                            frame = await asyncio.wait_for(socket.recv(), 20)
                            received += frame if isinstance(frame, bytes) else frame.encode()
                    except ConnectionClosed:
                        pass
                    assert socket.close_code == 4003, host
                    assert "gateway's own listening address" in (socket.close_reason or "")
                assert b"HTTP/1." not in received and b"needsSetup" not in received
            audit = await http.get("/api/v1/audit", params={"eventType": "network.denied"})
            assert len(audit.json()["entries"]) == 4
        assert gateway.unhandled() == []
    finally:
        gateway.stop()


async def _close_reason(gateway: GatewayProcess, token: str, connection_id: str) -> tuple:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=30) as http:
        ticket = (await http.post("/api/v1/auth/ws-ticket")).json()["ticket"]
    query = urlencode({"ticket": ticket, "connectionId": connection_id, "cols": 80, "rows": 24})
    async with connect(f"{gateway.ws_url}/ws/telnet?{query}") as socket:
        try:
            while True:
                await asyncio.wait_for(socket.recv(), 20)
        except ConnectionClosed:
            pass
        return socket.close_code, socket.close_reason


async def test_a_user_who_may_not_create_connections_cannot_tell_targets_apart(tmp_path):
    gateway = GatewayProcess(tmp_path / "data").start()
    try:
        admin_token = gateway.setup_admin()
        headers = {"Authorization": f"Bearer {admin_token}"}
        async with httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=30) as http:
            await http.put("/api/v1/settings", json={"network.deny": "192.0.2.0/24"})
            role = await http.post(
                "/api/v1/roles", json={"name": "viewer", "permissions": ["connections.use_telnet"]}
            )
            assert role.status_code == 201, role.text
            user = await http.post(
                "/api/v1/users",
                json={"username": "viewer", "password": "viewer password 1", "role": "viewer"},
            )
            assert user.status_code == 201, user.text
            targets = {
                "denied": ("192.0.2.1", 23),
                "closed": ("127.0.0.1", free_port()),
                "gateway": ("127.0.0.1", gateway.port),
            }
            ids = {}
            for name, (host, port) in targets.items():
                created = await http.post(
                    "/api/v1/connections",
                    json={"name": name, "protocol": "telnet", "host": host, "port": port,
                          "shared": True},
                )  # fmt: skip
                assert created.status_code == 201, created.text
                ids[name] = created.json()["id"]
            login = await http.post(
                "/api/v1/auth/login", json={"username": "viewer", "password": "viewer password 1"}
            )
            viewer_token = login.json()["token"]
        seen = {name: await _close_reason(gateway, viewer_token, i) for name, i in ids.items()}
        assert set(seen.values()) == {(4003, "The connection's target cannot be reached")}, seen
        told = {name: await _close_reason(gateway, admin_token, i) for name, i in ids.items()}
        assert len({reason for _, reason in told.values()}) == 3, told
        assert gateway.unhandled() == []
    finally:
        gateway.stop()
