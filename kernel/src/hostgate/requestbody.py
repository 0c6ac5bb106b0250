"""Request bodies with back-pressure, so a streamed upload never piles up in memory.

Quart's receive loop appends every body message to the request as fast as the
client sends it. A view that iterates ``request.body`` (an upload streamed to a
remote server) would still buffer everything the client sends faster than the
remote accepts. Here the receive loop pauses once ``HIGH_WATER`` bytes wait
unread, until the view consumes them - or until somebody awaits the whole
body (``await request.get_data()``), which switches back to plain buffering
under ``MAX_CONTENT_LENGTH``.

The body keeps the received chunks as they came instead of copying them into
one growing buffer and out again (Quart's ``Body`` copies every byte twice): a
chunk the view reads is handed over as the same object, also when several
waited (a streaming upload sends each as it is); only a run of small ones
(under 64 KiB) is joined.

Only Quart's public extension points are used here: ``Request.body_class`` (a body
class of our own with Quart's body interface), ``Quart.asgi_http_class`` and the
connection's public ``handle_request``/``handle_messages``. The faster request
path that needs Quart's private names (a body-less request answered in one task,
a finished body sent in one message) is ``hostgate._compat.quart``'s
``QuickRequestPath``, which ``connection_class`` puts under it within the Quart
versions it was written for.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Generator
from typing import Any

from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable, ASGISendEvent
from hypercorn.utils import UnexpectedMessageError
from quart import Request, request
from quart.asgi import ASGIHTTPConnection
from quart.wrappers.request import Body
from werkzeug.exceptions import ClientDisconnected, RequestEntityTooLarge

from . import jsoninput
from ._compat.quart import QuickRequestPath, bodiless, quick_path_applies
from .chunkreader import SMALL_CHUNK

HIGH_WATER = 1 << 20
"""Unread body bytes at which the receive loop stops reading from the client."""
LINGER_SECONDS = 30.0
"""How long a response that came before the end of its request body waits, discarding
the rest of the body, so the client can read the response instead of a reset."""


class FlowControlledBody:
    """A request body whose producer waits while a streaming consumer is behind.

    Quart's body interface (iterate it, await it whole, ``append``, ``set_complete``,
    ``set_result``, ``clear``) with state of its own: nothing of Quart's ``Body``
    is inherited, so a new Quart cannot change it underneath.

    The size limit applies to bodies awaited whole; a body declared larger
    than the limit is still received (flow-controlled) so that a streaming view
    can lift the limit without losing bytes, and raises 413 when read otherwise.
    """

    def __init__(self, expected_content_length: int | None, max_content_length: int | None):
        self._parts: list[bytes] = []
        self._size = 0
        self._ended = asyncio.Event()
        """Set when no more data will come."""
        self._arrived = asyncio.Event()
        """Set while received chunks wait unread (or the body ended)."""
        self._drained = asyncio.Event()
        self._max_bytes = max_content_length
        self._error: Exception | None = None
        """Raised to the reader (not to the ASGI server): too large, or the client left."""
        self._whole = False
        self._declared_too_large = (
            expected_content_length is not None
            and max_content_length is not None
            and expected_content_length > max_content_length
        )
        self._discarding = False

    def __aiter__(self) -> FlowControlledBody:
        if self._declared_too_large:
            raise RequestEntityTooLarge()
        return self

    async def __anext__(self) -> bytes:
        try:
            if self._error is not None:
                raise self._error
            if not self._ended.is_set():
                await self._arrived.wait()
            if self._parts:
                return self._take()
            if self._error is not None:
                raise self._error
            raise StopAsyncIteration
        finally:
            self._drained.set()

    def _take(self) -> bytes:
        """The next waiting chunk as it came; a run of small ones joined.

        Large chunks are handed out one by one: a streaming upload sends each as it
        is, and joining the ones that waited copied most of its bytes once more.
        """
        parts = self._parts
        count, taken = 0, 0
        while count < len(parts) and (count == 0 or taken < SMALL_CHUNK):
            if count and len(parts[count]) >= SMALL_CHUNK:
                break  # a large chunk after small ones: its own turn, not a copy
            taken += len(parts[count])
            count += 1
        data = parts[0] if count == 1 else b"".join(parts[:count])
        del parts[:count]
        self._size -= taken
        if not parts:
            self._arrived.clear()
        return data

    def __await__(self) -> Generator[Any, None, Any]:
        if self._declared_too_large:
            raise RequestEntityTooLarge()
        self._whole = True
        self._check_size()
        self._drained.set()
        if self._error is not None:
            raise self._error
        yield from self._ended.wait().__await__()
        if self._error is not None:
            raise self._error
        return b"".join(self._parts)

    def append(self, data: bytes) -> None:
        """Keep received bytes; enforce the size limit once the body is awaited whole."""
        if data == b"" or self._error is not None or self._discarding:
            return
        self._parts.append(bytes(data))
        self._size += len(data)
        self._arrived.set()
        self._check_size()

    def clear(self) -> None:
        """Drop what was received and not read."""
        self._parts = []
        self._size = 0

    def _check_size(self) -> None:
        limit = self._max_bytes
        if self._whole and limit is not None and self._size > limit:
            self._error = RequestEntityTooLarge()
            self.set_complete()

    def set_complete(self) -> None:
        """No more data will come."""
        self._ended.set()
        self._arrived.set()
        self._drained.set()

    def set_result(self, data: bytes) -> None:
        """The whole body at once (tests)."""
        self.append(data)
        self.set_complete()

    async def wait_for_room(self) -> None:
        """Block the producer while ``HIGH_WATER`` bytes wait unread and nobody awaits it whole."""
        while (
            not self._whole
            and not self._discarding
            and self._error is None
            and not self._ended.is_set()
            and self._size >= HIGH_WATER
        ):
            self._drained.clear()
            await self._drained.wait()

    def abort(self) -> None:
        """The client went away before sending everything: any later read fails.

        A reader already waiting is left alone: the server cancels the request
        task anyway, and one interruption is easier to clean up after than two.
        A reader that comes back later (its cancellation swallowed somewhere)
        gets an error instead of waiting forever.
        """
        if not self._ended.is_set():
            self._error = ClientDisconnected("the client disconnected during the upload")

    def discard_unread(self) -> None:
        """The response has started: drop what the view did not read, never pause again.

        Otherwise a view that answers before reading the body (an upload refused
        with 404, or failed with 502) leaves the receive loop paused and the
        server's queue full: the connection is never closed and the client hangs
        sending the rest of its body.
        """
        self._discarding = True
        self._drained.set()

    async def wait_complete(self, timeout: float) -> None:
        """Wait (bounded) until the client has sent its whole body."""
        if self._ended.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ended.wait(), timeout)

    def lift_size_limit(self) -> None:
        """No ``MAX_CONTENT_LENGTH`` for this body: the view streams it somewhere else."""
        self._max_bytes = None
        self._declared_too_large = False


def blueprint_and_parents(name: str) -> list[str]:
    """``"a.b.c"`` -> ``["a.b.c", "a.b", "a"]``: a nested blueprint's name and its parents'."""
    names = [name]
    while "." in names[-1]:
        names.append(names[-1].rpartition(".")[0])
    return names


class StreamingRequest(Request):
    """The kernel's request class: bodies are flow-controlled, JSON is parsed by ``jsoninput``."""

    body_class = FlowControlledBody  # type: ignore[assignment]  # Body's interface, not its class
    _matched: tuple[Any, str | None, list[str]] | None = None
    _decoded: dict[bool, Any] | None = None
    """``get_json``'s results, by ``silent`` (made on first use)."""

    def _blueprint_names(self) -> tuple[str | None, list[str]]:
        """The matched rule's blueprint and its parents, worked out once per rule."""
        rule = self.url_rule
        known = self._matched
        if known is not None and known[0] is rule:
            return known[1], known[2]
        endpoint = rule.endpoint if rule is not None else None
        name = endpoint.rsplit(".", 1)[0] if endpoint is not None and "." in endpoint else None
        names = blueprint_and_parents(name) if name is not None else []
        self._matched = (rule, name, names)
        return name, names

    @property
    def blueprint(self) -> str | None:
        """Quart's ``blueprint``, without working it out from the endpoint on every use.

        Quart reads ``blueprints`` three times per request (before-request hooks,
        after-request hooks, teardown), each time from ``blueprint``, which reads
        ``endpoint`` twice, plus an import statement: for a view in a blueprint
        (every API route) that is most of the cost of the hook walk.
        """
        return self._blueprint_names()[0]

    @property
    def blueprints(self) -> list[str]:
        """Quart's ``blueprints``: the blueprint and its parents, innermost first."""
        return self._blueprint_names()[1]

    async def get_json(self, force: bool = False, silent: bool = False, cache: bool = True) -> Any:
        """Quart's ``get_json``, through ``jsoninput.decode`` (bounded depth, storable text).

        What ``decode`` refuses is a 400 even when ``silent``: such a body is JSON,
        just not JSON the server takes.
        """
        decoded = self._decoded
        if cache and decoded is not None and silent in decoded:
            return decoded[silent]
        if not (force or self.is_json):
            return None
        data = await self.get_data(cache=cache, as_text=True)
        try:
            result = jsoninput.decode(data)
        except ValueError as error:
            result = None if silent else self.on_json_loading_failed(error)
        if cache:
            if self._decoded is None:
                self._decoded = {}
            self._decoded[silent] = result
        return result


