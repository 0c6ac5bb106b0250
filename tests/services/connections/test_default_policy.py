"""The target network policy out of the box: loopback, link-local and the cloud metadata
services are refused for terminals, files and relays; the gateway's own port always is;
and a caller who may not create connections cannot tell a closed port from a refusal.

These tests run without the suite's loopback allowance (``TEST_SETTING_DEFAULTS``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import hostgate_ssh.plugin as ssh_plugin
import hostgate_telnet.plugin as telnet_plugin
import hostgate_vnc.plugin as vnc_plugin
import pytest
from hostgate.services.netpolicy import PROTECTED_DEFAULT, name_refusal, parse_rules, refusal

from tests.services.connections.support import audit_entries, send
from tests.services.sessions.helpers import socket_path, ticket_for
from testsupport.peers import free_port
from testsupport.wire import Frames

API = "/api/v1"


@pytest.fixture
def config(config):
    """The shipped defaults: no [settings] from the config file."""
    return config.with_overrides(setting_defaults={})


@pytest.fixture
def plugins() -> list[object]:
    return [ssh_plugin, telnet_plugin, vnc_plugin]


@dataclass
class Listener:
    """A TCP server on loopback that counts the connections it accepts."""

    port: int
    accepted: list[str] = field(default_factory=list)


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    """Listens on 127.0.0.1 and ::1 on one port: any connection the gateway makes shows."""
    found = Listener(free_port())

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        found.accepted.append(str(writer.get_extra_info("peername")[0]))
        writer.close()

    server = await asyncio.start_server(accept, host=["127.0.0.1", "::1"], port=found.port)
    try:
        yield found
    finally:
        server.close()
        await server.wait_closed()


def check(host: str, *addresses: str, allow: str = "") -> str | None:
    rules = parse_rules(allow), (), parse_rules(PROTECTED_DEFAULT)
    named = name_refusal(host, *rules)
    if named is not None:
        return named
    found = refusal(host, [ipaddress.ip_address(a) for a in addresses], *rules)
    return None if found is None else found[1]


@pytest.mark.parametrize(
    ("host", "addresses", "entry"),
    [
        ("127.0.0.1", ["127.0.0.1"], "loopback"),
        ("localhost", ["127.0.0.1", "::1"], "loopback"),
        ("x", ["127.8.9.10"], "loopback"),
        ("x", ["::1"], "loopback"),
        ("x", ["0.0.0.0"], "loopback"),
        ("x", ["::ffff:127.0.0.1"], "loopback"),
        ("x", ["169.254.10.10"], "link-local"),
        ("x", ["fe80::1"], "link-local"),
        ("x", ["169.254.169.254"], "link-local"),
        ("x", ["fd00:ec2::254"], "metadata"),
        ("x", ["100.100.100.200"], "metadata"),
        ("metadata.google.internal", [], "metadata"),
        ("Metadata.Google.Internal.", [], "metadata"),
        ("instance-data", [], "metadata"),
    ],
)
def test_the_default_protects_loopback_link_local_and_metadata(host, addresses, entry):
    assert check(host, *addresses) == (
        f"matches network.protected entry {entry!r} and no network.allow entry"
    )


def test_an_allow_entry_lifts_the_protection_and_the_rest_stays_open():
    assert check("db.example", "203.0.113.7", "10.1.2.3") is None
    assert check("x", "127.0.0.1", allow="loopback") is None
    assert check("x", "::1", allow="::1") is None
    metadata = ("metadata.google.internal", "169.254.169.254")
    assert check(*metadata, allow="metadata, link-local") is None
    # an allow list is still a list: what it does not cover is refused
    assert check("x", "203.0.113.7", allow="loopback") == "not covered by network.allow"


async def test_the_default_settings_read_as_shipped(client, admin):
    response = await client.get(f"{API}/settings", headers=admin.headers)
    settings = (await response.get_json())["settings"]
    assert settings["network.protected"] == "loopback, link-local, metadata"
    assert settings["network.allow"] == "" and settings["network.deny"] == ""


TARGETS = [
    pytest.param("127.0.0.1", id="loopback"),
    pytest.param("::1", id="ipv6-loopback"),
    pytest.param("169.254.169.254", id="metadata-address"),
    pytest.param("metadata.google.internal", id="metadata-name"),
]


async def _connection(client, user, protocol, host, port):
    body = {"name": f"{protocol} {host}", "protocol": protocol, "host": host, "port": port}
    if protocol in ("ssh", "sftp"):
        body.update(username="someone", password="pw-s3cr3t-1")
    response = await client.post(f"{API}/connections", headers=user.headers, json=body)
    assert response.status_code == 201, await response.get_json()
    return (await response.get_json())["id"]


async def _socket_close(client, path: str) -> int:
    async with client.websocket(path) as socket:
        return await Frames(socket).until_closed()


async def _terminal_close(client, path: str) -> tuple[int, str]:
    """A terminal socket's close code and the reason code of its last ``error`` frame."""
    async with client.websocket(path) as socket:
        frames = Frames(socket)
        code = await frames.until_closed()
    return code, json.loads(frames.text_frames[-1])["reason"]


