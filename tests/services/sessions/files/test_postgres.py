"""File-transfer sessions on PostgreSQL too (find-or-start, counters, listing, exports)."""

from __future__ import annotations

import asyncio
import csv
import io

import pytest
from hostgate.config import Config

from tests.services.sessions.files.conftest import url


@pytest.fixture
def config(config: Config, postgres_url: str) -> Config:
    """The suite's config, on the test PostgreSQL database."""
    return config.with_overrides(database_url=postgres_url)


async def test_file_sessions_on_postgresql(client, kernel, owner, memconn, admin):
    assert kernel.db.dialect == "postgresql"
    headers = {**owner.headers, "X-File-Session-Id": "tab-1"}
    await client.post(url(memconn, "mkdir"), json={"path": "/d"}, headers=headers)
    results = await asyncio.gather(
        *(client.post(url(memconn, "list"), json={"path": "/"}, headers=headers) for _ in range(6))
    )
    assert [r.status_code for r in results] == [200] * 6
    await client.post(url(memconn, "list"), json={"path": "/"}, headers=owner.headers)
    listed = await (await client.get("/api/v1/file-sessions", headers=admin.headers)).get_json()
    counts = sorted(s["eventCount"] for s in listed["sessions"])
    assert counts == [1, 7]
    tab = next(s for s in listed["sessions"] if s["eventCount"] == 7)
    response = await client.get(
        f"/api/v1/file-sessions/{tab['id']}/export",
        query_string={"format": "csv"},
        headers=owner.headers,
    )
    rows = list(csv.reader(io.StringIO((await response.get_data()).decode())))
    assert [r[7] for r in rows[1:]] == ["mkdir"] + ["browse"] * 6
    assert await kernel.file_sessions.purge() == 2
