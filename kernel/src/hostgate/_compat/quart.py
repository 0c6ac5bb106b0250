"""A quicker request path through Quart's ASGI connection (Quart internals).

``hostgate.requestbody.FlowControlledConnection`` feeds request bodies with
back-pressure through Quart's public extension points. ``QuickRequestPath``, the
base it is given within ``RANGES`` (``requestbody.connection_class``), adds:

- a request that announces no body (most GETs) is answered in the server's task
  instead of Quart's two (a body reader and the view, each a task);
- a finished body (``DataBody``: every JSON answer) goes in one message with the
  end of the response, where Quart sends its chunks and then an empty closing
  message: three trips through the server for a small answer instead of two;
- the response is sent under ``asyncio.timeout`` in the request's task, where
  Quart's ``wait_for`` makes it a task of its own, with the same bound.

Private names used: Quart's ``ASGIHTTPConnection._create_request_from_scope`` and
``_send_response`` (overridden), ``quart.asgi._handle_exception``. The private function is
looked up when called, so a Quart without it still imports this module. Guarded by
``RANGES`` (``quick_path_applies``); outside them (or with the patches off)
``FlowControlledConnection`` runs on Quart's own request path.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import cast

import quart.asgi
from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable
from quart import Request, Response
from quart.asgi import ASGIHTTPConnection
from quart.typing import ResponseTypes
from quart.utils import cancel_tasks, encode_headers, raise_task_exceptions
from quart.wrappers.response import DataBody

from . import VersionRange, applies

RANGES = (VersionRange("quart", "0.22.0", "0.23"),)
"""The versions this patch was written and tested against."""

HTTP1 = ("1.0", "1.1")


def quick_path_applies() -> bool:
    """Whether ``QuickRequestPath`` may run (patches on, Quart within ``RANGES``)."""
    return applies("quart.connection", *RANGES)


def bodiless(request: Request) -> bool:
    """A request that announced no body (most GETs): nothing can be left unread."""
    # getlist: werkzeug's get and ``in`` build an exception for every absent header
    headers = request.headers
    return not headers.getlist("Transfer-Encoding") and headers.getlist("Content-Length") in (
        [],
        ["0"],
    )


def _timeout_of(app: object, response: ResponseTypes) -> float | None:
    """How long sending ``response`` may take: its own ``timeout``, else ``RESPONSE_TIMEOUT``."""
    if isinstance(response, Response) and response.timeout != Ellipsis:
        return cast(float | None, response.timeout)
    return cast(float | None, app.config["RESPONSE_TIMEOUT"])  # type: ignore[attr-defined]


async def _first_of(work: asyncio.Task[None], reader: asyncio.Task[None]) -> None:
    """Wait until ``work`` or the body ``reader`` ends, cancel the other (Quart's way)."""
    done, pending = await asyncio.wait([work, reader], return_when=asyncio.FIRST_COMPLETED)
    await cancel_tasks(pending)
    raise_task_exceptions(done)


class QuickRequestPath(ASGIHTTPConnection):
    """Quart's connection with the quicker request path (see the module docstring).

    A base for ``requestbody.FlowControlledConnection``, whose ``handle_request``
    wraps ``send`` and then calls this one.
    """

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
        if self.scope["http_version"] in HTTP1 and bodiless(request):
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
            handle_exception = quart.asgi._handle_exception  # type: ignore[attr-defined]
            return cast(ResponseTypes, await handle_exception(self.app, error))

    async def _send_within(
        self, send: ASGISendCallable, response: ResponseTypes, timeout: float | None
    ) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._send_response(send, response)

    async def handle_request(self, request: Request, send: ASGISendCallable) -> None:
        """Run the view, then send its response within the response timeout, in this task.

        The bound is Quart's: ``response.timeout``, else ``RESPONSE_TIMEOUT``.
        """
        response = await self._respond(request)
        await self._send_within(send, response, _timeout_of(self.app, response))

    async def _send_response(self, send: ASGISendCallable, response: ResponseTypes) -> None:
        """A finished body goes in one message with the end of the response, else as Quart does."""
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