@pytest.mark.parametrize("host", TARGETS)
@pytest.mark.parametrize("kind", ["terminal", "telnet", "files", "relay"])
async def test_the_default_refuses_for_terminals_files_and_relays(
    client, kernel, make_user, listener, kind, host
):
    owner = await make_user("owner")
    port = listener.port if host in ("127.0.0.1", "::1") else 80
    protocol = {"terminal": "ssh", "telnet": "telnet", "files": "ssh", "relay": "vnc"}[kind]
    connection_id = await _connection(client, owner, protocol, host, port)
    if kind == "files":
        response = await client.post(
            f"{API}/sftp/{connection_id}/list", headers=owner.headers, json={"path": "/"}
        )
        body = await response.get_json()
        assert response.status_code == 403 and body["code"] == "target_denied", body
        assert "network.protected" in body["error"]
    elif kind == "relay":
        ticket = ticket_for(kernel, owner)
        path = f"/ws/vnc/{connection_id}?ticket={ticket}"
        assert await _socket_close(client, path) == 4003
    else:
        path = socket_path(protocol, ticket_for(kernel, owner), connection_id, cols=80, rows=24)
        assert await _terminal_close(client, path) == (4003, "network_policy")
    [denied] = await audit_entries(kernel, "network.denied")
    assert denied.details["host"] == host and denied.details["purpose"] == "connection"
    assert "network.protected" in denied.details["reason"]
    assert listener.accepted == []


async def test_the_gateways_own_port_is_refused_even_when_allowed(
    app, client, kernel, admin, make_user, listener
):
    # the listener stands in for the gateway's own socket (the policy holds the config
    # the kernel was assembled with)
    kernel.netpolicy.config = kernel.config.with_overrides(port=listener.port)
    await send(
        client, "PUT", "/settings", admin, {"network.allow": "loopback", "network.protected": ""}
    )
    owner = await make_user("owner")
    for host in ("127.0.0.1", "::1", "localhost"):
        connection_id = await _connection(client, owner, "telnet", host, listener.port)
        path = socket_path("telnet", ticket_for(kernel, owner), connection_id, cols=80, rows=24)
        assert await _terminal_close(client, path) == (4003, "network_policy")
    reasons = {e.details["reason"] for e in await audit_entries(kernel, "network.denied")}
    assert reasons == {"it is the gateway's own listening address"}
    assert listener.accepted == []
    # another port on the same host is a target like any other
    other = Listener(free_port())
    connection_id = await _connection(client, owner, "telnet", "127.0.0.1", other.port)
    path = socket_path("telnet", ticket_for(kernel, owner), connection_id, cols=80, rows=24)
    assert await _terminal_close(client, path) == (4003, "unreachable")  # nobody listens
    assert len(await audit_entries(kernel, "network.denied")) == 3


async def test_failures_read_the_same_to_a_user_who_may_not_create_connections(
    client, kernel, admin, make_user, make_connection, listener
):
    """A refused port, a closed port and an open one that is no SSH server look alike."""
    await send(client, "PUT", "/settings", admin, {"network.deny": "192.0.2.0/24"})
    user = await make_user("viewer", permissions=["connections.use_ssh"])
    closed = free_port()
    targets = {
        "denied": ("192.0.2.1", 22),
        "protected": ("169.254.169.254", 80),
        "closed": ("127.0.0.1", closed),
        "open": ("127.0.0.1", listener.port),  # answers, but is no SSH server
    }
    await send(client, "PUT", "/settings", admin, {"network.allow": "127.0.0.1"})
    answers = {}
    for name, (host, port) in targets.items():
        connection = await make_connection(
            admin, "ssh", host, port, username="u", password="pw-s3cr3t-1", shared=True
        )
        response = await client.post(
            f"{API}/sftp/{connection.id}/list", headers=user.headers, json={"path": "/"}
        )
        answers[name] = (response.status_code, await response.get_json())
    assert answers["closed"] == (
        502,
        {"error": "The connection's target cannot be reached", "code": "target_unreachable"},
    )
    assert all(answer == answers["closed"] for answer in answers.values()), answers
    # a terminal's error frame conceals as much: the policy's refusal reads "unreachable" too
    denied = await make_connection(
        admin, "ssh", "192.0.2.1", 22, username="u", password="pw-s3cr3t-1", shared=True
    )
    path = socket_path("ssh", ticket_for(kernel, user), denied.id, cols=80, rows=24)
    assert await _terminal_close(client, path) == (4003, "unreachable")
    # the administrator, who may create connections, is told what happened
    connection = await make_connection(admin, "ssh", "127.0.0.1", closed, username="u")
    response = await client.post(
        f"{API}/sftp/{connection.id}/list", headers=admin.headers, json={"path": "/"}
    )
    assert (await response.get_json())["code"] == "remote_unreachable"
