"""Command rules against a real sshd: through the browser terminal's socket and the SSH front
door (shell and ``exec``), a blocked line never runs, a held one runs only once approved,
a flagged one runs and is audited."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import asyncssh

from plugins.sshd.tests.door import (
    SSH_TIMEOUT,
    client_options,
    connect,
    door_of,
    known_hosts,
    make_key,
    register_key,
    ssh_binary,
)
from plugins.sshd.tests.test_joining_door import box_for
from tests.services.sessions.helpers import Screen, socket_path, ticket_for
from tests.services.sessions.test_live_view import audit_entries, until_message

RULES = [
    {"name": "no forbidden", "action": "block", "match": "prefix", "pattern": "echo forbidden"},
    {"name": "hold it", "action": "approve", "match": "glob", "pattern": "echo hold-*"},
    {"name": "flag it", "action": "alert", "match": "regex", "pattern": r"^echo flag-\S+$"},
]


async def add_rules(client: Any, admin: Any) -> None:
    for rule in RULES:
        response = await client.post("/api/v1/command-rules", json=rule, headers=admin.headers)
        assert response.status_code == 201, await response.get_data()


async def read_until(process: asyncssh.SSHClientProcess, wanted: bytes, seen: bytes) -> bytes:
    """Read the shell's output until ``wanted`` is in it (60 s: a hang guard)."""
    try:
        async with asyncio.timeout(60):
            while wanted not in seen:
                chunk = await process.stdout.read(4096)
                assert chunk, seen
                seen += chunk
    except TimeoutError:
        raise AssertionError(f"{wanted!r} not seen in {seen[-600:]!r}") from None
    return seen


async def prompt_after(process: asyncssh.SSHClientProcess, mark: bytes, seen: bytes) -> bytes:
    """Read until a prompt follows ``mark`` in the output."""
    seen = await read_until(process, mark, seen)
    start = seen.rindex(mark)
    async with asyncio.timeout(60):
        while b"$ " not in seen[start:]:
            chunk = await process.stdout.read(4096)
            assert chunk, seen
            seen += chunk
    return seen


async def held_now(client: Any, approver: Any, count: int = 1) -> list[dict[str, Any]]:
    """The held commands once there are ``count`` (a door ``exec`` is held in its own task)."""
    for _ in range(1200):  # 60 s: a hang guard
        response = await client.get("/api/v1/command-rules/held", headers=approver.headers)
        held = list((await response.get_json())["held"])
        if len(held) >= count:
            return held
        await asyncio.sleep(0.05)
    raise AssertionError(f"{count} held commands expected")


