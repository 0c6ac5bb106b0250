"""What one authenticated request costs the gateway, counted (never timed).

Regressions of two fixes found by profiling the API benchmark:

- authentication ran three queries (login session, user, role) on every request;
  it is one joined query now, and none at all while the database is unchanged
  (the read cache); ``/auth/me`` and ``/connections`` are answered from memory too;
- quart-schema built a pydantic ``TypeAdapter`` for every dict a view returned
  (a third of a small request's time); plain dicts and lists now go straight to
  the JSON provider, which still serializes models nested in them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
import quart_schema.conversion
from hostgate import hookimpl, public
from pydantic import BaseModel
from quart import Blueprint
from sqlalchemy import event


class Nested(BaseModel):
    when: datetime
    tags: set[str]


probe = Blueprint("cost_probe", __name__)


@probe.get("/cost-probe")
@public
async def nested_model() -> dict[str, Any]:
    """A dict holding a pydantic model: must still come out as JSON."""
    return {"item": Nested(when=datetime(2026, 1, 2, tzinfo=UTC), tags={"a"}), "n": 1}


class ProbePack:
    @hookimpl
    def register_blueprints(self) -> Sequence[Blueprint]:
        return [probe]


@pytest.fixture
def plugins() -> list[object]:
    return [ProbePack()]


@contextmanager
def counted_statements(kernel: Any) -> Iterator[list[str]]:
    statements: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement.split(None, 1)[0].upper())

    engine = kernel.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", count)


@contextmanager
def counted_type_adapters(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    made: list[object] = []
    original = quart_schema.conversion.TypeAdapter

    def adapter(kind: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(kind)
        return original(kind, *args, **kwargs)

    monkeypatch.setattr(quart_schema.conversion, "TypeAdapter", adapter)
    yield made


async def test_a_warm_authenticated_request_runs_no_query_to_authenticate(
    client: Any, kernel: Any, admin: Any
) -> None:
    await client.get("/api/v1/auth/me", headers=admin.headers)  # warm: last-used touch
    await client.get("/api/v1/connections", headers=admin.headers)
    with counted_statements(kernel) as statements:
        response = await client.get("/api/v1/roles", headers=admin.headers)
    assert response.status_code == 200
    # authentication comes from the read cache; one SELECT lists the roles
    assert statements.count("SELECT") == 1, statements
    with counted_statements(kernel) as statements:
        me = await client.get("/api/v1/auth/me", headers=admin.headers)
        listed = await client.get("/api/v1/connections", headers=admin.headers)
    assert me.status_code == listed.status_code == 200
    assert statements == []
    # a cold cache (any commit empties it) costs one joined query to authenticate
    kernel.readcache.clear()
    with counted_statements(kernel) as statements:
        response = await client.get("/api/v1/roles", headers=admin.headers)
    assert response.status_code == 200
    assert statements.count("SELECT") == 2, statements


async def test_plain_dict_responses_skip_the_pydantic_conversion(
    client: Any, admin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with counted_type_adapters(monkeypatch) as made:
        me = await client.get("/api/v1/auth/me", headers=admin.headers)
        listed = await client.get("/api/v1/connections", headers=admin.headers)
    assert me.status_code == 200 and listed.status_code == 200
    assert made == []
    assert (await me.get_json())["user"]["username"] == "admin"


async def test_models_nested_in_a_dict_still_serialize(client: Any) -> None:
    response = await client.get("/api/v1/cost-probe")
    assert response.status_code == 200
    assert await response.get_json() == {
        "item": {"when": "2026-01-02T00:00:00Z", "tags": ["a"]},
        "n": 1,
    }
