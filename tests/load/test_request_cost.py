"""What one authenticated request costs the gateway, counted (never timed).

Regressions of two fixes found by profiling the API benchmark:

- authentication ran three queries (login session, user, role) on every request;
  it is one joined query now, and none at all while the database is unchanged
  (the read cache); ``/auth/me`` and ``/connections`` are answered from memory too;
- quart-schema built a pydantic ``TypeAdapter`` for every dict a view returned
  (a third of a small request's time); plain dicts and lists now go straight to
  the JSON provider, which still serializes models nested in them;
- the API hot-path levers on a cached GET: a finished ``Response`` skips the schema
  conversion, the default headers are added in one pass, each metrics series
  is looked up once, a disabled access log builds no line, query arguments are
  parsed only when there are some, and no absent header costs an exception;
  a view's query model is not run without a query string (when it takes none),
  and a finished response is sent in this task, in two messages.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import jwt
import pytest
import quart_schema.conversion
import quart_schema.extension
from hostgate import accesslog, answers, hookimpl, public
from pydantic import BaseModel, ValidationError
from quart import Blueprint, Quart, Response
from werkzeug.exceptions import BadRequestKeyError
from werkzeug.sansio.request import Request
from werkzeug.utils import cached_property

from testsupport.statements import executed_statements


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
    """The verbs (``SELECT``...) of the statements run inside the block."""
    verbs: list[str] = []
    with executed_statements(kernel) as statements:
        yield verbs
        verbs += [statement.split(None, 1)[0].upper() for statement in statements]


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


# The API hot-path levers (what a cached GET costs besides the bare endpoint).

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


class NeedsQuery(BaseModel):
    q: str


class MayQuery(BaseModel):
    q: str = ""


@headers_probe.get("/query-probe/needed")
@public
@answers(dict[str, str], query=NeedsQuery)
async def needs_query() -> dict[str, str]:
    """A view whose query model has a required argument."""
    return {"ok": "yes"}


@headers_probe.get("/query-probe/optional")
@public
@answers(dict[str, str], query=MayQuery)
async def may_query() -> dict[str, str]:
    """A view whose query model takes no argument at all too."""
    return {"ok": "yes"}


@headers_probe.get("/range-probe")
@public
async def range_probe() -> Any:
    """A finished body answering ``Range`` requests."""
    from quart import request

    response = Response(b"0123456789", content_type="application/octet-stream")
    return await response.make_conditional(request, accept_ranges=True, complete_length=10)


@headers_probe.get("/slow-probe")
@public
async def slow_probe() -> Any:
    """A streamed body whose second piece never comes, within a short response timeout."""
    import asyncio

    async def pieces() -> Any:
        yield b"first"
        await asyncio.Event().wait()

    response = Response(pieces(), content_type="text/plain")
    response.timeout = 0.05
    return response


@headers_probe.get("/body-probe")
@public
async def body_probe() -> dict[str, Any]:
    """What body a GET came with (the spec allows one where it is announced)."""
    from quart import request

    return {"body": (await request.get_data()).decode()}


streamed_ended: list[str] = []


@headers_probe.get("/stream-probe")
@public
async def stream_probe() -> Any:
    """A streamed body whose second piece never comes (no response timeout of its own)."""
    import asyncio

    async def pieces() -> Any:
        try:
            yield b"first"
            await asyncio.Event().wait()
        finally:
            streamed_ended.append("ended")

    return Response(pieces(), content_type="text/plain")


walked: list[str] = []
outer_probe = Blueprint("outer_probe", __name__)
inner_probe = Blueprint("inner_probe", __name__, url_prefix="/inner")


@inner_probe.get("/walk")
@public
async def walk_probe() -> dict[str, Any]:
    """The blueprint names the request gives, and Quart's own working-out of them."""
    from quart import request
    from quart.wrappers.base import BaseRequestWebsocket

    current = request._get_current_object()  # type: ignore[attr-defined]
    walked.append("view")
    return {
        "blueprint": current.blueprint,
        "blueprints": current.blueprints,
        "quart": [
            BaseRequestWebsocket.blueprint.fget(current),  # type: ignore[attr-defined]
            BaseRequestWebsocket.blueprints.fget(current),  # type: ignore[attr-defined]
        ],
    }


