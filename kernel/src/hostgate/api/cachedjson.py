"""JSON bodies rendered once per database state, for the busiest read-only views."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from quart import Response, current_app

from ..guards import app_kernel


async def cached_json(key: Hashable, build: Callable[[], Awaitable[Any]]) -> Response:
    """A 200 JSON response of ``await build()``, kept in the kernel's read cache.

    ``key`` must name everything the body depends on besides the database (the
    caller, query arguments): the cache is emptied whenever the database changes,
    so the body is rebuilt after any commit by anyone.
    """

    async def render() -> bytes:
        return f"{current_app.json.dumps(await build())}\n".encode()

    body = await app_kernel().readcache.get(key, render)
    return current_app.response_class(body, mimetype="application/json")
