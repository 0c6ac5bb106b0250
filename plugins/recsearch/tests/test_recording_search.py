"""Search across recordings: the index written as sessions run, its filters and permissions.

Every test runs on SQLite (FTS5) and PostgreSQL (tsvector + GIN).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from hostgate import iso, utcnow
from hostgate.config import Config
from hostgate.db.models.sessions import RemoteSession
from hostgate_recsearch import index as search_index
from hostgate_recsearch.models import SearchEntry
from sqlmodel import select

from tests.services.sessions.helpers import Screen, socket_path, ticket_for


@pytest.fixture(params=["sqlite", "postgresql"])
def config(request: Any, config: Config) -> Config:
    """The suite's config on each engine."""
    if request.param == "sqlite":
        return config
    return config.with_overrides(database_url=request.getfixturevalue("postgres_url"))


async def search(client: Any, who: Any, query: str, status: int = 200) -> dict[str, Any]:
    response = await client.get(f"/api/v1/sessions/search?{query}", headers=who.headers)
    assert response.status_code == status, await response.get_data()
    return dict(await response.get_json())


async def index_output(client: Any, admin: Any, on: bool) -> None:
    response = await client.put(
        "/api/v1/settings", json={"recordings.index_output": on}, headers=admin.headers
    )
    assert response.status_code == 200, await response.get_data()


async def run_shell(client: Any, kernel: Any, user: Any, connection: Any, *steps: str) -> None:
    """Open a recorded local shell, run ``steps`` (command, marker pairs), exit."""
    path = socket_path("localshell", ticket_for(kernel, user), connection.id, cols=80, rows=24)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        for command, marker in zip(steps[::2], steps[1::2], strict=True):
            await screen.step(command, marker)
        await screen.send("exit\r")
        await screen.until_closed()
    await kernel.terminal_sessions.tick()


async def entries(kernel: Any, kind: str | None = None) -> list[SearchEntry]:
    async with kernel.db.session() as db:
        query = select(SearchEntry)
        if kind:
            query = query.where(SearchEntry.kind == kind)
        return list((await db.exec(query)).all())


async def session_of(client: Any, user: Any) -> str:
    listed = await (await client.get("/api/v1/sessions", headers=user.headers)).get_json()
    return str(listed["sessions"][0]["id"])


async def test_commands_and_output_are_found_with_their_offsets(
    client, kernel, admin, shell_connection
):
    user, connection = shell_connection
    await index_output(client, admin, True)
    await run_shell(
        client,
        kernel,
        user,
        connection,
        "echo needle-$((6*7))",
        "needle-42",
        "sleep 2; echo zebra-$((2+3))-done",
        "zebra-5-done",
    )
    session_id = await session_of(client, user)

    commands = await search(client, user, "q=needle&kind=command")
    [hit] = commands["hits"]
    logged = await (
        await client.get(f"/api/v1/sessions/{session_id}/commands", headers=user.headers)
    ).get_json()
    needle = next(c for c in logged["commands"] if c["command"].startswith("echo needle"))
    assert hit["sessionId"] == session_id and hit["kind"] == "command"
    assert hit["offset"] == needle["elapsed"] / 1000
    assert hit["snippet"] == "echo needle-$((6*7))"
    assert hit["snippetParts"] == [
        {"text": "echo ", "match": False},
        {"text": "needle", "match": True},
        {"text": "-$((6*7))", "match": False},
    ]
    assert hit["session"]["id"] == session_id and hit["session"]["hasRecording"]
    assert (commands["page"], commands["limit"], commands["total"]) == (1, 25, 1)
    assert commands["totalCapped"] is False

    # output: the words in order, any case; "42" is only in the output, not the command
    found = await search(client, user, "q=NEEDLE+42")
    assert [(h["kind"], h["sessionId"]) for h in found["hits"]] == [("output", session_id)]
    # the snippet keeps the terminal's lines; its parts mark the words found, as they appeared
    [output] = found["hits"]
    assert "\nneedle-42" in output["snippet"]
    assert "".join(part["text"] for part in output["snippetParts"]) == output["snippet"]
    assert [part["text"] for part in output["snippetParts"] if part["match"]] == ["needle-42"]
    # the output after two quiet seconds starts its own chunk; either way the offset is the
    # moment it showed, as the recording has it
    [zebra] = (await search(client, user, "q=zebra+5+done&kind=output"))["hits"]
    cast = await (
        await client.get(f"/api/v1/sessions/{session_id}/recording", headers=user.headers)
    ).get_data()
    events = [json.loads(line) for line in cast.decode().splitlines()[1:]]
    shown = next(e[0] for e in events if "zebra-5-done\r" in e[2])
    assert abs(zebra["offset"] - shown) < 0.1, (zebra, shown)
    # inside a chunk too: the needle's offset is when it showed, not when the chunk began
    needle_shown = next(e[0] for e in events if "needle-42\r" in e[2])
    assert abs(found["hits"][0]["offset"] - needle_shown) < 0.1, (found, needle_shown)
    assert "zebra-5-done" in zebra["snippet"]
    assert (await search(client, user, "q=42+needle"))["hits"] == []  # order matters
    assert (await search(client, user, "q=needl"))["hits"] == []  # whole words