for _probe in (outer_probe, inner_probe):

    def _hooks(name: str) -> None:
        async def before() -> None:
            walked.append(f"before {name}")

        async def after(response: Any) -> Any:
            walked.append(f"after {name}")
            return response

        blueprint = outer_probe if name == "outer" else inner_probe
        blueprint.before_request(before)
        blueprint.after_request(after)

    _hooks("outer" if _probe is outer_probe else "inner")
outer_probe.register_blueprint(inner_probe)


class HeadersPack:
    @hookimpl
    def register_blueprints(self) -> Sequence[Blueprint]:
        return [headers_probe, outer_probe]


async def asgi_get(
    app: Any,
    path: str,
    headers: Sequence[tuple[bytes, bytes]] = (),
    *,
    body: Sequence[bytes] = (b"",),
    http_version: str = "1.1",
    leave_after_first_piece: bool = False,
) -> list[dict[str, Any]]:
    """The ASGI messages ``app`` sends for a GET of ``path`` (as a server would see them).

    ``body``: the request's body messages. ``leave_after_first_piece``: the client
    disconnects once the first piece of the response body has come.
    """
    import asyncio

    raw, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": http_version,
        "method": "GET",
        "scheme": "http",
        "path": raw,
        "raw_path": raw.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), *headers],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8080),
        "extensions": {},
    }
    waiting = [
        {"type": "http.request", "body": piece, "more_body": n < len(body) - 1}
        for n, piece in enumerate(body)
    ]
    left = asyncio.Event()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if waiting:
            return waiting.pop(0)
        await left.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if leave_after_first_piece and message["type"] == "http.response.body":
            left.set()

    # a task of its own per request, in a copy of this context, as the server runs each
    async with asyncio.timeout(10):
        await asyncio.ensure_future(app(scope, receive, send))
    return sent


@contextmanager
def counted_tasks() -> Iterator[list[str]]:
    """The request's tasks the running loop makes inside the block: those of the connection
    class and of the view's helpers (not the kernel's own background work meanwhile)."""
    import asyncio

    loop = asyncio.get_running_loop()
    made: list[str] = []
    factory = loop.get_task_factory()

    def counting(loop: Any, coro: Any, **kwargs: Any) -> Any:
        name = getattr(coro, "__qualname__", "")
        if name.startswith(("FlowControlledConnection.", "QuickRequestPath.", "_wrap_awaitable")):
            made.append(name)
        if factory is not None:
            return factory(loop, coro, **kwargs)
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(counting)
    try:
        yield made
    finally:
        loop.set_task_factory(factory)


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
    looked_up: list[tuple[str, str | None, int]] = []
    original = kernel.metrics._new_series

    def new_series(method: str, route: str | None, status: int) -> Any:
        looked_up.append((method, route, status))
        return original(method, route, status)

    monkeypatch.setattr(kernel.metrics, "_new_series", new_series)
    for _ in range(5):
        await client.get("/api/v1/auth/me", headers=admin.headers)
    await client.get("/api/v1/auth/me")  # a 401: another series
    assert looked_up == [("GET", "/api/v1/auth/me", 200), ("GET", "/api/v1/auth/me", 401)]
    figures = kernel.metrics.render().decode()
    assert (
        'hostgate_http_requests_total{method="GET",route="/api/v1/auth/me",status="200"} 5.0'
        in figures
    )
    assert (
        'hostgate_http_requests_total{method="GET",route="/api/v1/auth/me",status="401"} 1.0'
        in figures
    )


REQUESTS_SEEN = [
    ("GET", "/api/v1/auth/me", 200, 0.0012),
    ("GET", "/api/v1/auth/me", 200, 0.005),  # on a bucket's bound: that bucket
    ("GET", "/api/v1/auth/me", 401, 0.0),
    ("POST", "/api/v1/connections", 201, 0.3),
    ("GET", None, 404, 0.07),
    ("GET", "/api/v1/auth/me", 200, 12.5),  # above the last finite bound: +Inf only
    ("GET", "/api/v1/connections", 200, 1.0),
    ("GET", None, 405, 2.5000001),
    ("POST", "/api/v1/connections", 201, 0.0251),
]


