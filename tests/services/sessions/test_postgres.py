"""The session tables and queries on PostgreSQL too."""

from __future__ import annotations

import pytest
from hostgate.config import Config

from tests.services.sessions.helpers import Screen, socket_path, ticket_for


@pytest.fixture
def config(config: Config, postgres_url: str) -> Config:
    """The suite's config, on the test PostgreSQL database."""
    return config.with_overrides(database_url=postgres_url)


async def test_sessions_on_postgresql(client, kernel, admin, shell_connection, make_connection):
    assert kernel.db.dialect == "postgresql"
    user, connection = shell_connection
    path = socket_path("localshell", ticket_for(kernel, user), connection.id, cols=80, rows=24)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.step("echo pg-$((1+2))", "pg-3")
        await screen.send("exit\r")
        await screen.until_closed()
    listed = await (await client.get("/api/v1/sessions", headers=user.headers)).get_json()
    [terminal] = listed["sessions"]
    assert terminal["hasRecording"] and terminal["endedAt"]
    commands = await client.get(f"/api/v1/sessions/{terminal['id']}/commands", headers=user.headers)
    assert [c["command"] for c in (await commands.get_json())["commands"]][:1] == [
        "echo pg-$((1+2))"
    ]

    rdp = await make_connection(user, "rdp", "127.0.0.1", 3389)
    created = await client.post(
        "/api/v1/sessions/rdp-session", json={"connectionId": rdp.id}, headers=user.headers
    )
    url = f"/api/v1/sessions/{(await created.get_json())['sessionId']}/recording"
    await client.post(f"{url}/chunk", data=b"W" * 70_000, headers=user.headers)
    events = [{"elapsed": 5.5, "type": "key"}, {"elapsed": 1, "type": "click"}]
    await client.post(f"{url}/events", json=events, headers=user.headers)
    await client.post(f"{url}/finalize", headers=user.headers)
    part = await client.get(url, headers={**user.headers, "Range": "bytes=65530-65539"})
    assert part.status_code == 206 and await part.get_data() == b"W" * 10
    read = await (await client.get(f"{url}/events", headers=user.headers)).get_json()
    assert [e["event_type"] for e in read["events"]] == ["click", "key"]

    purged = await (await client.delete("/api/v1/sessions", headers=admin.headers)).get_json()
    assert (purged["deletedSessions"], purged["deletedRecordings"]) == (2, 2)
