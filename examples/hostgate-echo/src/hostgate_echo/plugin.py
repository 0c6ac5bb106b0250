"""The echo pack's hooks."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from hostgate import (
    ConnectionTarget,
    KernelAPI,
    ProtocolSpec,
    SettingSpec,
    TerminalSize,
    answers,
    current_kernel,
    hookimpl,
    public,
)
from quart import Blueprint

blueprint = Blueprint("echo", __name__)


class EchoTerminal:
    """A terminal that sends back whatever it is sent."""

    def __init__(self, shout: bool, size: TerminalSize) -> None:
        self.shout = shout
        self.size = size
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._queue.put_nowait(b"echo ready\r\n")

    async def read(self) -> bytes:
        """Next output, or b"" once closed."""
        return await self._queue.get()

    async def write(self, data: bytes) -> None:
        """Echo the input."""
        await self._queue.put(data.upper() if self.shout else data)

    async def resize(self, size: TerminalSize) -> None:
        """Remember the size and say so."""
        self.size = size
        await self._queue.put(f"[{size.cols}x{size.rows}]".encode())

    async def close(self) -> None:
        """End the output stream."""
        await self._queue.put(b"")


async def open_terminal(
    kernel: KernelAPI, target: ConnectionTarget, size: TerminalSize
) -> EchoTerminal:
    """Open an echo terminal for a stored ``echo`` connection."""
    return EchoTerminal(bool(kernel.settings.get("echo.shout")), size)


@blueprint.get("/echo/ping")
@public
@answers(dict[str, Any])
async def ping() -> dict[str, Any]:
    """Answer with the pack's name and its setting."""
    return {"pong": True, "shout": current_kernel().settings.get("echo.shout")}


@hookimpl
def register_protocols() -> Sequence[ProtocolSpec]:
    """The ``echo`` protocol."""
    return [ProtocolSpec(name="echo", default_port=7, title="Echo", open_terminal=open_terminal)]


@hookimpl
def register_permissions() -> Mapping[str, Sequence[str]]:
    """Using echo connections."""
    return {"connections": ["connections.use_echo"]}


@hookimpl
def register_settings() -> Sequence[SettingSpec]:
    """``echo.shout``."""
    return [SettingSpec("echo.shout", bool, False, description="Upper-case the echo")]


@hookimpl
def register_blueprints() -> Sequence[Blueprint]:
    """``GET /api/v1/echo/ping``."""
    return [blueprint]
