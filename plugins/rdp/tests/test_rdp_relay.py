"""The rdp relay (RDCleanPath proxy) against a real xrdp: the test plays IronRDP."""

from __future__ import annotations

import asyncio
import struct
from typing import Any
from urllib.parse import urlencode

import pytest
from hostgate import ProtocolSpec, hookimpl
from hostgate.app import create_app
from hostgate.plugins import PluginConflict
from hostgate_rdp import plugin as rdp_plugin

from tests.services.sessions.helpers import ticket_for
from testsupport.peers import free_port
from testsupport.wire import Wire

from .rdpclient import (
    PROTOCOL_HYBRID,
    PROTOCOL_RDP,
    PROTOCOL_SSL,
    cleanpath_request,
    connection_request,
    mcs_connect_initial,
    read_cleanpath,
    selected_protocol,
)


def rdp_path(kernel: Any, user: Any, connection_id: str, alias: str = "rdp-raw") -> str:
    query = urlencode({"ticket": ticket_for(kernel, user), "connectionId": connection_id})
    return f"/ws/{alias}?{query}"


async def create_rdp(client: Any, user: Any, host: str, port: int, *, skip: bool) -> str:
    """A connection made over the API, as the web UI does (skipCertValidation is a field)."""
    response = await client.post(
        "/api/v1/connections",
        headers=user.headers,
        json={
            "name": "xrdp",
            "protocol": "rdp",
            "host": host,
            "port": port,
            "username": "someone",
            "password": "rdp-secret",
            "skipCertValidation": skip,
        },
    )
    assert response.status_code == 201, await response.get_data()
    return str((await response.get_json())["id"])


async def read_pdu(wire: Wire) -> dict[str, Any]:
    """One RDCleanPath PDU (a DER SEQUENCE with a two-byte long-form length or short)."""
    head = await wire.read(2)
    assert head[0] == 0x30
    if head[1] < 0x80:
        return read_cleanpath(head + await wire.read(head[1]))
    extra = await wire.read(head[1] & 0x7F)
    length = int.from_bytes(extra, "big")
    return read_cleanpath(head + extra + await wire.read(length))


async def read_tpkt(wire: Wire) -> bytes:
    header = await wire.read(4)
    assert header[0] == 3
    (length,) = struct.unpack(">H", header[2:4])
    return header + await wire.read(length - 4)


async def session_end_reason(client: Any, user: Any) -> str:
    response = await client.get(
        "/api/v1/audit?eventType=connection.session_ended", headers=user.headers
    )
    [entry] = (await response.get_json())["entries"]
    return str(entry["details"]["reason"])


async def test_cleanpath_handshake_and_relay_through_tls(client, kernel, make_user, xrdp):
    user = await make_user("alice")
    connection_id = await create_rdp(client, user, xrdp.host, xrdp.port, skip=True)
    async with client.websocket(rdp_path(kernel, user, connection_id)) as socket:
        wire = Wire(socket)
        await wire.send(cleanpath_request(connection_request(PROTOCOL_SSL | PROTOCOL_HYBRID)))
        answer = await read_pdu(wire)
        assert answer["version"] == 3390
        assert answer["error"] is None
        assert selected_protocol(answer["x224"]) == (0x02, PROTOCOL_SSL)
        assert answer["chain"][0] == xrdp.cert_der
        assert answer["serverAddr"] == f"127.0.0.1:{xrdp.port}"
        # From here the socket carries the plaintext of the TLS session with xrdp.
        await wire.send(mcs_connect_initial())
        response = await read_tpkt(wire)
        assert response[4:7] == b"\x02\xf0\x80"  # X.224 Data
        assert response[7:9] == b"\x7f\x66"  # MCS Connect Response
    listed = await (await client.get("/api/v1/sessions", headers=user.headers)).get_json()
    [entry] = listed["sessions"]
    assert entry["protocol"] == "rdp"
    assert entry["connectionName"] == "xrdp"


