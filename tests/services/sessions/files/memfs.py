"""A tiny in-memory file protocol for kernel route tests (``memfs``, plus ``memlite``).

``memfs`` offers every operation except chmod and reports basic attributes and
FTP-like stat fields; ``memlite`` offers list/download/upload only; ``memsink``
swallows uploads slowly and serves 128 MiB of zeros (memory tests). The
filesystem is one dict per connection id, shared by every adapter instance, so
tests can look at what the routes did. ``STATE`` records opens, closes and the
last upload outcome; ``FAILURES`` makes the next operation on a path fail.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hostgate import (
    ConnectionTarget,
    NotFound,
    ProtocolSpec,
    RemoteEntry,
    RemoteNotFound,
    hookimpl,
)

WHEN = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)


@dataclass
class MemState:
    """Shared observations."""

    opened: int = 0
    closed: int = 0
    open_now: int = 0
    uploads_failed: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    files: dict[str, dict[str, bytes | None]] = field(default_factory=dict)
    failures: dict[str, BaseException] = field(default_factory=dict)
    declared: list[int | None] = field(default_factory=list)
    """The ``size`` each ``write`` was handed (legacy writes take none)."""
    pieces: list[int] = field(default_factory=list)
    """The length of every chunk ``write`` received."""
    gate: asyncio.Event | None = None

    def reset(self) -> None:
        """Forget everything (one test's state)."""
        self.__init__()  # type: ignore[misc]


STATE = MemState()


def _parent(path: str) -> str:
    trimmed = path.rstrip("/") or "/"
    head = trimmed.rsplit("/", 1)[0]
    return head or "/"


def _norm(path: str) -> str:
    if path in ("", "."):
        return "/"
    return "/" + path.strip("/") if path != "/" else "/"


class MemFiles:
    """Directories map to None, files to bytes."""

    def __init__(self, target: ConnectionTarget, operations: frozenset[str]) -> None:
        self.tree = STATE.files.setdefault(target.connection_id, {"/": None})
        self.operations = operations
        self.closed = False

    def _fail(self, path: str) -> None:
        error = STATE.failures.pop(path, None)
        if error is not None:
            raise error

    async def _gate(self) -> None:
        STATE.in_flight += 1
        STATE.max_in_flight = max(STATE.max_in_flight, STATE.in_flight)
        try:
            if STATE.gate is not None:
                await STATE.gate.wait()
        finally:
            STATE.in_flight -= 1

    def _entry(self, path: str) -> RemoteEntry:
        if path not in self.tree:
            raise RemoteNotFound(f"No such file: {path}")
        data = self.tree[path]
        name = path.rsplit("/", 1)[-1] or "/"
        return RemoteEntry(name=name, is_dir=data is None, size=len(data or b""), mtime=WHEN)

    async def list(self, path: str) -> list[RemoteEntry]:
        path = _norm(path)
        self._fail(path)
        await self._gate()
        if self.tree.get(path, b"") is not None:
            raise RemoteNotFound(f"No such directory: {path}")
        prefix = path.rstrip("/") + "/"
        return [
            self._entry(p)
            for p in self.tree
            if p != "/" and p.startswith(prefix) and "/" not in p[len(prefix) :]
        ]

    async def stat(self, path: str) -> RemoteEntry:
        path = _norm(path)
        self._fail(path)
        return self._entry(path)

    def read(self, path: str, offset: int = 0, length: int | None = None) -> AsyncIterator[bytes]:
        return self._read(_norm(path), offset, length)

    async def _read(self, path: str, offset: int, length: int | None) -> AsyncIterator[bytes]:
        self._fail(path)
        data = self.tree.get(path)
        if data is None:
            raise RemoteNotFound(f"No such file: {path}")
        end = len(data) if length is None else offset + length
        for start in range(offset, end, 1000):
            await asyncio.sleep(0)
            yield data[start : min(start + 1000, end)]

    async def write(self, path: str, chunks: AsyncIterator[bytes], size: int | None = None) -> int:
        STATE.declared.append(size)
        return await self._write(path, chunks)

    async def _write(self, path: str, chunks: AsyncIterator[bytes]) -> int:
        path = _norm(path)
        self._fail(path)
        if self.tree.get(_parent(path), b"") is not None:
            raise RemoteNotFound(f"No such directory: {_parent(path)}")
        temp = f"{_parent(path).rstrip('/')}/.part-{id(self)}"
        self.tree[temp] = b""
        parts: list[bytes] = []
        try:
            async for chunk in chunks:
                STATE.pieces.append(len(chunk))
                parts.append(chunk)
                self.tree[temp] = b"".join(parts)
        except BaseException:
            STATE.uploads_failed += 1
            del self.tree[temp]
            raise
        self.tree[path] = self.tree.pop(temp)
        return sum(len(p) for p in parts)

    async def mkdir(self, path: str) -> None:
        path = _norm(path)
        self._fail(path)
        self.tree[path] = None

    async def remove(self, path: str) -> None:
        path = _norm(path)
        self._fail(path)
        if path not in self.tree:
            raise RemoteNotFound(f"No such file: {path}")
        for key in [k for k in self.tree if k == path or k.startswith(path + "/")]:
            del self.tree[key]

    async def rename(self, old_path: str, new_path: str) -> None:
        old_path, new_path = _norm(old_path), _norm(new_path)
        self._fail(old_path)
        for key in [k for k in self.tree if k == old_path or k.startswith(old_path + "/")]:
            self.tree[new_path + key[len(old_path) :]] = self.tree.pop(key)

    async def chmod(self, path: str, mode: int) -> None:
        raise NotFound("not offered")

    async def copy(self, src_path: str, dest_path: str) -> None:
        src_path, dest_path = _norm(src_path), _norm(dest_path)
        self._fail(src_path)
        for key in [k for k in self.tree if k == src_path or k.startswith(src_path + "/")]:
            self.tree[dest_path + key[len(src_path) :]] = self.tree[key]

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            STATE.closed += 1
            STATE.open_now -= 1


class LegacyFiles(MemFiles):
    """A pack written before ``write`` took the declared ``size``."""

    async def write(self, path: str, chunks: AsyncIterator[bytes]) -> int:  # type: ignore[override]
        return await self._write(path, chunks)


class SlowSink(MemFiles):
    """Discards uploads slowly and serves zeros: a remote slower than the client."""

    async def write(self, path: str, chunks: AsyncIterator[bytes], size: int | None = None) -> int:
        total = 0
        async for chunk in chunks:
            total += len(chunk)
            await asyncio.sleep(len(chunk) / SINK_RATE)
        return total

    async def stat(self, path: str) -> RemoteEntry:
        return RemoteEntry(name="zeros", is_dir=False, size=SINK_SIZE, mtime=WHEN)

    def read(self, path: str, offset: int = 0, length: int | None = None) -> AsyncIterator[bytes]:
        return self._zeros(SINK_SIZE - offset if length is None else length)

    async def _zeros(self, length: int) -> AsyncIterator[bytes]:
        block = bytes(256 * 1024)
        while length > 0:
            await asyncio.sleep(0)
            yield block[: min(length, len(block))]
            length -= len(block)


SINK_SIZE = 128 * 1024 * 1024
SINK_RATE = 64 * 1024 * 1024
"""Bytes per second the sink accepts: slower than a client on loopback."""
FULL = frozenset({"list", "download", "upload", "mkdir", "delete", "rename", "stat", "copy"})
LITE = frozenset({"list", "download", "upload"})


async def _open(kernel: Any, target: ConnectionTarget, operations: frozenset[str]) -> MemFiles:
    STATE.opened += 1
    STATE.open_now += 1
    return MemFiles(target, operations)


async def open_memfs(kernel: Any, target: ConnectionTarget) -> MemFiles:
    """A full in-memory session."""
    return await _open(kernel, target, FULL)


async def open_memlite(kernel: Any, target: ConnectionTarget) -> MemFiles:
    """A reduced in-memory session."""
    return await _open(kernel, target, LITE)


async def open_memsink(kernel: Any, target: ConnectionTarget) -> MemFiles:
    """A slow sink (uploads) and a fast source of zeros (downloads)."""
    STATE.opened += 1
    STATE.open_now += 1
    return SlowSink(target, LITE)


async def open_memold(kernel: Any, target: ConnectionTarget) -> MemFiles:
    """A full in-memory session whose ``write`` predates ``size``."""
    STATE.opened += 1
    STATE.open_now += 1
    return LegacyFiles(target, FULL)


@hookimpl
def register_protocols() -> Sequence[ProtocolSpec]:
    """``memfs``, ``memlite``, ``memsink`` and ``memold``."""
    return [
        ProtocolSpec(
            name="memfs",
            default_port=1,
            open_files=open_memfs,
            stat_fields=("size", "mtime", "isDirectory"),
        ),
        ProtocolSpec(name="memlite", default_port=1, open_files=open_memlite),
        ProtocolSpec(name="memsink", default_port=1, open_files=open_memsink),
        ProtocolSpec(name="memold", default_port=1, open_files=open_memold),
    ]


@hookimpl
def register_permissions() -> dict[str, list[str]]:
    """Using the in-memory protocols."""
    return {
        "connections": [
            "connections.use_memfs",
            "connections.use_memlite",
            "connections.use_memsink",
            "connections.use_memold",
        ]
    }