async def test_rules_in_a_browser_terminal_block_hold_and_flag_before_the_enter_is_sent(
    client, kernel, admin, make_user, make_connection, sshd
):
    user, row = await box_for(make_user, make_connection, sshd)
    bob = await make_user("bob", permissions=["access.approve"])
    await add_rules(client, admin)
    path = socket_path("ssh", ticket_for(kernel, user), row.id, cols=100, rows=30)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.step("echo fine-$((1+1))", "fine-2")

        # typed and entered at once: the keys say what the line is
        await screen.send("echo forbidden-$((6*7))\r")
        [blocked] = await until_message(screen, "commandRule")
        assert blocked["state"] == "blocked" and blocked["rule"] == "no forbidden"
        assert "blocked by rule 'no forbidden'" in blocked["message"]
        await screen.prompt()
        # edited (Ctrl-A, then the first letter): only the screen shows the line
        await screen.send("cho forbidden-$((7*7))")
        await screen.until("cho forbidden-$((7*7))")
        await screen.send("\x01e")
        await screen.until("\x1b[1@e")  # bash inserts the letter before the rest
        await screen.send("\r")
        assert (await until_message(screen, "commandRule", 2))[1]["state"] == "blocked"
        await screen.prompt()
        # edited and entered in one message: the Enter waits for the edit's echo
        await screen.send("cho forbidden-$((8*8))\x01e\r")
        assert (await until_message(screen, "commandRule", 3))[2]["state"] == "blocked"
        await screen.prompt()
        await screen.step("echo after-$((2+2))", "after-4")
        assert not any(f"forbidden-{n}".encode() in screen.output for n in (42, 49, 64))

        # flagged: runs, and is audited
        await screen.step("echo flag-$((3+3))", "flag-6")

        # held: waits for an approver; keys typed meanwhile are dropped
        await screen.send("echo hold-$((5*5))\r")
        held_frame = (await until_message(screen, "commandRule", 4))[3]
        assert held_frame["state"] == "held" and held_frame["rule"] == "hold it"
        await screen.send("echo dropped-$((8*8))\r")
        [held] = await held_now(client, bob)
        assert held["id"] == held_frame["heldId"] and held["username"] == "alice"
        assert held["command"] == "echo hold-$((5*5))" and held["connectionName"] == "box"
        mine = await client.get("/api/v1/command-rules/held", headers=user.headers)
        assert [h["id"] for h in (await mine.get_json())["held"]] == [held["id"]]
        own = await client.post(
            f"/api/v1/command-rules/held/{held['id']}/approve", headers=user.headers
        )
        assert own.status_code == 403
        assert b"hold-25" not in screen.output
        approved = await client.post(
            f"/api/v1/command-rules/held/{held['id']}/approve", headers=bob.headers
        )
        assert approved.status_code == 200
        await screen.until("hold-25")
        told = (await until_message(screen, "commandRule", 5))[4]
        assert told["state"] == "approved" and told["message"] == "Command approved by bob"
        await screen.prompt()

        # denied: never runs
        await screen.send("echo hold-$((6*6))\r")
        await screen.until("echo hold-$((6*6))")  # echoed before Ctrl-C can flush it
        await until_message(screen, "commandRule", 6)
        [held] = await held_now(client, bob)
        denied = await client.post(
            f"/api/v1/command-rules/held/{held['id']}/deny", headers=bob.headers
        )
        assert denied.status_code == 200
        assert (await until_message(screen, "commandRule", 7))[6]["state"] == "denied"
        await screen.prompt()
        # withdrawn with Ctrl-C: never runs either
        await screen.send("echo hold-$((7*7))\r")
        await screen.until("echo hold-$((7*7))")
        await until_message(screen, "commandRule", 8)
        await screen.send("\x03")
        withdrawn = (await until_message(screen, "commandRule", 9))[8]
        assert withdrawn["state"] == "denied" and "withdrawn" in withdrawn["message"]
        await screen.prompt()
        await screen.step("echo last-$((4+5))", "last-9")
        assert b"hold-49" not in screen.output
        assert b"hold-36" not in screen.output and b"dropped-64" not in screen.output
        assert await held_now(client, bob, 0) == []

    blocked_entries = await audit_entries(client, admin, "session.command_blocked")
    assert sorted(e["details"]["command"] for e in blocked_entries) == [
        "echo forbidden-$((6*7))",
        "echo forbidden-$((7*7))",
        "echo forbidden-$((8*8))",
    ]
    assert all(e["username"] == "alice" for e in blocked_entries)
    [flagged] = await audit_entries(client, admin, "session.command_flagged")
    assert flagged["details"]["command"] == "echo flag-$((3+3))"
    assert flagged["details"]["rule"] == "flag it"
    assert len(await audit_entries(client, admin, "session.command_held")) == 3
    [approved_entry] = await audit_entries(client, admin, "session.command_approved")
    assert approved_entry["username"] == "bob"
    [expired] = await audit_entries(client, admin, "session.command_expired")
    assert expired["details"]["command"] == "echo hold-$((7*7))"
    [denied_entry] = await audit_entries(client, admin, "session.command_denied")
    assert denied_entry["details"]["command"] == "echo hold-$((6*6))"


async def test_rules_at_the_front_door_shell_and_exec(
    client, kernel, admin, make_user, make_connection, sshd, tmp_path
):
    user, _ = await box_for(make_user, make_connection, sshd)
    bob = await make_user("bob", permissions=["sessions.moderate"])
    await add_rules(client, admin)
    key = make_key(tmp_path)
    await register_key(client, user, key)
    async with await connect(door_of(kernel).port, "alice:box", key.key) as conn:
        process = await conn.create_process(term_type="xterm", term_size=(80, 24), encoding=None)
        process.stdin.write(b"echo ready-$((1+1))\n")
        seen = await prompt_after(process, b"ready-2", b"")
        process.stdin.write(b"echo forbidden-$((6*7))\n")
        told = b"[hostgate] Command blocked by rule 'no forbidden'\r\n"
        seen = await read_until(process, told, seen)
        # the next prompt first: Ctrl-C makes the terminal discard keys typed ahead of it
        seen = await prompt_after(process, told, seen)
        process.stdin.write(b"echo hold-$((5*5))\n")
        seen = await read_until(process, b"[hostgate] Command held for approval", seen)
        [held] = await held_now(client, bob)
        response = await client.post(
            f"/api/v1/command-rules/held/{held['id']}/approve", headers=bob.headers
        )
        assert response.status_code == 200
        seen = await read_until(process, b"hold-25", seen)
        process.stdin.write(b"echo done-$((2+3))\n")
        seen = await read_until(process, b"done-5", seen)
        assert b"forbidden-42" not in seen
        process.stdin.write(b"exit\n")
        await process.wait_closed()

        # exec: the command is checked whole before it opens
        refused = await conn.run("echo forbidden-exec", check=False)
        assert refused.exit_status == 255 and "blocked by rule 'no forbidden'" in str(
            refused.stderr
        )
        assert "forbidden-exec" not in str(refused.stdout)
        flagged = await conn.run("echo flag-exec", check=False)
        assert flagged.exit_status == 0 and flagged.stdout == "flag-exec\n"

        waiting = asyncio.ensure_future(conn.run("echo hold-exec", check=False))
        [held] = await held_now(client, bob)
        assert held["command"] == "echo hold-exec" and held["sessionId"] == ""
        response = await client.post(
            f"/api/v1/command-rules/held/{held['id']}/deny", headers=bob.headers
        )
        assert response.status_code == 200
        result: asyncssh.SSHCompletedProcess = await waiting
        assert result.exit_status == 255 and "denied by bob" in str(result.stderr)
        assert "hold-exec" not in str(result.stdout)

    blocked = await audit_entries(client, admin, "session.command_blocked")
    assert sorted(e["details"]["command"] for e in blocked) == [
        "echo forbidden-$((6*7))",
        "echo forbidden-exec",
    ]
    flagged_entries = await audit_entries(client, admin, "session.command_flagged")
    assert [e["details"]["command"] for e in flagged_entries] == ["echo flag-exec"]


