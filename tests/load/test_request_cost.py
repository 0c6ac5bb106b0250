"""What one authenticated request costs the gateway, counted (never timed).

Regressions of two fixes found by profiling the API benchmark:

- authentication ran three queries (login session, user, role) on every request;
  it is one joined query now, and none at all while the database is unchanged
  (the read cache); ``/auth/me`` and ``/connections`` are answered from memory too;
- quart-schema built a pydantic ``TypeAdapter`` for every dict a view returned
  (a third of a small request's time); plain dicts and lists now go straight to
  the JSON provider, which still serializes models nested in them;
- issue 20's levers on a cached GET: a finished ``Response`` skips the schema
  conversion, the default headers are added in one pass, each metrics series
  is looked up once, a disabled access log builds no line, query arguments are
  parsed only when there are some, and no absent header costs an exception.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import jwt
import pytest
import quart_schema.conversion
import quart_schema.extension
from hostgate import accesslog, hookimpl, public
from pydantic import BaseModel
from quart import Blueprint, Quart, Response
from sqlalchemy import event
from werkzeug.exceptions import BadRequestKeyError
from werkzeug.sansio.request import Request
from werkzeug.utils import cached_property


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
    return [ProbePack(), HeadersPack()]


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


# The API hot-path levers of issue 20 (what a cached GET costs besides the bare endpoint).

headers_probe = Blueprint("headers_probe", __name__)


@headers_probe.get("/headers-probe")
@public
async def own_headers() -> Any:
    """A view that sets its own values for two of the default headers."""
    response = Response(b"{}", content_type="application/json")
    response.headers["X-Frame-Options"] = "SAMEORIGIN"
    response.headers["Cache-Control"] = "max-age=60"
    response.headers["X-Request-Id"] = "set-by-the-view"
    return response


class HeadersPack:
    @hookimpl
    def register_blueprints(self) -> Sequence[Blueprint]:
        return [headers_probe]


async def warm(client: Any, admin: Any) -> None:
    for path in ("/api/v1/auth/me", "/api/v1/connections"):
        for _ in range(2):
            assert (await client.get(path, headers=admin.headers)).status_code == 200


async def test_a_finished_response_skips_the_schema_conversion(
    client: Any, admin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    converted: list[object] = []
    original = quart_schema.extension.convert_response_return_value

    def convert(result: Any) -> Any:
        converted.append(result)
        return original(result)

    monkeypatch.setattr(quart_schema.extension, "convert_response_return_value", convert)
    await warm(client, admin)
    assert converted == []
    # a model is still converted
    assert (await client.get("/api/v1/protocols", headers=admin.headers)).status_code == 200


async def test_default_headers_are_added_once_and_a_views_own_values_win(client: Any) -> None:
    response = await client.get("/api/v1/headers-probe", headers={"X-Request-Id": "given"})
    headers = response.headers
    assert headers.getlist("X-Frame-Options") == ["SAMEORIGIN"]
    assert headers.getlist("Cache-Control") == ["max-age=60"]
    assert headers.getlist("X-Content-Type-Options") == ["nosniff"]
    assert headers.getlist("Referrer-Policy") == ["no-referrer"]
    assert headers.getlist("X-Request-Id") == ["given"]
    plain = await client.get("/api/v1/health")
    assert plain.headers.getlist("Cache-Control") == ["no-store"]
    assert plain.headers.getlist("X-Frame-Options") == ["DENY"]
    assert len(plain.headers.getlist("X-Request-Id")[0]) == 16
    # outside the API: no Cache-Control of the kernel's
    outside = await client.get("/health")
    assert outside.headers.getlist("X-Content-Type-Options") == ["nosniff"]


async def test_each_request_series_is_looked_up_once(
    client: Any, kernel: Any, admin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up: list[tuple[str, ...]] = []
    original = kernel.metrics.requests.labels

    def labels(*values: str) -> Any:
        looked_up.append(values)
        return original(*values)

    monkeypatch.setattr(kernel.metrics.requests, "labels", labels)
    for _ in range(5):
        await client.get("/api/v1/auth/me", headers=admin.headers)
    await client.get("/api/v1/auth/me")  # a 401: another series
    assert looked_up == [
        ("GET", "/api/v1/auth/me", "200"),
        ("GET", "/api/v1/auth/me", "401"),
    ]
    figures = kernel.metrics.render().decode()
    assert (
        'hostgate_http_requests_total{method="GET",route="/api/v1/auth/me",status="200"} 5.0'
        in figures
    )
    assert (
        'hostgate_http_requests_total{method="GET",route="/api/v1/auth/me",status="401"} 1.0'
        in figures
    )


async def test_a_disabled_access_log_builds_no_line(
    client: Any, admin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []
    original = accesslog._emit

    def emit(method: str, path: str, *args: Any, **kwargs: Any) -> None:
        built.append(path)
        original(method, path, *args, **kwargs)

    monkeypatch.setattr(accesslog, "_emit", emit)
    logger = logging.getLogger("hostgate.access")
    monkeypatch.setattr(logger, "level", logging.WARNING)
    logger.manager._clear_cache()
    await client.get("/api/v1/auth/me", headers=admin.headers)
    assert built == []
    monkeypatch.setattr(logger, "level", logging.INFO)
    logger.manager._clear_cache()
    await client.get("/api/v1/auth/me", headers=admin.headers)
    assert built == ["/api/v1/auth/me"]


async def test_query_arguments_are_parsed_only_when_there_are_some(
    client: Any, kernel: Any, admin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    await warm(client, admin)
    parsed: list[bytes] = []
    original = Request.args

    def args(self: Any) -> Any:
        parsed.append(self.query_string)
        return original.func(self)

    monkeypatch.setattr(Request, "args", cached_property(args))
    await client.get("/api/v1/auth/me", headers=admin.headers)
    assert parsed == []
    # the heartbeat is still read: it does not count as activity
    before = (await kernel.identity._login_view(admin_session(admin))).last_used_at
    await client.get("/api/v1/auth/me?heartbeat=1", headers=admin.headers)
    assert parsed == [b"heartbeat=1"]
    assert (await kernel.identity._login_view(admin_session(admin))).last_used_at == before


def admin_session(admin: Any) -> str:
    return str(jwt.decode(admin.token, options={"verify_signature": False})["sid"])


async def test_no_absent_header_costs_an_exception_beyond_bare_quarts(
    client: Any, admin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """werkzeug's ``headers.get`` builds a ``BadRequestKeyError`` for each absent header."""
    raised: list[str] = []
    original = BadRequestKeyError.__init__

    def init(self: Any, key: Any = None, *args: Any, **kwargs: Any) -> None:
        raised.append(str(key))
        original(self, key, *args, **kwargs)

    bare = Quart("bare")

    @bare.get("/ping")
    async def ping() -> dict[str, bool]:
        return {"ok": True}

    await warm(client, admin)
    monkeypatch.setattr(BadRequestKeyError, "__init__", init)
    await bare.test_client().get("/ping", headers=admin.headers)
    by_quart = sorted(raised)
    raised.clear()
    await client.get("/api/v1/auth/me", headers=admin.headers)
    assert sorted(raised) == by_quart


