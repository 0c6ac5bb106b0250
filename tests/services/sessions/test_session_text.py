"""The session text hooks: what a pack is handed of a real shell's commands and output.

``session_text`` gets each command-log line (never one typed at a password prompt) and,
only while a pack's ``wants_session_output`` says yes, the output as plain text with its
offsets; ``recordings_removed`` names the sessions whose recordings were deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
from hostgate import KernelAPI, SessionText, hookimpl, utcnow
from hostgate.db.models.sessions import RemoteSession

from tests.services.sessions import localshell
from tests.services.sessions.helpers import Screen, socket_path, ticket_for


class TextPack:
    """A pack that keeps what the hooks hand it."""

    def __init__(self) -> None:
        self.output = False
        self.texts: list[SessionText] = []
        self.removed: list[str] = []

    @hookimpl
    def wants_session_output(self, kernel: KernelAPI) -> bool:
        return self.output

    @hookimpl
    async def session_text(self, texts: Sequence[SessionText], kernel: KernelAPI) -> None:
        self.texts.extend(texts)

    @hookimpl
    async def recordings_removed(self, session_ids: Sequence[str], kernel: KernelAPI) -> None:
        self.removed.extend(session_ids)


class BrokenPack:
    """A pack whose hooks raise: logged, never felt by the session or the other packs."""

    @hookimpl
    def wants_session_output(self, kernel: KernelAPI) -> bool:
        raise RuntimeError("broken on purpose")

    @hookimpl
    async def session_text(self, texts: Sequence[SessionText], kernel: KernelAPI) -> None:
        raise RuntimeError("broken on purpose")


@pytest.fixture
def pack() -> TextPack:
    return TextPack()


@pytest.fixture
def plugins(pack: TextPack) -> list[object]:
    return [localshell, BrokenPack(), pack]


async def run_with_a_password(client: Any, kernel: Any, user: Any, connection: Any) -> str:
    """A recorded shell: a command, a secret typed at a password prompt, exit; its id."""
    path = socket_path("localshell", ticket_for(kernel, user), connection.id, cols=80, rows=24)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.prompt()
        await screen.step("echo text-$((6*7))", "text-42\r\n")
        await screen.send("read -s -p 'Password: ' secret; echo; echo len=${#secret}\r")
        await screen.until("echo len=${#secret}")
        await screen.prompt(b"Password: ")
        await screen.send("Typed-Secret-99\r")
        await screen.until("len=15")
        await screen.prompt()
        await screen.send("exit\r")
        await screen.until_closed()
    listed = await (await client.get("/api/v1/sessions", headers=user.headers)).get_json()
    return str(listed["sessions"][0]["id"])


async def test_commands_reach_the_pack_without_what_was_typed_at_a_password_prompt(
    client, kernel, pack, shell_connection
):
    user, connection = shell_connection
    session_id = await run_with_a_password(client, kernel, user, connection)
    assert {t.session_id for t in pack.texts} == {session_id}
    assert [t.kind for t in pack.texts] == ["command"] * 3  # no output: nobody asked
    assert [t.text for t in pack.texts] == [
        "echo text-$((6*7))",
        "read -s -p 'Password: ' secret; echo; echo len=${#secret}",
        "exit",
    ]
    logged = await (
        await client.get(f"/api/v1/sessions/{session_id}/commands", headers=user.headers)
    ).get_json()
    elapsed = {c["command"]: c["elapsed"] for c in logged["commands"]}
    assert [t.offset_ms for t in pack.texts] == [elapsed[t.text] for t in pack.texts]
    assert "[password]" in elapsed  # the command log has the line; the pack never does
    assert "Typed-Secret" not in repr(pack.texts)


async def test_output_reaches_the_pack_as_plain_timed_text_once_asked(
    client, kernel, pack, shell_connection
):
    pack.output = True
    user, connection = shell_connection
    session_id = await run_with_a_password(client, kernel, user, connection)
    output = [t for t in pack.texts if t.kind == "output"]
    assert output and {t.session_id for t in output} == {session_id}
    shown = "\n".join(t.text for t in output)
    assert "text-42" in shown and "len=15" in shown
    assert "\x1b" not in shown and "Typed-Secret" not in shown
    offsets = [t.offset_ms for t in output]
    assert offsets == sorted(offsets)
    for piece in output:
        assert piece.marks and piece.marks[0][0] == 0
        assert all(0 <= index < len(piece.text) for index, _ in piece.marks)


async def test_recordings_deleted_by_retention_are_named_to_the_pack(
    client, kernel, admin, pack, shell_connection
):
    user, connection = shell_connection
    old = await run_with_a_password(client, kernel, user, connection)
    await run_with_a_password(client, kernel, user, connection)
    async with kernel.db.session() as db:
        row = await db.get(RemoteSession, old)
        row.started_at = utcnow() - timedelta(days=10)
        db.add(row)
        await db.commit()
    assert pack.removed == []
    response = await client.put(
        "/api/v1/settings", json={"recordings.retention_days": 2}, headers=admin.headers
    )
    assert response.status_code == 200
    assert await kernel.recordings.apply_retention() == 1
    assert pack.removed == [old]