async def openssh_exec(port: int, key: Any, hosts: Any, command: str) -> asyncio.subprocess.Process:
    """The real ``ssh`` client running ``command`` through the door (output piped)."""
    return await asyncio.create_subprocess_exec(
        ssh_binary(),
        *client_options(key, hosts),
        "-p",
        str(port),
        "-l",
        "alice:box",
        "127.0.0.1",
        command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "HOME": str(hosts.parent)},
    )


async def stderr_line(process: asyncio.subprocess.Process) -> str:
    """The next line the ssh client prints on stderr (a hang guard, not a speed check)."""
    assert process.stderr is not None
    line = await asyncio.wait_for(process.stderr.readline(), SSH_TIMEOUT)
    return line.decode()


async def finished(process: asyncio.subprocess.Process) -> tuple[int, str, str]:
    """Exit status, the rest of stdout and of stderr once the ssh client ended."""
    out, err = await asyncio.wait_for(process.communicate(), SSH_TIMEOUT)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_a_held_exec_tells_the_openssh_user_at_once_and_how_it_ended(
    client, kernel, admin, make_user, make_connection, sshd, tmp_path, monkeypatch
):
    user, _ = await box_for(make_user, make_connection, sshd)
    bob = await make_user("bob", permissions=["access.approve"])
    await add_rules(client, admin)
    key = make_key(tmp_path)
    await register_key(client, user, key)
    hosts = await known_hosts(client, user, tmp_path)
    port = door_of(kernel).port

    # held, then denied: told at once (rule, how long), then why, and a non-zero exit
    waiting = await openssh_exec(port, key, hosts, "echo hold-denied")
    told = await stderr_line(waiting)
    assert told == (
        "hostgate: Command held for approval by rule 'hold it': waiting up to 120 s"
        " for an approver\n"
    )
    [held] = await held_now(client, bob)  # told while it is still held
    assert held["command"] == "echo hold-denied"
    response = await client.post(
        f"/api/v1/command-rules/held/{held['id']}/deny", headers=bob.headers
    )
    assert response.status_code == 200
    code, out, err = await finished(waiting)
    assert code == 255 and "hold-denied" not in out
    assert "hostgate: Command held by rule 'hold it' was refused: denied by bob" in err

    # held, then approved: runs, exit status and output as the server gave them
    waiting = await openssh_exec(port, key, hosts, "echo hold-$((6*7)); exit 3")
    assert "waiting up to 120 s" in await stderr_line(waiting)
    [held] = await held_now(client, bob)
    response = await client.post(
        f"/api/v1/command-rules/held/{held['id']}/approve", headers=bob.headers
    )
    assert response.status_code == 200
    code, out, err = await finished(waiting)
    assert (code, out) == (3, "hold-42\n"), err

    # held until nobody approved it in time: says so and exits non-zero
    monkeypatch.setattr(kernel.command_rules, "timeout", lambda: 1.0)
    waiting = await openssh_exec(port, key, hosts, "echo hold-expired")
    assert "waiting up to 1 s for an approver" in await stderr_line(waiting)
    code, out, err = await finished(waiting)
    assert code == 255 and "hold-expired" not in out
    assert "was refused: no approver allowed it in time" in err

    # blocked: says which rule refused it, without waiting
    blocked = await openssh_exec(port, key, hosts, "echo forbidden-openssh")
    code, out, err = await finished(blocked)
    assert code == 255 and "forbidden-openssh" not in out
    assert err.startswith("hostgate: Command blocked by rule 'no forbidden'\n")
    assert "held for approval" not in err
    expired = await audit_entries(client, admin, "session.command_expired")
    assert [e["details"]["command"] for e in expired] == ["echo hold-expired"]
