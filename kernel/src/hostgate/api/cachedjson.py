"""JSON bodies rendered once per database state, for the busiest read-only views."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from quart import Response, current_app
from werkzeug.datastructures import Headers

from ..guards import app_kernel


class CachedJSONResponse(Response):
    """A 200 ``application/json`` response of a finished body, built without parsing.

    The same status, headers and body as ``Response(body, mimetype="application/json")``
    (a test compares the two), without werkzeug's status lookup, mimetype
    parsing and header replacement on every request.
    """

    def __init__(self, body: bytes, length: str) -> None:
        self.headers = Headers([("Content-Type", "application/json"), ("Content-Length", length)])
        self._status = "200 OK"
        self._status_code = 200
        self.timeout = Ellipsis
        self.response = self.data_body_class(body)


async def cached_json(key: Hashable, build: Callable[[], Awaitable[Any]]) -> Response:
    """A 200 JSON response of ``await build()``, kept in the kernel's read cache.

    ``key`` must name everything the body depends on besides the database (the
    caller, query arguments): the cache is emptied whenever the database changes,
    so the body is rebuilt after any commit by anyone.
    """

    async def render() -> tuple[bytes, str]:
        body = f"{current_app.json.dumps(await build())}\n".encode()
        return body, str(len(body))

    body, length = await app_kernel().readcache.get(key, render)
    return CachedJSONResponse(body, length)
