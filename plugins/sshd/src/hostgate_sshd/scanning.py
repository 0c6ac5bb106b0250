"""What a door's raw channel reports: file events found in the bytes passing by.

A ``Scanner`` reads a copy of each direction's bytes (never changing them) and
returns the file events they show; the relay (``channels.py``) hands them to
``DoorChannel.file_event``. ``Framer`` cuts a byte stream of length-prefixed
packets (SFTP's) into packets, keeping only each packet's first bytes, so a
32 KiB write costs a few hundred copied bytes whatever its size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class FileEvent:
    """One event for the file session (``DoorChannel.file_event``'s arguments)."""

    action: str
    path: str
    size: int | None = None
    detail: str = ""


class Scanner(Protocol):
    """Finds file events in a channel's traffic."""

    def from_client(self, data: bytes) -> list[FileEvent]:
        """Bytes the client sent (before they go to the server)."""

    def from_server(self, data: bytes) -> list[FileEvent]:
        """Bytes the server sent (before they go to the client)."""

    def finish(self, bytes_in: int, bytes_out: int, exit_status: int | None) -> list[FileEvent]:
        """The channel ended: events known only at the end (rsync's, git's)."""


@dataclass(frozen=True)
class Packet:
    """A packet's type, its first body bytes (after the type) and its body's full length."""

    type: int
    head: bytes
    length: int


class Framer:
    """Cuts ``uint32 length, byte type, body`` packets out of a byte stream.

    ``head_cap(type)`` says how many body bytes of a packet of that type are kept; the
    rest is skipped without copying.
    """

    def __init__(self, head_cap: Callable[[int], int]) -> None:
        self._cap = head_cap
        self._buf = bytearray()
        self._want = 5  # the length and the type first
        self._type = -1
        self._length = 0
        self._skip = 0

    def feed(self, data: bytes) -> list[Packet]:
        """The packets whose kept bytes are complete within ``data`` (and what came before)."""
        packets: list[Packet] = []
        pos, end = 0, len(data)
        while pos < end:
            if self._skip:
                step = min(self._skip, end - pos)
                self._skip -= step
                pos += step
                continue
            take = min(self._want - len(self._buf), end - pos)
            self._buf += data[pos : pos + take]
            pos += take
            if len(self._buf) < self._want:
                break
            if self._type < 0:
                length = int.from_bytes(self._buf[:4], "big")
                self._type = self._buf[4]
                self._length = max(length - 1, 0)
                self._buf.clear()
                self._want = min(self._length, self._cap(self._type))
                if self._want:
                    continue
            packets.append(Packet(self._type, bytes(self._buf), self._length))
            self._skip = self._length - len(self._buf)
            self._buf.clear()
            self._type = -1
            self._want = 5
        return packets


class Reader:
    """SSH wire types read from a packet's kept bytes (``IndexError`` when cut short)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def u32(self) -> int:
        """A big-endian uint32."""
        end = self.pos + 4
        if end > len(self.data):
            raise IndexError("packet cut short")
        value = int.from_bytes(self.data[self.pos : end], "big")
        self.pos = end
        return value

    def u64(self) -> int:
        """A big-endian uint64."""
        high = self.u32()
        return (high << 32) | self.u32()

    def string(self) -> bytes:
        """A length-prefixed string."""
        length = self.u32()
        end = self.pos + length
        if end > len(self.data):
            raise IndexError("packet cut short")
        value = self.data[self.pos : end]
        self.pos = end
        return value

    def text(self) -> str:
        """A length-prefixed string as text (a remote path: undecodable bytes replaced)."""
        return self.string().decode("utf-8", errors="replace")
