"""Command rules on a telnet terminal the gateway logged in to (inetutils telnetd)."""

from __future__ import annotations

from tests.services.sessions.helpers import Screen, socket_path, ticket_for
from tests.services.sessions.test_live_view import audit_entries, until_message


async def test_the_first_command_after_an_automatic_login_is_checked(
    client, kernel, admin, make_user, make_connection, telnetd
):
    user = await make_user("alice")
    connection = await make_connection(
        user, "telnet", telnetd.host, telnetd.port, name="tn",
        username=telnetd.username, password=telnetd.password,
    )  # fmt: skip
    rule = {"name": "no forbidden", "action": "block", "match": "prefix", "pattern": "echo forbid"}
    response = await client.post("/api/v1/command-rules", json=rule, headers=admin.headers)
    assert response.status_code == 201
    path = socket_path("telnet", ticket_for(kernel, user), connection.id, cols=100, rows=30)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.prompt(timeout=20)
        # the login's password prompt was answered by the gateway, not typed: the very
        # first line is a command line, checked as any other
        await screen.send("echo forbidden-$((6*7))\r")
        [blocked] = await until_message(screen, "commandRule")
        assert blocked["state"] == "blocked" and blocked["rule"] == "no forbidden"
        await screen.prompt()
        await screen.step("echo fine-$((2+3))", "fine-5")
        assert b"forbidden-42" not in screen.output
    [entry] = await audit_entries(client, admin, "session.command_blocked")
    assert entry["details"]["command"] == "echo forbidden-$((6*7))"
