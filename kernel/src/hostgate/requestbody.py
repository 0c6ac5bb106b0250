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
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Generator
from typing import Any, cast

from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable, ASGISendEvent
from hypercorn.utils import UnexpectedMessageError
from quart import Request, Response, request
from quart.asgi import ASGIHTTPConnection, _handle_exception
from quart.helpers import _split_blueprint_path
from quart.typing import ResponseTypes
from quart.utils import cancel_tasks, encode_headers, raise_task_exceptions
from quart.wrappers.request import Body
from quart.wrappers.response import DataBody
from werkzeug.exceptions import ClientDisconnected, RequestEntityTooLarge

from . import jsoninput
from .chunkreader import SMALL_CHUNK

HIGH_WATER = 1 << 20
"""Unread body bytes at which the receive loop stops reading from the client."""
HTTP1 = ("1.0", "1.1")
LINGER_SECONDS = 30.0
"""How long a response that came before the end of its request body waits, discarding
the rest of the body, so the client can read the response instead of a reset."""


class FlowControlledBody(Body):
    """A request body whose producer waits while a streaming consumer is behind.

    The size limit applies to bodies awaited whole; a body declared larger
    than the limit is still received (flow-controlled) so that a streaming view
    can lift the limit without losing bytes, and raises 413 when read otherwise.
    """

    def __init__(self, expected_content_length: int | None, max_content_length: int | None):
        super().__init__(expected_content_length, max_content_length)
        self._parts: list[bytes] = []
        self._size = 0
        self._drained = asyncio.Event()
        self._whole = False
        self._declared_too_large = self._must_raise is not None
        self._must_raise = None
        self._discarding = False

    def __aiter__(self) -> FlowControlledBody:
        if self._declared_too_large:
            raise RequestEntityTooLarge()
        return self

    async def __anext__(self) -> bytes:
        try:
            if self._must_raise is not None:
                raise self._must_raise
            if not self._complete.is_set():
                await self._has_data.wait()
            if self._parts:
                return self._take()
            if self._must_raise is not None:
                raise self._must_raise
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
            self._has_data.clear()
        return data

    def __await__(self) -> Generator[Any, None, Any]:
        if self._declared_too_large:
            raise RequestEntityTooLarge()
        self._whole = True
        self._check_size()
        self._drained.set()
        if self._must_raise is not None:
            raise self._must_raise
        yield from self._complete.wait().__await__()
        if self._must_raise is not None:
            raise self._must_raise
        return b"".join(self._parts)

    def append(self, data: bytes) -> None:
        """Keep received bytes; enforce the size limit once the body is awaited whole."""
        if data == b"" or self._must_raise is not None or self._discarding:
            return
        self._parts.append(bytes(data))
        self._size += len(data)
        self._has_data.set()
        self._check_size()

    def clear(self) -> None:
        """Drop what was received and not read."""
        self._parts = []
        self._size = 0

    def _check_size(self) -> None:
        limit = self._max_content_length
        if self._whole and limit is not None and self._size > limit:
            self._must_raise = RequestEntityTooLarge()
            self.set_complete()

    def set_complete(self) -> None:
        """No more data will come."""
        super().set_complete()
        self._drained.set()

    async def wait_for_room(self) -> None:
        """Block the producer while ``HIGH_WATER`` bytes wait unread and nobody awaits it whole."""
        while (
            not self._whole
            and not self._discarding
            and self._must_raise is None
            and not self._complete.is_set()
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
        if not self._complete.is_set():
            self._must_raise = ClientDisconnected("the client disconnected during the upload")

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
        if self._complete.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._complete.wait(), timeout)

    def lift_size_limit(self) -> None:
        """No ``MAX_CONTENT_LENGTH`` for this body: the view streams it somewhere else."""
        self._max_content_length = None
        self._declared_too_large = False


class StreamingRequest(Request):
    """The kernel's request class: bodies are flow-controlled, JSON is parsed by ``jsoninput``."""

    body_class = FlowControlledBody
    _matched: tuple[Any, str | None, list[str]] | None = None

    def _blueprint_names(self) -> tuple[str | None, list[str]]:
        """The matched rule's blueprint and its parents, worked out once per rule."""
        rule = self.url_rule
        known = self._matched
        if known is not None and known[0] is rule:
            return known[1], known[2]
        endpoint = rule.endpoint if rule is not None else None
        name = endpoint.rsplit(".", 1)[0] if endpoint is not None and "." in endpoint else None
        names = _split_blueprint_path(name) if name is not None else []
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
        if cache and self._cached_json[silent] is not Ellipsis:
            return self._cached_json[silent]
        if not (force or self.is_json):
            return None
        data = await self.get_data(cache=cache, as_text=True)
        try:
            result = jsoninput.decode(data)
        except ValueError as error:
            result = None if silent else self.on_json_loading_failed(error)
        if cache:
            self._cached_json[silent] = result
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


def _bodiless(request: Request) -> bool:
    """A request that announced no body (most GETs): nothing can be left unread."""
    # getlist: werkzeug's get and ``in`` build an exception for every absent header
    headers = request.headers
    return not headers.getlist("Transfer-Encoding") and headers.getlist("Content-Length") in (
        [],
        ["0"],
    )


