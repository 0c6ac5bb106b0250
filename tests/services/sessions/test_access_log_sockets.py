"""WebSocket upgrades are in the access log: path without the ticket, user, close code."""

import logging

from tests.services.sessions.helpers import Screen, socket_path, ticket_for
from testsupport.logcapture import json_log  # noqa: F401


async def test_a_terminal_socket_is_logged_without_its_ticket(
    client,
    kernel,
    shell_connection,
    caplog,
    json_log,  # noqa: F811
):
    caplog.set_level(logging.INFO)
    user, connection = shell_connection
    ticket = ticket_for(kernel, user)
    async with client.websocket(socket_path("localshell", ticket, connection.id)) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.send("exit\r")
        assert await screen.until_closed() == 1000
    refused = "refused-ticket-value"
    async with client.websocket(socket_path("localshell", refused, connection.id)) as socket:
        assert await Screen(socket).until_closed() == 4001

    [accepted, denied] = json_log.lines("hostgate.access")
    assert accepted["method"] == "GET" and accepted["path"] == "/ws/localshell"
    assert accepted["status"] == 101 and accepted["user_id"] == user.id
    assert accepted["close"] == 1000
    assert denied["path"] == "/ws/localshell" and denied["user_id"] == "-"
    assert denied["close"] == 4001
    for text in (caplog.text, json_log.text()):
        assert ticket not in text and refused not in text and connection.id not in text
