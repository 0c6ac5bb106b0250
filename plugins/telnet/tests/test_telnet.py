"""Telnet terminals through the gateway socket against inetutils telnetd."""

from __future__ import annotations

import json
from typing import Any

from tests.services.sessions.helpers import Screen, socket_path, ticket_for
from testsupport.peers import free_port


async def telnet_connection(make_connection: Any, owner: Any, server: Any, **fields: Any) -> Any:
    return await make_connection(owner, "telnet", server.host, server.port, name="tn", **fields)


async def test_automatic_login_terminal_type_and_window_size(
    client, kernel, make_user, make_connection, telnetd
):
    user = await make_user("alice")
    connection = await telnet_connection(
        make_connection, user, telnetd, username=telnetd.username, password=telnetd.password
    )
    path = socket_path("telnet", ticket_for(kernel, user), connection.id, cols=100, rows=30)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.prompt(timeout=20)
        assert screen.messages[0] == {"type": "status", "message": "Connected"}
        assert telnetd.password.encode() not in screen.output
        await screen.step("echo $TERM", "xterm-256color")
        await screen.step("stty size", "30 100")
        await screen.resize(120, 40)
        await screen.step("stty size", "40 120")
        await screen.step("echo ü-$((6*7))", "ü-42")
        await screen.send("exit\r")
        assert await screen.until_closed() == 1000

    listed = await (await client.get("/api/v1/sessions", headers=user.headers)).get_json()
    [entry] = listed["sessions"]
    assert entry["protocol"] == "telnet" and entry["hasRecording"] is True
    recording = await client.get(f"/api/v1/sessions/{entry['id']}/recording", headers=user.headers)
    lines = (await recording.get_data()).decode().splitlines()
    assert json.loads(lines[0])["width"] == 100
    assert telnetd.password not in "\n".join(lines)
    response = await client.get(f"/api/v1/sessions/{entry['id']}/commands", headers=user.headers)
    commands = [c["command"] for c in (await response.get_json())["commands"]]
    assert "stty size" in commands and "echo ü-$((6*7))" in commands
    assert telnetd.password not in json.dumps(commands)


async def test_manual_login_without_stored_credentials(
    client, kernel, make_user, make_connection, telnetd
):
    user = await make_user("alice")
    connection = await telnet_connection(make_connection, user, telnetd)
    path = socket_path("telnet", ticket_for(kernel, user), connection.id, cols=80, rows=24)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("login: ", 20)
        await screen.send(telnetd.username + "\r")
        await screen.until("Password: ")
        await screen.send(telnetd.password + "\r")
        await screen.prompt()
        await screen.step("echo manual-$((1+1))", "manual-2")


async def test_wrong_password_ends_the_session(client, kernel, make_user, make_connection, telnetd):
    user = await make_user("alice")
    connection = await telnet_connection(
        make_connection, user, telnetd, username=telnetd.username, password="wrong-password"
    )
    path = socket_path("telnet", ticket_for(kernel, user), connection.id, cols=80, rows=24)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        assert await screen.until_closed(20) == 1000
        assert b"Login incorrect" in screen.output
        assert screen.messages[-1]["reason"] == "shell_closed"  # the server hung up


async def test_unreachable_server(client, kernel, make_user, make_connection, telnetd):
    user = await make_user("alice")
    connection = await make_connection(user, "telnet", "127.0.0.1", free_port())
    path = socket_path("telnet", ticket_for(kernel, user), connection.id, cols=80, rows=24)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        assert await screen.until_closed() == 4003
        assert "cannot reach" in screen.messages[-1]["message"]
        assert screen.messages[-1]["reason"] == "unreachable"


async def test_a_password_echoed_by_the_server_is_masked(
    client, kernel, make_user, make_connection, telnetd_echoing
):
    user = await make_user("alice")
    server = telnetd_echoing
    connection = await telnet_connection(
        make_connection, user, server, username=server.username, password=server.password
    )
    path = socket_path("telnet", ticket_for(kernel, user), connection.id, cols=80, rows=24)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.prompt(timeout=20)
        await screen.send("exit\r")
        await screen.until_closed()
    assert b"*" * len(server.password) in screen.output
    assert server.password.encode() not in screen.output
    [entry] = (await (await client.get("/api/v1/sessions", headers=user.headers)).get_json())[
        "sessions"
    ]
    recording = await client.get(f"/api/v1/sessions/{entry['id']}/recording", headers=user.headers)
    assert server.password.encode() not in await recording.get_data()