async def test_one_after_request_hook_logs_counts_and_adds_the_headers(
    app: Any, client: Any, kernel: Any, admin: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The access log, the metrics and the default headers come from one hook, in that order."""
    assert len(app.after_request_funcs[None]) == 1
    caplog.set_level(logging.INFO, logger="hostgate.access")
    observed: list[tuple[str, str | None, int]] = []
    original = kernel.metrics.requests.labels

    def labels(method: str, route: str, status: str) -> Any:
        lines = [r.getMessage() for r in caplog.records if r.name == "hostgate.access"]
        observed.append((method, route, int(status)))
        assert lines and lines[-1].startswith(f"{method} {route} {status} ")  # logged first
        return original(method, route, status)

    kernel.metrics.requests.labels = labels
    try:
        denied = await client.get("/api/v1/auth/me", headers={"X-Request-Id": "mine"})
        allowed = await client.get("/api/v1/auth/me", headers=admin.headers)
    finally:
        del kernel.metrics.requests.labels
    assert observed == [("GET", "/api/v1/auth/me", 401), ("GET", "/api/v1/auth/me", 200)]
    for response in (denied, allowed):
        assert response.headers.getlist("Cache-Control") == ["no-store"]
        assert response.headers.getlist("X-Content-Type-Options") == ["nosniff"]
        assert response.headers.getlist("X-Frame-Options") == ["DENY"]
        assert response.headers.getlist("Referrer-Policy") == ["no-referrer"]
    assert denied.headers.getlist("X-Request-Id") == ["mine"]
    lines = [r for r in caplog.records if r.name == "hostgate.access"]
    assert f"user={admin.id}" in lines[1].getMessage()


async def test_the_caller_and_client_are_built_once_while_nothing_changes(
    client: Any, kernel: Any, admin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hostgate.guards
    import hostgate.services.identity.identity as identity_module

    built: list[str] = []
    made: list[str] = []
    original_caller = identity_module.Caller
    original_client = hostgate.guards.ClientInfo

    def caller(*args: Any, **kwargs: Any) -> Any:
        built.append(kwargs["user_agent"])
        return original_caller(*args, **kwargs)

    def client_info(*args: Any, **kwargs: Any) -> Any:
        made.append(kwargs["user_agent"])
        return original_client(*args, **kwargs)

    monkeypatch.setattr(identity_module, "Caller", caller)
    monkeypatch.setattr(hostgate.guards, "ClientInfo", client_info)
    await warm(client, admin)
    headers = {**admin.headers, "User-Agent": "probe/1 Firefox/1"}
    for _ in range(4):
        me = await client.get("/api/v1/auth/me", headers=headers)
        assert me.status_code == 200
    assert built.count("probe/1 Firefox/1") == 1
    assert made.count("probe/1 Firefox/1") == 1
    # another client: its own Caller, with its own user agent
    other = await client.get("/api/v1/auth/me", headers={**admin.headers, "User-Agent": "b/2"})
    assert other.status_code == 200
    assert built[-1] == "b/2"
    # a Caller a pack wrote into is never handed to another request
    known = kernel.identity._callers[admin_session(admin)][2]
    known.extra["pack"] = "x"
    await client.get("/api/v1/auth/me", headers={**admin.headers, "User-Agent": "b/2"})
    assert built[-2:] == ["b/2", "b/2"]
    # a revoked session is refused at once, reused Caller or not
    assert (await client.post("/api/v1/auth/logout", headers=headers)).status_code == 200
    refused = await client.get("/api/v1/auth/me", headers=headers)
    assert refused.status_code == 401


async def test_a_cached_json_body_answers_as_an_ordinary_response_without_parsing(
    app: Any, client: Any, admin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hostgate.api.cachedjson import CachedJSONResponse
    from werkzeug.sansio.response import Response as SansIOResponse

    body = b'{"a": 1}\n'
    cached = CachedJSONResponse(body, str(len(body)))
    async with app.app_context():
        ordinary = Response(body, mimetype="application/json")
    assert cached.status == ordinary.status and cached.status_code == ordinary.status_code == 200
    assert list(cached.headers.items()) == list(ordinary.headers.items())
    assert await cached.get_data() == await ordinary.get_data() == body
    assert cached.mimetype == "application/json" and cached.content_length == len(body)

    await warm(client, admin)
    cleaned: list[object] = []
    original = SansIOResponse._clean_status

    def clean(self: Any, value: Any) -> Any:
        cleaned.append(value)
        return original(self, value)

    monkeypatch.setattr(SansIOResponse, "_clean_status", clean)
    me = await client.get("/api/v1/auth/me", headers=admin.headers)
    assert cleaned == [200]  # the test client's own copy of the answer; none by the app
    assert me.status_code == 200 and me.mimetype == "application/json"
    data = await me.get_data()
    assert me.content_length == len(data)
    assert (await me.get_json())["user"]["username"] == "admin"
    assert me.headers.getlist("Cache-Control") == ["no-store"]