@pytest.mark.parametrize(
    ("few_sessions", "probe_entries"),
    [(2000, 5000), (2000, 0), (0, 5000)],
    ids=["sessions-first", "sessions-first-in-range", "matches-first"],
)
async def test_a_user_never_gets_hits_from_sessions_they_may_not_see(
    client, kernel, admin, make_user, shell_connection, monkeypatch, few_sessions, probe_entries
):
    # every way to search: test the entries of the few sessions the filters leave (one by
    # one, or among the matches in their id range), or walk every match newest first
    monkeypatch.setattr(search_index, "FEW_SESSIONS", few_sessions)
    monkeypatch.setattr(search_index, "PROBE_ENTRIES", probe_entries)
    alice, connection = shell_connection
    bob = await make_user("bob")
    await run_shell(client, kernel, alice, connection, "echo private-word", "private-word")
    assert (await search(client, bob, "q=private+word"))["hits"] == []
    assert (await search(client, bob, "q=private+word"))["total"] == 0
    mine = await search(client, alice, "q=private+word")
    assert mine["total"] == 1
    # sessions.view_any (the admin) sees everyone's, with the session list's filters
    everyone = await search(client, admin, "q=private+word")
    assert [h["session"]["username"] for h in everyone["hits"]] == ["alice"]
    assert (await search(client, admin, f"q=private+word&userId={bob.id}"))["hits"] == []
    assert (await search(client, admin, f"q=private+word&userId={alice.id}"))["total"] == 1
    by_connection = f"q=private+word&connectionId={connection.id}"
    assert (await search(client, admin, by_connection))["total"] == 1
    assert (await search(client, admin, "q=private+word&connectionId=other"))["total"] == 0
    assert (await search(client, admin, "q=private+word&search=LOCAL"))["total"] == 1
    assert (await search(client, admin, "q=private+word&protocol=ssh"))["total"] == 0
    later = iso(utcnow() + timedelta(minutes=1))
    earlier = iso(utcnow() - timedelta(hours=1))
    assert (await search(client, admin, f"q=private+word&from={later}"))["total"] == 0
    assert (await search(client, admin, f"q=private+word&from={earlier}"))["total"] == 1
    assert (await search(client, admin, f"q=private+word&to={earlier}"))["total"] == 0


async def test_bad_input_is_a_400(client, admin):
    for query in (
        "",
        "q=",
        "q=%20%20",
        "q=---",
        "q=" + "a" * 201,
        "q=" + "+".join(["w"] * 17),
        "q=x&kind=both",
        "q=x&page=0",
        "q=x&limit=abc",
        "q=x&from=yesterday",
    ):
        body = await search(client, admin, query, status=400)
        assert body["error"], query


async def test_output_indexing_off_purges_and_stops_it(client, kernel, admin, shell_connection):
    user, connection = shell_connection
    public = await (await client.get("/api/v1/settings/public")).get_json()
    assert public["settings"]["recordings.index_output"] is False  # the default, public
    await run_shell(client, kernel, user, connection, "echo off-by-default", "off-by-default")
    assert await entries(kernel, "output") == []
    assert len(await entries(kernel, "command")) >= 1

    await index_output(client, admin, True)
    await run_shell(client, kernel, user, connection, "echo kept-$((1+1))", "kept-2")
    assert (await search(client, user, "q=kept+2&kind=output"))["total"] == 1

    await index_output(client, admin, False)  # followed at once where it is changed
    assert await entries(kernel, "output") == []
    assert (await search(client, user, "q=kept+2"))["total"] == 0
    assert (await search(client, user, "q=kept&kind=command"))["total"] == 1  # commands stay
    await run_shell(client, kernel, user, connection, "echo after-$((2+2))", "after-4")
    assert await entries(kernel, "output") == []
    assert (await search(client, user, "q=after&kind=command"))["total"] == 1