async def test_certificate_is_verified_unless_skipped(client, kernel, make_user, xrdp, monkeypatch):
    user = await make_user("alice")
    connection_id = await create_rdp(client, user, xrdp.host, xrdp.port, skip=False)
    request = cleanpath_request(connection_request(PROTOCOL_SSL))
    async with client.websocket(rdp_path(kernel, user, connection_id)) as socket:
        wire = Wire(socket)
        await wire.send(request)
        answer = await read_pdu(wire)
        assert answer["error"] == {"errorCode": 1, "httpStatusCode": 502}
        assert answer["chain"] is None
        assert await wire.until_closed() == 4003
    assert "certificate is not trusted" in await session_end_reason(client, user)

    # Trusting the server's (self-signed) certificate makes the same connection work.
    monkeypatch.setenv("SSL_CERT_FILE", str(xrdp.cert_path))
    async with client.websocket(rdp_path(kernel, user, connection_id, alias="rdp")) as socket:
        wire = Wire(socket)
        await wire.send(request)
        answer = await read_pdu(wire)
        assert answer["error"] is None
        assert answer["chain"][0] == xrdp.cert_der


async def test_negotiation_failure_carries_the_servers_answer(client, kernel, make_user, xrdp):
    user = await make_user("alice")
    connection_id = await create_rdp(client, user, xrdp.host, xrdp.port, skip=True)
    async with client.websocket(rdp_path(kernel, user, connection_id)) as socket:
        wire = Wire(socket)
        await wire.send(cleanpath_request(connection_request(PROTOCOL_RDP)))
        answer = await read_pdu(wire)
        assert answer["error"]["errorCode"] == 2
        assert selected_protocol(answer["x224"]) == (0x03, 1)  # SSL_REQUIRED_BY_SERVER
        assert await wire.until_closed() == 4003
    assert "requires TLS" in await session_end_reason(client, user)


async def test_malformed_requests_close_with_4004(client, kernel, make_user, xrdp):
    user = await make_user("alice")
    connection_id = await create_rdp(client, user, xrdp.host, xrdp.port, skip=True)
    bad = [
        b"GET / HTTP/1.1\r\n\r\n",
        cleanpath_request(None),
        cleanpath_request(connection_request(PROTOCOL_SSL), version=3389),
        cleanpath_request(b"\x03\x00\x00\x08\x02\xf0\x80\x00"),  # not a Connection Request
        b"\x30\x03\x04\x01\x00",  # a SEQUENCE, but not of RDCleanPath fields
        b"\x30\x80\x00\x00",  # indefinite length: BER, not DER
    ]
    for frame in bad:
        async with client.websocket(rdp_path(kernel, user, connection_id)) as socket:
            wire = Wire(socket)
            await wire.send(frame)
            answer = await read_pdu(wire)
            assert answer["error"] == {"errorCode": 1, "httpStatusCode": 400}, frame
            assert await wire.until_closed() == 4004, frame


async def test_request_split_over_frames_and_unsupported_blob(client, kernel, make_user, xrdp):
    user = await make_user("alice")
    connection_id = await create_rdp(client, user, xrdp.host, xrdp.port, skip=True)
    request = cleanpath_request(connection_request(PROTOCOL_SSL))
    async with client.websocket(rdp_path(kernel, user, connection_id)) as socket:
        wire = Wire(socket)
        await wire.send(request[:1])
        await wire.send(request[1:10])
        await wire.send(request[10:])
        assert (await read_pdu(wire))["chain"][0] == xrdp.cert_der

    blob = cleanpath_request(connection_request(PROTOCOL_SSL), preconnection_blob="vm-id")
    async with client.websocket(rdp_path(kernel, user, connection_id)) as socket:
        wire = Wire(socket)
        await wire.send(blob)
        assert (await read_pdu(wire))["error"] == {"errorCode": 1, "httpStatusCode": 501}
        assert await wire.until_closed() == 4003


