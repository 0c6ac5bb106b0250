"""WebSocket endpoints at the root (not under ``/api/v1``), per WIRE-FACTS §5.2.

``blueprint_for(kernel)`` mounts ``/ws/<name>`` for every loaded protocol with a
terminal, and ``/ws/<name>`` plus ``/ws/<name>/<connectionId>`` for every
protocol with a byte relay; the same again for each of a protocol's
``socket_aliases``; and ``/ws/sessions/<id>/watch``, the live view of a running
terminal, and ``/ws/events``, the open app's live nudges (``sessions`` and ``events``
are no protocol's socket name). Each view is guarded by
``@ticket``: it redeems the single-use ticket itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from quart import Blueprint

from ..descriptors import ProtocolSpec
from ..guards import ticket
from ..plugins import PluginConflict
from .events import serve_events
from .relay import serve_relay
from .terminal import serve_terminal
from .watch import serve_watch

if TYPE_CHECKING:
    from ..kernel import Kernel


def _terminal_view(kernel: Kernel, spec: ProtocolSpec) -> Callable[[], Awaitable[None]]:
    @ticket
    async def terminal_socket() -> None:
        """A terminal session socket."""
        await serve_terminal(kernel, spec)

    return terminal_socket


def _relay_view(kernel: Kernel, spec: ProtocolSpec) -> Callable[..., Awaitable[None]]:
    @ticket
    async def relay_socket(connection_id: str | None = None) -> None:
        """A byte relay socket."""
        await serve_relay(kernel, spec, connection_id)

    return relay_socket


def _watch_view(kernel: Kernel) -> Callable[..., Awaitable[None]]:
    @ticket
    async def watch_socket(session_id: str) -> None:
        """A read-only live view of a running terminal session."""
        await serve_watch(kernel, session_id)

    return watch_socket


def _events_view(kernel: Kernel) -> Callable[[], Awaitable[None]]:
    @ticket
    async def events_socket() -> None:
        """The open app's live nudges (something it shows changed)."""
        await serve_events(kernel)

    return events_socket


def _socket_names(kernel: Kernel) -> list[tuple[str, ProtocolSpec]]:
    """(path name, protocol) for every socket: each name and alias, once."""
    owners: dict[str, str] = {
        "sessions": "the kernel's live view",
        "events": "the kernel's live nudges",
    }
    names: list[tuple[str, ProtocolSpec]] = []
    for name, spec in sorted(kernel.protocols.items()):
        if spec.open_terminal is None and spec.open_stream is None:
            continue
        for socket_name in (name, *spec.socket_aliases):
            if socket_name in owners:
                raise PluginConflict(
                    f"socket /ws/{socket_name} is claimed by both protocol "
                    f"{owners[socket_name]!r} and {name!r}"
                )
            owners[socket_name] = name
            names.append((socket_name, spec))
    return names


def blueprint_for(kernel: Kernel) -> Blueprint:
    """The socket routes of the loaded protocols (and their ``socket_aliases``)."""
    blueprint = Blueprint("ws", __name__)
    for name, spec in _socket_names(kernel):
        if spec.open_terminal is not None:
            blueprint.add_websocket(f"/ws/{name}", f"terminal_{name}", _terminal_view(kernel, spec))
        elif spec.open_stream is not None:
            view = _relay_view(kernel, spec)
            blueprint.add_websocket(f"/ws/{name}", f"relay_{name}", view)
            blueprint.add_websocket(f"/ws/{name}/<connection_id>", f"relay_{name}_id", view)
    blueprint.add_websocket("/ws/sessions/<session_id>/watch", "watch", _watch_view(kernel))
    blueprint.add_websocket("/ws/events", "events", _events_view(kernel))
    return blueprint
