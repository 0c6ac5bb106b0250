"""``create_app(config)``: the one place things are wired."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable
from typing import Any

from quart import Quart, Response
from quart_schema import HttpSecurityScheme, Info, QuartSchema, hide
from werkzeug.datastructures import Headers

from . import accesslog, errors
from ._compat import hypercorn as compat_hypercorn
from ._compat import wsproto as compat_wsproto
from .api import blueprints
from .api.health import health
from .config import Config, load_config
from .guards import public, request_context
from .kernel import Kernel
from .logging_setup import request_id, silence_libraries
from .openapi import Document
from .plugins import PluginHost
from .requestbody import StreamingRequest, connection_class
from .services.version import current_version
from .ws import blueprint_for as socket_blueprint

API_PREFIX = "/api/v1"
# Paths no page blueprint (register_pages) may answer.
KERNEL_PATHS = ("/api/", "/ws/", "/health")
log = logging.getLogger("hostgate.app")


class GatewayQuart(Quart):
    """Quart, tuned for many apps per process and many requests per app.

    Its per-call check of hooks and views for coroutine functions is done once each.
    """

    MAX_KNOWN = 4096

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._coroutine_functions: set[Any] = set()

    def ensure_async(self, func: Any) -> Any:
        """Quart's ``ensure_async``, remembering the functions that are coroutine functions.

        Quart asks ``asyncio.iscoroutinefunction`` about every before-request hook,
        view and after-request hook on every request (about 5 k instructions each);
        the answer for a function never changes. Synchronous functions still go
        through Quart every time (their wrapper runs them in a thread).
        """
        known = self._coroutine_functions
        if func in known:
            return func
        result = super().ensure_async(func)
        if result is func:
            if len(known) >= self.MAX_KNOWN:
                known.clear()
            known.add(func)
        return result


def create_app(config: Config | None = None, *, plugins: Iterable[object] = ()) -> Quart:
    """Build the Quart app: plugins loaded, kernel built, routes mounted.

    ``plugins`` registers extra plugin objects (tests use this); entry-point
    packs load when ``config.load_entry_points`` is true.
    """
    config = config or load_config()
    silence_libraries()
    host = PluginHost(trace=config.trace_plugins)
    host.load(
        entry_points=config.load_entry_points,
        disabled=config.disabled_plugins,
        extra=plugins,
    )
    app = GatewayQuart("hostgate", static_folder=None)
    compat_wsproto.install()
    compat_hypercorn.install()
    app.request_class = StreamingRequest
    app.asgi_http_class = connection_class()
    app.config["MAX_CONTENT_LENGTH"] = config.max_body_bytes
    app.config["BODY_TIMEOUT"] = 600
    QuartSchema(
        app,
        openapi_path=None,
        redoc_ui_path=None,
        scalar_ui_path=None,
        swagger_ui_path=None,
        info=Info(title="hostgate", version=current_version()),
        security_schemes={"bearer": HttpSecurityScheme(scheme="bearer", bearer_format="JWT")},
        security=[{"bearer": []}],
        openapi_provider_class=Document,
    )
    _plain_json_responses(app)
    errors.install(app)
    kernel = Kernel(config, host)
    app.extensions["hostgate"] = kernel
    # each pack's status names its permissions too (GET /system/plugins)
    host.note_permissions()

    for blueprint in blueprints():
        app.register_blueprint(blueprint, url_prefix=API_PREFIX)
    for method in kernel.login_methods.values():
        if method.blueprint is not None:
            app.register_blueprint(method.blueprint, url_prefix=API_PREFIX)
    for _, blueprint in host.blueprints():
        app.register_blueprint(blueprint, url_prefix=API_PREFIX)
    app.register_blueprint(socket_blueprint(kernel))
    pages: set[str] = set()
    for _, blueprint in host.pages():
        app.register_blueprint(blueprint)
        pages.add(blueprint.name)
    app.add_url_rule("/health", "root_health", public(hide(_root_health)))

    @app.before_request
    async def _tag_request() -> None:
        current, context = request_context()
        context.request_started = time.perf_counter()
        # getlist: werkzeug's get builds an exception when the header is absent (usual)
        given = current.headers.getlist("X-Request-Id")
        request_id.set(given[0][:64] if given and given[0] else os.urandom(8).hex())
        if pages and current.blueprint in pages and current.path.startswith(KERNEL_PATHS):
            raise errors.NotFound("Not found")

    log_request = accesslog.request_logger(config.trusted_proxies) if config.access_log else None
    if config.access_log:
        accesslog.install(app, config.trusted_proxies)  # the WebSockets' lines
    observe = kernel.metrics.observe_request

    @app.after_request
    async def _finish(response: Response) -> Response:
        """One hook for every request: the access log line, the metrics, the default headers."""
        current, context = request_context()
        status = response.status_code
        if log_request is not None:
            log_request(current, status)
        rule = current.url_rule
        started = context.get("request_started")
        observe(
            current.method,
            rule.rule if rule is not None else None,
            status,
            0.0 if started is None else time.perf_counter() - started,
        )
        defaults = API_HEADERS if current.path.startswith(API_PREFIX) else DEFAULT_HEADERS
        add_default_headers(response.headers, request_id.get(), defaults)
        return response

    @app.before_serving
    async def _start() -> None:
        await kernel.startup()

    @app.after_serving
    async def _stop() -> None:
        await kernel.shutdown()

    return app


async def _root_health() -> dict[str, Any]:
    """Liveness at the site root, for load balancers (documented as ``/api/v1/health``)."""
    result: dict[str, Any] = await health.__wrapped__()  # type: ignore[attr-defined]
    return result


DEFAULT_HEADERS: tuple[tuple[str, str], ...] = (
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
)
"""Headers of every response, unless the view set its own value."""
API_HEADERS = (*DEFAULT_HEADERS, ("Cache-Control", "no-store"))
"""... and of every API response."""


def add_default_headers(
    headers: Headers, request_id: str, defaults: tuple[tuple[str, str], ...]
) -> None:
    """``X-Request-Id`` and each default the response does not have yet.

    One pass over the response's headers instead of a search per default: the
    same result as ``headers[...] =`` and ``setdefault`` for each.
    """
    present = {name.lower() for name in headers.keys()}  # noqa: SIM118 (Headers iterates pairs)
    if "x-request-id" in present:
        headers["X-Request-Id"] = request_id
    else:
        headers.add("X-Request-Id", request_id)  # from the client: checked
    missing = [(name, value) for name, value in defaults if name.lower() not in present]
    if missing:
        headers.extend(missing)


def _plain_json_responses(app: Quart) -> None:
    """Plain ``dict``/``list`` results and finished responses skip quart-schema's conversion.

    quart-schema builds a pydantic ``TypeAdapter`` for every dict a view returns
    before Quart serializes it: a third of the time of a small request. The JSON
    provider it installs still turns anything pydantic knows (a model nested in
    a dict) into JSON, so the output is the same. A ``Response`` (the cached JSON
    bodies) has nothing to convert.
    """
    converting = app.make_response
    original = getattr(converting, "__wrapped__", None)
    if original is None:
        return

    async def make_response(result: Any) -> Response:
        value = result[0] if isinstance(result, tuple) else result
        if type(value) is dict or type(value) is list or isinstance(value, Response):
            return await original(result)  # type: ignore[no-any-return]
        return await converting(result)  # type: ignore[no-any-return,return-value]

    app.make_response = make_response  # type: ignore[method-assign]


def kernel_of(app: Quart) -> Kernel:
    """The Kernel behind an app."""
    kernel: Kernel = app.extensions["hostgate"]
    return kernel
