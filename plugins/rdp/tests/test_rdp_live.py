"""The rdp relay over a real hypercorn server with the ``websockets`` client (as IronRDP)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
import websockets

from tests.services.sessions.live import live_server  # noqa: F401

from .rdpclient import PROTOCOL_SSL, cleanpath_request, connection_request, read_cleanpath


async def rdp_url(server: Any, user: Any, connection_id: str) -> str:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post("/api/v1/auth/ws-ticket", headers=user.headers)
        assert response.status_code == 200
        query = urlencode({"ticket": response.json()["ticket"], "connectionId": connection_id})
    return f"{server.ws_url}/ws/rdp-raw?{query}"


async def test_ironrdp_style_client_over_a_real_socket(live_server, make_user, xrdp):  # noqa: F811
    user = await make_user("alice")
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        created = await http.post(
            "/api/v1/connections",
            headers=user.headers,
            json={
                "name": "xrdp",
                "protocol": "rdp",
                "host": xrdp.host,
                "port": xrdp.port,
                "skipCertValidation": True,
            },
        )
    assert created.status_code == 201
    url = await rdp_url(live_server, user, created.json()["id"])
    async with websockets.connect(url) as socket:
        await socket.send(cleanpath_request(connection_request(PROTOCOL_SSL)))
        answer = read_cleanpath(await socket.recv())
        assert answer["error"] is None
        assert answer["chain"][0] == xrdp.cert_der

    async with websockets.connect(await rdp_url(live_server, user, created.json()["id"])) as socket:
        await socket.send(b"\x30\x03\x04\x01\x00")
        assert read_cleanpath(await socket.recv())["error"]["errorCode"] == 1
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await socket.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4004
    assert "Malformed RDCleanPath request" in closed.value.rcvd.reason