async def test_unreachable_server(client, kernel, make_user):
    user = await make_user("alice")
    connection_id = await create_rdp(client, user, "127.0.0.1", free_port(), skip=True)
    async with client.websocket(rdp_path(kernel, user, connection_id)) as socket:
        wire = Wire(socket)
        await wire.send(cleanpath_request(connection_request(PROTOCOL_SSL)))
        assert (await read_pdu(wire))["error"] == {"errorCode": 1, "httpStatusCode": 502}
        assert await wire.until_closed() == 4003
    assert "Cannot reach the RDP server" in await session_end_reason(client, user)


async def test_a_target_the_network_policy_refuses_is_never_dialled(
    client, kernel, make_user, admin
):
    dialled: list[bool] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        dialled.append(True)
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        user = await make_user("alice")
        connection_id = await create_rdp(client, user, "127.0.0.1", port, skip=True)
        await kernel.settings.update({"network.deny": "127.0.0.0/8"})
        async with client.websocket(rdp_path(kernel, user, connection_id)) as socket:
            wire = Wire(socket)
            await wire.send(cleanpath_request(connection_request(PROTOCOL_SSL)))
            assert await wire.until_closed() == 4003
    finally:
        server.close()
        await server.wait_closed()
    assert dialled == []
    response = await client.get("/api/v1/audit?eventType=network.denied", headers=admin.headers)
    [entry] = (await response.get_json())["entries"]
    assert entry["target"] == f"127.0.0.1:{port}"
    assert entry["details"]["reason"] == "matches network.deny entry '127.0.0.0/8'"


async def test_tickets_permissions_and_ownership(client, kernel, make_user, make_connection, xrdp):
    owner = await make_user("alice")
    connection_id = await create_rdp(client, owner, xrdp.host, xrdp.port, skip=True)
    stranger = await make_user("mallory")
    blocked = await make_user("blocked", permissions=[])
    own_blocked = await make_connection(blocked, "rdp", xrdp.host, xrdp.port)
    not_rdp = await make_connection(owner, "vnc", xrdp.host, xrdp.port)
    cases = [
        (f"/ws/rdp-raw?ticket=nope&connectionId={connection_id}", 4001),
        (f"/ws/rdp-raw?connectionId={connection_id}", 4001),
        (f"/ws/rdp-raw?ticket={ticket_for(kernel, owner)}", 4001),
        (rdp_path(kernel, stranger, connection_id), 4002),
        (rdp_path(kernel, owner, not_rdp.id), 4002),
        (rdp_path(kernel, blocked, own_blocked.id), 4003),
    ]
    for path, code in cases:
        async with client.websocket(path) as socket:
            wire = Wire(socket)
            assert await wire.until_closed() == code, path
            assert not wire.buffer, path
    listed = await (await client.get("/api/v1/sessions", headers=owner.headers)).get_json()
    assert listed["sessions"] == []


async def test_owner_gets_the_password_for_the_browsers_own_login(client, make_user, xrdp):
    # IronRDP does CredSSP itself through the tunnel, so its owner's browser needs it.
    user = await make_user("alice")
    connection_id = await create_rdp(client, user, xrdp.host, xrdp.port, skip=True)
    response = await client.get(
        f"/api/v1/connections/{connection_id}/session", headers=user.headers
    )
    body = await response.get_json()
    assert body["password"] == "rdp-secret"
    assert body["skipCertValidation"] is True


class _ClaimsRdpRaw:
    """A pack whose protocol name collides with the rdp pack's socket alias."""

    @hookimpl
    def register_protocols(self) -> list[ProtocolSpec]:
        async def opener(kernel: Any, target: Any) -> Any:
            raise AssertionError("never opened")

        return [ProtocolSpec(name="rdp-raw", default_port=1, open_stream=opener)]


def test_a_socket_alias_cannot_be_claimed_twice(config):
    with pytest.raises(PluginConflict, match="/ws/rdp-raw"):
        create_app(config, plugins=[rdp_plugin, _ClaimsRdpRaw()])