def _timeout_of(app: Any, response: ResponseTypes) -> float | None:
    """How long sending ``response`` may take: its own ``timeout``, else ``RESPONSE_TIMEOUT``."""
    if isinstance(response, Response) and response.timeout != Ellipsis:
        return cast(float | None, response.timeout)
    return cast(float | None, app.config["RESPONSE_TIMEOUT"])


async def _first_of(work: asyncio.Task[None], reader: asyncio.Task[None]) -> None:
    """Wait until ``work`` or the body ``reader`` ends, cancel the other (Quart's way)."""
    done, pending = await asyncio.wait([work, reader], return_when=asyncio.FIRST_COMPLETED)
    await cancel_tasks(pending)
    raise_task_exceptions(done)


class FlowControlledConnection(ASGIHTTPConnection):
    """Feeds request bodies with back-pressure (see the module docstring)."""

    async def __call__(self, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        """Quart's two tasks (body reader, view) only for a request that may have a body.

        Quart runs every request as two tasks, the view and a reader of the body
        messages, and whichever ends first cancels the other: the reader ends when
        the client disconnects, which cancels the view. An HTTP/1 request without
        ``Content-Length`` (or with 0) and without ``Transfer-Encoding`` has no
        body (RFC 9112, 6.3): its one body message is read here, and when it ends
        the body (an ASGI client that sends a body without announcing it, such as
        Quart's test client, sends it whole in that message) the view runs in
        this task, the server's, and a finished response is sent from it too. A
        client that leaves meanwhile no longer cancels the view (its answer goes
        nowhere); a streamed response is still sent beside a reader that cancels
        it when the client leaves. HTTP/2 and 3 requests carry a body without
        announcing its length: Quart's way, as is a body in several messages.
        """
        request = self._create_request_from_scope(send)
        if self.scope["http_version"] in HTTP1 and _bodiless(request):
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left before its request ended: nobody to answer
            request.body.append(message.get("body", b""))
            if not message.get("more_body", False):
                request.body.set_complete()
                await self._answer_here(request, receive, send)
                return
        receiver = asyncio.ensure_future(self.handle_messages(request, receive))
        handler = asyncio.ensure_future(self.handle_request(request, send))
        await _first_of(handler, receiver)

    async def _answer_here(
        self, request: Request, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        """Answer a request received whole from this task.

        A streamed answer goes beside a reader of the request's messages, so that
        the client leaving cancels it.
        """
        response = await self._respond(request)
        timeout = _timeout_of(self.app, response)
        if type(getattr(response, "response", None)) is DataBody:
            await self._send_within(send, response, timeout)
            return
        sender = asyncio.ensure_future(self._send_within(send, response, timeout))
        await _first_of(sender, asyncio.ensure_future(self.handle_messages(request, receive)))

    async def _respond(self, request: Request) -> ResponseTypes:
        """The view's response, or the error handlers' for what it raised."""
        try:
            return await self.app.handle_request(request)
        except Exception as error:
            return await _handle_exception(self.app, error)

    async def _send_within(
        self, send: ASGISendCallable, response: ResponseTypes, timeout: float | None
    ) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._send_response(send, response)

    async def handle_request(self, request: Request, send: ASGISendCallable) -> None:
        """Run the view, then send its response within the response timeout.

        Once the response starts, unread body bytes are discarded; the end of such
        a response waits until the client has sent the rest of its body (at most
        ``LINGER_SECONDS``): closing the connection on unread bytes would reset it,
        and a client that reads only after sending (most do) would see the reset
        instead of the error response.

        The response is sent under ``asyncio.timeout`` in this task, where Quart's
        ``wait_for`` runs it as a task of its own (a task, a copy of the context
        and another pass of the event loop for every response), with the same
        bound: ``response.timeout``, else ``RESPONSE_TIMEOUT``.
        """
        body = request.body
        if isinstance(body, FlowControlledBody) and not _bodiless(request):
            send = _lingering(body, send)
        response = await self._respond(request)
        await self._send_within(send, response, _timeout_of(self.app, response))

    async def _send_response(self, send: ASGISendCallable, response: ResponseTypes) -> None:
        """A finished body goes in one message with the end of the response, else as Quart does.

        Quart sends every body as its chunks and then an empty closing message:
        three trips through the server for a small JSON answer instead of two.
        """
        content = getattr(response, "response", None)
        if type(content) is not DataBody:
            await super()._send_response(send, response)
            return
        data = content.data
        if content.begin != 0 or content.end != len(data):
            data = data[content.begin : content.end]  # a range request's part
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": encode_headers(response.headers),
            }
        )
        await send({"type": "http.response.body", "body": data, "more_body": False})

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


def streamed_body() -> Body:
    """The current request's body for a view that streams it: no size limit applies.

    Iterate the result (``async for chunk in body``); never await it whole.
    """
    request.max_content_length = None
    body = request.body
    if isinstance(body, FlowControlledBody):
        body.lift_size_limit()
    return body