def test_the_request_figures_read_as_prometheus_clients_own_did(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The exposition text of the plain-Python counts is byte for byte what
    prometheus_client's ``Counter`` and ``Histogram`` wrote for the same requests."""
    import time

    from hostgate.metrics import UNMATCHED_ROUTE, Metrics
    from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

    monkeypatch.setattr(time, "time", lambda: 1764300000.25)  # the _created samples
    reference = CollectorRegistry(auto_describe=True)
    requests = Counter(
        "hostgate_http_requests",
        "HTTP requests by method, route template and status",
        ["method", "route", "status"],
        registry=reference,
    )
    latency = Histogram(
        "hostgate_http_request_duration_seconds",
        "Time to the response head, by method and route template",
        ["method", "route"],
        registry=reference,
    )
    metrics = Metrics(live=NoLiveSessions(), relays=list)  # type: ignore[arg-type]
    empty = metrics.render().decode()
    reference_empty = generate_latest(reference).decode()
    assert reference_empty and empty.startswith(reference_empty)
    for method, route, status, seconds in REQUESTS_SEEN:
        metrics.observe_request(method, route, status, seconds)
        label = route or UNMATCHED_ROUTE
        requests.labels(method, label, str(status)).inc()
        latency.labels(method, label).observe(seconds)
    expected = generate_latest(reference).decode()
    rendered = metrics.render().decode()
    assert rendered.startswith(expected)
    assert "hostgate_http_request" not in rendered[len(expected) :]  # the other families
    assert 'le="+Inf"' in expected and "_created" in expected and "_sum" in expected


class NoLiveSessions:
    def all(self) -> list[object]:
        return []


async def test_a_request_costs_prometheus_client_no_call(
    client: Any, kernel: Any, admin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No counter or histogram value of prometheus_client is touched per request
    (its ``inc`` and ``observe`` took a lock and a value object per bucket)."""
    from prometheus_client import values

    await warm(client, admin)
    touched: list[float] = []
    value_class = values.ValueClass
    original = value_class.inc

    def inc(self: Any, amount: float) -> None:
        touched.append(amount)
        original(self, amount)

    monkeypatch.setattr(value_class, "inc", inc)
    for _ in range(3):
        assert (await client.get("/api/v1/auth/me", headers=admin.headers)).status_code == 200
    assert touched == []
    kernel.metrics.recording_written("asciicast")  # the rare figures still go through it
    assert touched == [1]
    figures = kernel.metrics.render().decode()
    counted = re.search(
        r'^hostgate_http_request_duration_seconds_count\{method="GET",route="/api/v1/auth/me"\} '
        r"(\S+)$",
        figures,
        re.M,
    )
    assert counted is not None and float(counted.group(1)) >= 5  # warm's two and these three


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
    original = kernel.metrics._new_series

    def new_series(method: str, route: str, status: int) -> Any:
        lines = [r.getMessage() for r in caplog.records if r.name == "hostgate.access"]
        observed.append((method, route, status))
        assert lines and lines[-1].startswith(f"{method} {route} {status} ")  # logged first
        return original(method, route, status)

    kernel.metrics._new_series = new_series
    try:
        denied = await client.get("/api/v1/auth/me", headers={"X-Request-Id": "mine"})
        allowed = await client.get("/api/v1/auth/me", headers=admin.headers)
    finally:
        del kernel.metrics._new_series
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


async def test_a_query_model_runs_only_when_there_is_a_query_string(
    client: Any, admin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hostgate.api.connections import ListQuery

    await warm(client, admin)
    validated: list[object] = []
    original = ListQuery.model_validate.__func__  # type: ignore[attr-defined]

    def validate(cls: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        validated.append(value)
        return original(cls, value, *args, **kwargs)

    monkeypatch.setattr(ListQuery, "model_validate", classmethod(validate))
    listed = await client.get("/api/v1/connections", headers=admin.headers)
    assert listed.status_code == 200 and validated == []
    own = await client.get("/api/v1/connections?scope=own", headers=admin.headers)
    assert own.status_code == 200 and validated == [{"scope": "own"}]
    wrong = await client.get("/api/v1/connections?scope=nobody", headers=admin.headers)
    assert wrong.status_code == 400
    unknown = await client.get("/api/v1/connections?bogus=1", headers=admin.headers)
    assert unknown.status_code == 400
    # a model that needs an argument still refuses a request without any
    with pytest.raises(ValidationError):
        NeedsQuery.model_validate({})
    assert (await client.get("/api/v1/query-probe/needed")).status_code == 400
    assert (await client.get("/api/v1/query-probe/needed?q=x")).status_code == 200
    assert (await client.get("/api/v1/query-probe/optional")).status_code == 200
    assert (await client.get("/api/v1/query-probe/optional?r=x")).status_code == 400


async def test_a_finished_response_is_sent_in_this_task_in_two_messages(
    app: Any, admin: Any
) -> None:
    """No task of its own for sending (Quart's ``wait_for``), and no empty closing message;
    a GET without a body makes no task at all (Quart's view and body reader)."""
    auth = [(b"authorization", f"Bearer {admin.token}".encode())]
    for _ in range(2):
        await asgi_get(app, "/api/v1/auth/me", auth)  # warm: the read cache
    with counted_tasks() as made:
        sent = await asgi_get(app, "/api/v1/auth/me", auth)
    assert made == []
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[0]["status"] == 200 and sent[1]["more_body"] is False
    headers = dict(sent[0]["headers"])
    body = sent[1]["body"]
    assert headers[b"content-length"] == str(len(body)).encode()
    assert b'"username"' in body
    # an error answer of a body-less GET: no task either, same messages
    with counted_tasks() as made:
        denied = await asgi_get(app, "/api/v1/auth/me")
    assert made == [] and denied[0]["status"] == 401
    assert [m["type"] for m in denied] == ["http.response.start", "http.response.body"]


QUARTS_TWO = ["FlowControlledConnection.handle_messages", "FlowControlledConnection.handle_request"]


async def test_a_get_that_announces_a_body_still_reads_it_in_quarts_two_tasks(app: Any) -> None:
    """Content-Length, Transfer-Encoding, or HTTP/2 (a body without a length): the reader
    task feeds the body as before."""
    announced = [
        ([(b"content-length", b"5")], "1.1", (b"hello",)),
        ([(b"transfer-encoding", b"chunked")], "1.1", (b"hel", b"lo")),
        ([], "2", (b"hel", b"lo")),
    ]
    for headers, version, pieces in announced:
        with counted_tasks() as made:
            sent = await asgi_get(
                app, "/api/v1/body-probe", headers, body=pieces, http_version=version
            )
        assert made[:2] == QUARTS_TWO, (headers, version)  # then get_data's wait_for
        assert sent[0]["status"] == 200
        assert b"".join(m.get("body", b"") for m in sent[1:]) == b'{"body":"hello"}\n'
    # announced as none: the view reads an empty body, without Quart's two tasks
    for headers in ([], [(b"content-length", b"0")]):
        with counted_tasks() as made:
            sent = await asgi_get(app, "/api/v1/body-probe", headers)
        assert made == ["_wrap_awaitable"]  # get_data's own wait_for
        assert sent[1]["body"] == b'{"body":""}\n'
    # not announced, yet sent (an ASGI client such as Quart's test client): still read,
    # in this task when it came whole in one message, else in Quart's two tasks
    for pieces, tasks in (((b"hello",), []), ((b"hel", b"lo"), QUARTS_TWO)):
        with counted_tasks() as made:
            sent = await asgi_get(app, "/api/v1/body-probe", body=pieces)
        assert [name for name in made if name != "_wrap_awaitable"] == tasks
        assert sent[1]["body"] == b'{"body":"hello"}\n'


async def test_a_streamed_answer_to_a_bodiless_get_ends_when_the_client_leaves(
    app: Any,
) -> None:
    """The streamed body is sent beside a reader of the request's messages, as Quart does:
    the client's disconnect cancels it (it would otherwise wait for ever)."""
    streamed_ended.clear()
    with counted_tasks() as made:
        sent = await asgi_get(app, "/api/v1/stream-probe", leave_after_first_piece=True)
    assert streamed_ended == ["ended"]
    assert sent[0]["status"] == 200
    assert [m.get("body") for m in sent[1:]] == [b"first"]
    assert made == ["QuickRequestPath._send_within", QUARTS_TWO[0]]