def _lingering(body: FlowControlledBody, send: ASGISendCallable) -> ASGISendCallable:
    """``send`` for a request whose body may still be arriving (see ``handle_request``)."""

    async def sending(message: ASGISendEvent) -> None:
        if message["type"] == "http.response.start":
            body.discard_unread()
        elif message["type"] == "http.response.body" and not message.get("more_body"):
            await body.wait_complete(LINGER_SECONDS)
        try:
            await send(message)
        except UnexpectedMessageError:
            # the connection closed before the answer (the server is shutting down,
            # or the client left mid-upload): there is nobody to send it to
            body.abort()

    return sending


def lingering_send(request: Request, send: ASGISendCallable) -> ASGISendCallable:
    """``send`` for answering ``request``: see ``FlowControlledConnection.handle_request``."""
    body = request.body
    if isinstance(body, FlowControlledBody) and not bodiless(request):
        return _lingering(body, send)
    return send


class FlowControlledConnection(ASGIHTTPConnection):
    """Feeds request bodies with back-pressure (see the module docstring)."""

    async def handle_request(self, request: Request, send: ASGISendCallable) -> None:
        """Quart's ``handle_request``, with a ``send`` that lets the body go once answered.

        Once the response starts, unread body bytes are discarded; the end of such
        a response waits until the client has sent the rest of its body (at most
        ``LINGER_SECONDS``): closing the connection on unread bytes would reset it,
        and a client that reads only after sending (most do) would see the reset
        instead of the error response.
        """
        await super().handle_request(request, lingering_send(request, send))

    async def handle_messages(self, request: Request, receive: ASGIReceiveCallable) -> None:
        """Move body messages into the request, pausing while the view is behind."""
        body = request.body
        while True:
            message = await receive()
            if message["type"] == "http.request":
                body.append(message.get("body", b""))
                if not message.get("more_body", False):
                    body.set_complete()
                elif isinstance(body, FlowControlledBody):
                    await body.wait_for_room()
            elif message["type"] == "http.disconnect":
                if isinstance(body, FlowControlledBody):
                    body.abort()
                return


class FastConnection(FlowControlledConnection, QuickRequestPath):
    """``FlowControlledConnection`` on ``QuickRequestPath`` (``hostgate._compat.quart``)."""


def connection_class() -> type[ASGIHTTPConnection]:
    """The app's ``asgi_http_class``: ``FastConnection`` or ``FlowControlledConnection``.

    ``FastConnection`` within the Quart versions ``QuickRequestPath`` was written for.
    """
    return FastConnection if quick_path_applies() else FlowControlledConnection


def streamed_body() -> FlowControlledBody | Body:
    """The current request's body for a view that streams it: no size limit applies.

    Iterate the result (``async for chunk in body``); never await it whole.
    """
    request.max_content_length = None
    body = request.body
    if isinstance(body, FlowControlledBody):
        body.lift_size_limit()
    return body
