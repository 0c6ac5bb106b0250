"""The connection menu of ``ssh -p 2222 alice@gateway`` (no target, a terminal)."""

from __future__ import annotations

import asyncio

from hostgate import DoorTarget
from hostgate_sshd.menu import Menu, split_keys

from plugins.sshd.tests.door import (
    audit_entries,
    connect,
    door_of,
    known_hosts,
    make_key,
    register_key,
    run_ssh,
)


def target(name: str, *, owned: bool = True) -> DoorTarget:
    return DoorTarget(
        id=f"id-{name}", name=name, protocol="ssh", host="h", port=22, owned=owned, shell=True
    )


def test_keys_filter_move_and_choose():
    menu = Menu([target("alpha-db"), target("beta-web"), target("gamma-db", owned=False)])
    for key in split_keys("db\x1b[B"):
        menu.key(key)
    assert [t.name for t in menu.shown] == ["alpha-db", "gamma-db"]
    assert menu.shown[menu.selected].name == "gamma-db"
    screen = menu.render(80, 24)
    assert "\x1b[7m  gamma-db  [ssh]  (shared)\x1b[0m" in screen and "beta-web" not in screen
    for key in split_keys("\x1bOA\x7f\x7fz"):  # up (application mode), erase both, z
        menu.key(key)
    assert menu.shown == [] and "(no connection matches)" in menu.render(80, 24)
    menu.key("\r")  # nothing to open: Enter does nothing
    assert not menu.done
    for key in split_keys("\x15\x1b[B\x1b[B\x1b[B\r"):  # clear the filter, down past the end
        menu.key(key)
    assert menu.done and menu.chosen is not None and menu.chosen.name == "gamma-db"


def test_escape_and_ctrl_c_leave_without_a_choice():
    for key in ("\x1b", "\x03", "\x04"):
        menu = Menu([target("a")])
        menu.key(key)
        assert menu.done and menu.chosen is None


def test_a_long_list_scrolls_to_keep_the_selection_on_screen():
    menu = Menu([target(f"host-{n:02}") for n in range(30)])
    for _ in range(25):
        menu.key("\x1b[B")
    screen = menu.render(80, 10)  # 6 rows of list under the 4 header lines
    assert "\x1b[7m  host-25  [ssh]\x1b[0m" in screen and "host-19" not in screen


async def until(process, text: bytes) -> bytes:
    seen = b""
    while text not in seen:
        chunk = await asyncio.wait_for(process.stdout.read(4096), 30)
        assert chunk, seen
        seen += chunk
    return seen


async def test_the_menu_opens_the_chosen_connection_as_a_recorded_shell(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    made = {
        name: await make_connection(
            user,
            "ssh",
            sshd.host,
            sshd.port,
            name=name,
            username=sshd.username,
            password=sshd.password,
        )
        for name in ("alpha", "box")
    }
    key = make_key(tmp_path)
    await register_key(client, user, key)
    port = door_of(kernel).port

    async with await connect(port, "alice", key.key) as conn:
        process = await conn.create_process(term_type="xterm", term_size=(80, 24), encoding=None)
        screen = await until(process, b"box")
        assert b"alpha" in screen and b"choose a connection" in screen
        process.stdin.write(b"bo")
        await until(process, b"> bo")
        process.stdin.write(b"\r")
        await until(process, b"hostgate: opening box")
        await until(process, b"$ ")
        process.stdin.write(b"echo menu-$((6*7)); exit\n")
        await until(process, b"menu-42")
        await process.wait_closed()
        assert process.exit_status == 0

    [started] = await audit_entries(client, user, "connection.session_started")
    assert (
        started["details"]["connectionId"] == made["box"].id and started["details"]["via"] == "ssh"
    )

    # leaving the menu opens nothing
    async with await connect(port, "alice", key.key) as conn:
        process = await conn.create_process(term_type="xterm", term_size=(80, 24), encoding=None)
        await until(process, b"alpha")
        process.stdin.write(b"\x03")
        await process.wait_closed()
        assert process.exit_status == 0
    assert len(await audit_entries(client, user, "connection.session_started")) == 1


async def test_a_user_without_connections_is_told_so(client, kernel, make_user, tmp_path):
    user = await make_user("alice")
    key = make_key(tmp_path)
    await register_key(client, user, key)
    async with await connect(door_of(kernel).port, "alice", key.key) as conn:
        process = await conn.create_process(term_type="xterm", encoding=None)
        await until(process, b"no connection that offers a shell")
        await process.wait_closed()


async def test_the_real_ssh_client_picks_from_the_menu_and_typing_ahead_reaches_the_shell(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    for name in ("alpha", "box"):
        await make_connection(
            user,
            "ssh",
            sshd.host,
            sshd.port,
            name=name,
            username=sshd.username,
            password=sshd.password,
        )
    key = make_key(tmp_path)
    await register_key(client, user, key)
    hosts = await known_hosts(client, user, tmp_path)
    # all at once, as a paste: filter, Enter, then the shell's input
    done = await run_ssh(
        door_of(kernel).port,
        "alice",
        key,
        hosts,
        stdin=b"bo\recho menu-$((6*7)); exit\n",
        options=("-tt",),
    )
    assert done.code == 0, done.stderr
    assert "hostgate: opening box" in done.stdout and "menu-42" in done.stdout
    [started] = await audit_entries(client, user, "connection.session_started")
    assert started["details"]["via"] == "ssh"
