"""The ssh terminal through the gateway socket, against OpenSSH sshd and an asyncssh server."""

from __future__ import annotations

import json
from typing import Any

from tests.services.sessions.helpers import Screen, socket_path, ticket_for
from tests.services.sessions.test_recordings_api import play_with_asciinema
from testsupport.peers import peer_unavailable, which


async def ssh_connection(make_connection: Any, owner: Any, server: Any, **secrets: Any) -> Any:
    return await make_connection(
        owner, "ssh", server.host, server.port, name="box", username=server.username, **secrets
    )


def ssh_path(kernel: Any, user: Any, connection_id: str, **extra: Any) -> str:
    return socket_path("ssh", ticket_for(kernel, user), connection_id, **extra)


async def commands_of(client: Any, user: Any) -> tuple[str, list[dict[str, Any]]]:
    listed = await (await client.get("/api/v1/sessions", headers=user.headers)).get_json()
    session_id = listed["sessions"][0]["id"]
    response = await client.get(f"/api/v1/sessions/{session_id}/commands", headers=user.headers)
    return session_id, (await response.get_json())["commands"]


async def test_sshd_session_runs_commands_resizes_and_logs(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    connection = await ssh_connection(make_connection, user, sshd, password=sshd.password)
    async with client.websocket(ssh_path(kernel, user, connection.id)) as socket:
        screen = Screen(socket)
        await screen.resize(100, 31)
        await screen.until("$ ")
        assert screen.messages[0] == {"type": "status", "message": "Connected"}
        await screen.step("PS1='$ '; echo $TERM", "xterm-256color")
        await screen.step("stty size", "31 100")
        await screen.resize(132, 43)
        await screen.step("stty size", "43 132")
        await screen.step("whoami", f"\r{sshd.username}\r\n")
        # the prompts are spelled so that only the program's output, not the echo of the
        # command line, contains them: the secret is typed once the prompt is showing
        sudo_like = "python3 -c \"import getpass; getpass.getpass('[sudo] password ' + 'for x: ')\""
        await screen.run(sudo_like, "[sudo] password for x: ")
        await screen.send("Sudo-Secret-123\r")
        await screen.prompt()
        await screen.run("read -s -p 'Pass''word: ' pw; echo; echo got-${#pw}", "Password: ")
        await screen.send("Read-Secret-456\r")
        await screen.until("got-15")
        await screen.prompt()
        await screen.run("exit", "logout")
        assert await screen.until_closed() == 1000
        assert screen.messages[-1]["reason"] == "shell_closed"

    session_id, commands = await commands_of(client, user)
    texts = [c["command"] for c in commands]
    assert "whoami" in texts
    assert texts.count("[password]") == 2
    assert "Secret" not in json.dumps(commands)
    whoami = next(c for c in commands if c["command"] == "whoami")
    assert whoami["output_preview"] == sshd.username
    assert all(isinstance(c["elapsed"], int) for c in commands)

    response = await client.get(f"/api/v1/sessions/{session_id}/recording", headers=user.headers)
    cast = await response.get_data()
    lines = cast.decode().splitlines()
    header = json.loads(lines[0])
    assert (header["width"], header["height"]) == (100, 31)
    assert header["env"]["TERM"] == "xterm-256color"
    events = [json.loads(line) for line in lines[1:]]
    assert [e[2] for e in events if e[1] == "r"] == ["132x43"]
    asciinema = which("asciinema")
    if asciinema is None:
        peer_unavailable("asciinema", "the asciinema CLI is not installed")
    path = tmp_path / "ssh.cast"
    path.write_bytes(cast)
    played = await play_with_asciinema(asciinema, path)
    assert b"43 132" in played


async def test_pasted_lines_are_logged_once_each(client, kernel, make_user, make_connection, sshd):
    """A paste of 2 and 3 lines, plain and bracketed (as xterm.js sends it once bash asks)."""
    user = await make_user("alice")
    connection = await ssh_connection(make_connection, user, sshd, password=sshd.password)
    async with client.websocket(ssh_path(kernel, user, connection.id)) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.step("PS1='$ '", "PS1")
        # plain: every line break is Enter
        await screen.send("echo a-$((0+1))\recho b-$((0+2))\r")
        await screen.until("b-2\r\n")
        await screen.prompt()
        await screen.send("echo c-$((0+3))\recho d-$((0+4))\recho e-$((0+5))\r")
        await screen.until("e-5\r\n")
        await screen.prompt()
        # bracketed: bash shows the block and runs it on the next Enter
        for block, last in (
            ("echo f-$((0+6))\recho g-$((0+7))\r", "g-7"),
            ("echo h-$((0+8))\recho i-$((0+9))\recho j-$((1+9))", "j-10"),
        ):
            await screen.send(f"\x1b[200~{block}\x1b[201~")
            await screen.until(block.split("\r")[-1] or block.split("\r")[-2])
            await screen.send("\r")
            await screen.until(f"{last}\r\n")
            await screen.prompt()
        await screen.run("exit", "logout")
        assert await screen.until_closed() == 1000
        assert screen.messages[-1]["reason"] == "shell_closed"
    _, commands = await commands_of(client, user)
    assert [(c["command"], c["output_preview"]) for c in commands] == [
        ("PS1='$ '", ""),
        ("echo a-$((0+1))", "a-1"),
        ("echo b-$((0+2))", "b-2"),
        ("echo c-$((0+3))", "c-3"),
        ("echo d-$((0+4))", "d-4"),
        ("echo e-$((0+5))", "e-5"),
        # a block's lines run at once: its output is the preview of its last line
        ("echo f-$((0+6))", ""),
        ("echo g-$((0+7))", "f-6\ng-7"),
        ("echo h-$((0+8))", ""),
        ("echo i-$((0+9))", ""),
        ("echo j-$((1+9))", "h-8\ni-9\nj-10"),
        ("exit", "logout"),
    ]


async def test_sshd_private_key_login(client, kernel, make_user, make_connection, sshd):
    user = await make_user("alice")
    connection = await ssh_connection(make_connection, user, sshd, private_key=sshd.private_key)
    async with client.websocket(ssh_path(kernel, user, connection.id, cols=80, rows=24)) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.run("echo key-$((20+1))-$USER", f"key-21-{sshd.username}")


async def test_wrong_password_closes_with_the_reason(
    client, kernel, make_user, make_connection, sshd
):
    user = await make_user("alice")
    connection = await ssh_connection(make_connection, user, sshd, password="not-the-password")
    async with client.websocket(ssh_path(kernel, user, connection.id, cols=80, rows=24)) as socket:
        screen = Screen(socket)
        assert await screen.until_closed(30) == 4003
        assert "authentication failed" in screen.messages[-1]["message"].lower()
        assert screen.messages[-1]["reason"] == "auth_failed"
    audit = await client.get(
        "/api/v1/audit?eventType=connection.session_failed", headers=user.headers
    )
    [entry] = (await audit.get_json())["entries"]
    assert entry["details"]["connectionId"] == connection.id


async def test_changed_host_key_is_refused(
    client, kernel, make_user, make_connection, private_sshd
):
    user = await make_user("alice")
    connection = await ssh_connection(
        make_connection, user, private_sshd, password=private_sshd.password
    )
    async with client.websocket(ssh_path(kernel, user, connection.id, cols=80, rows=24)) as socket:
        await Screen(socket).until("$ ")
    private_sshd.restart_with_new_host_key()
    async with client.websocket(ssh_path(kernel, user, connection.id, cols=80, rows=24)) as socket:
        screen = Screen(socket)
        assert await screen.until_closed(30) == 4003
        assert "host key" in screen.messages[-1]["message"].lower()
        assert screen.messages[-1]["reason"] == "host_key_changed"


async def test_asyncssh_server_password_and_key(
    client, kernel, make_user, make_connection, asyncssh_shell
):
    user = await make_user("alice")
    by_password = await ssh_connection(
        make_connection, user, asyncssh_shell, password=asyncssh_shell.password
    )
    by_key = await ssh_connection(
        make_connection, user, asyncssh_shell, private_key=asyncssh_shell.private_key
    )
    for connection in (by_password, by_key):
        async with client.websocket(ssh_path(kernel, user, connection.id)) as socket:
            screen = Screen(socket)
            await screen.resize(90, 20)
            await screen.until("$ ")
            await screen.run("stty size", "20 90")
            await screen.resize(110, 35)
            await screen.run("stty size", "35 110")
            await screen.run("echo via-$((5*5))", "via-25")
            await screen.send("exit\r")
            assert await screen.until_closed() == 1000
    listed = await (await client.get("/api/v1/sessions", headers=user.headers)).get_json()
    assert [s["protocol"] for s in listed["sessions"]] == ["ssh", "ssh"]
    assert all(s["hasRecording"] and s["endedAt"] for s in listed["sessions"])


async def test_prompt_on_connect_takes_the_password_from_the_first_frame(
    client, kernel, make_user, sshd
):
    user = await make_user("alice")
    body = {
        "name": "ask me",
        "protocol": "ssh",
        "host": sshd.host,
        "port": sshd.port,
        "username": sshd.username,
        "promptOnConnect": True,
    }
    created = await client.post("/api/v1/connections", json=body, headers=user.headers)
    assert created.status_code == 201, await created.get_data()
    connection_id = (await created.get_json())["id"]
    async with client.websocket(ssh_path(kernel, user, connection_id, cols=80, rows=24)) as socket:
        await socket.send(json.dumps({"type": "auth", "password": sshd.password}))
        screen = Screen(socket)
        await screen.until("$ ", 30)
        await screen.step("echo asked-$((3+4))", "asked-7")
    async with client.websocket(ssh_path(kernel, user, connection_id, cols=80, rows=24)) as socket:
        await socket.send(json.dumps({"type": "data", "data": "ls\r"}))
        screen = Screen(socket)
        assert await screen.until_closed() == 4007
        assert screen.messages[-1] == {
            "type": "error",
            "message": "Expected an auth message",
            "reason": "auth_timeout",
        }
    audit = await client.get("/api/v1/audit", headers=user.headers)
    assert sshd.password not in (await audit.get_data()).decode()