async def test_retention_and_deletion_remove_index_entries(client, kernel, admin, shell_connection):
    user, connection = shell_connection
    await index_output(client, admin, True)
    await run_shell(client, kernel, user, connection, "echo old-one", "old-one")
    await run_shell(client, kernel, user, connection, "echo new-one", "new-one")
    old_id = next(
        h["sessionId"] for h in (await search(client, user, "q=old+one&kind=command"))["hits"]
    )
    async with kernel.db.session() as db:
        row = await db.get(RemoteSession, old_id)
        row.started_at = utcnow() - timedelta(days=10)
        db.add(row)
        await db.commit()
    await client.put(
        "/api/v1/settings", json={"recordings.retention_days": 2}, headers=admin.headers
    )
    assert await kernel.recordings.apply_retention() == 1
    assert {e.session_id for e in await entries(kernel)} == {
        h["sessionId"] for h in (await search(client, user, "q=new+one"))["hits"]
    }
    assert (await search(client, user, "q=old+one"))["total"] == 0

    purged = await client.delete("/api/v1/sessions", headers=admin.headers)
    assert purged.status_code == 200
    assert await entries(kernel) == []
    assert (await search(client, user, "q=new+one"))["total"] == 0


async def test_hits_are_paged_most_recent_first_and_counted_up_to_the_cap(
    client, kernel, admin, shell_connection, monkeypatch
):
    user, connection = shell_connection
    monkeypatch.setattr(search_index, "TOTAL_CAP", 3)
    steps = [x for n in range(5) for x in (f"echo paged-{n}", f"paged-{n}\r\n")]
    await run_shell(client, kernel, user, connection, *steps)
    first = await search(client, user, "q=echo+paged&kind=command&limit=2")
    assert [h["snippet"] for h in first["hits"]] == ["echo paged-4", "echo paged-3"]
    assert (first["total"], first["totalCapped"]) == (3, True)
    third = await search(client, user, "q=echo+paged&kind=command&limit=2&page=3")
    assert [h["snippet"] for h in third["hits"]] == ["echo paged-0"]
    offsets = [
        h["offset"] for h in (await search(client, user, "q=echo+paged&kind=command"))["hits"]
    ]
    assert offsets == sorted(offsets, reverse=True)


async def test_a_user_filter_finds_that_users_sessions_among_many_others(
    client, kernel, admin, make_user
):
    # a common word in every session of twenty users; the filters (userId, connectionId,
    # the caller's own sessions, a time window) pick out exactly the matching sessions
    await index_output(client, admin, True)  # while off, output entries are purged
    bob = await make_user("bob")
    now = utcnow()
    owners = [f"other-{n:02d}" for n in range(20) for _ in range(3)] + [bob.id] * 5
    sessions = []
    async with kernel.db.session() as db:
        for number, owner in enumerate(owners):
            row = RemoteSession(
                user_id=owner,
                username=owner,
                connection_id=f"conn-{number % 2}",
                connection_name=f"web-{number % 2}",
                protocol="ssh",
                started_at=now - timedelta(days=10 if number == len(owners) - 1 else 0, minutes=1),
                recording_state="complete",
            )
            db.add(row)
            await db.flush()
            db.add(SearchEntry(session_id=row.id, kind="output", offset_ms=number, text="an error"))
            db.add(SearchEntry(session_id=row.id, kind="command", offset_ms=5, text="ls -la"))
            sessions.append(row.id)
        await db.commit()
    bobs = set(sessions[-5:])

    def found(body: dict[str, Any]) -> set[str]:
        return {h["sessionId"] for h in body["hits"]}

    everyone = await search(client, admin, "q=error&limit=100")
    assert everyone["total"] == len(owners)
    assert found(await search(client, admin, f"q=error&userId={bob.id}")) == bobs
    assert found(await search(client, bob, "q=error")) == bobs
    by_connection = found(await search(client, bob, "q=error&connectionId=conn-0"))
    assert by_connection == {s for n, s in enumerate(sessions) if s in bobs and n % 2 == 0}
    recent = iso(now - timedelta(days=1))
    assert found(await search(client, bob, f"q=error&from={recent}")) == bobs - {sessions[-1]}
    assert (await search(client, bob, "q=error&userId=other-03"))["total"] == 0
    assert (await search(client, admin, "q=error&userId=other-03"))["total"] == 3
    assert (await search(client, admin, "q=error&userId=other-03&kind=command"))["total"] == 0
    # a session given to another user, one removed: the filters follow at once
    async with kernel.db.session() as db:
        moved = await db.get(RemoteSession, sessions[9])
        moved.user_id = bob.id
        db.add(moved)
        await db.delete(await db.get(RemoteSession, sessions[-2]))
        await db.commit()
    bobs = (bobs | {sessions[9]}) - {sessions[-2]}
    assert found(await search(client, bob, "q=error")) == bobs
    assert found(await search(client, admin, f"q=error&userId={bob.id}")) == bobs
    assert (await search(client, admin, "q=error&userId=other-03"))["total"] == 2
    assert (await search(client, admin, "q=error&limit=100"))["total"] == len(owners) - 1
    if kernel.db.dialect == "sqlite":  # the full-text index agrees with its content
        async with kernel.db.engine.begin() as conn:
            await conn.exec_driver_sql(
                "INSERT INTO recording_search_fts(recording_search_fts) VALUES ('integrity-check')"
            )
