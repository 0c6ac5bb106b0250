"""The ``sftp`` subsystem relayed byte for byte, its packets read as they pass.

The client's SFTP stream goes to the server's ``sftp`` subsystem unchanged (no
re-encoding: the transfer runs at the relay's speed). ``SftpScanner`` reads a copy
of each direction (SFTP version 3, what OpenSSH speaks): it remembers each request
by id, and when the server answers OK it reports the file event, as the browser's
file routes record a successful operation:

- a file opened for reading and closed: ``download`` with the bytes read;
  opened for writing: ``upload`` with the bytes written;
- ``mkdir``; ``delete`` (``remove``, ``rmdir``); ``rename`` (also OpenSSH's
  ``posix-rename``), detail ``old → new``; ``chmod`` (``setstat`` with permissions);
- ``browse`` for each directory listed (``opendir`` to ``close``), with its count of
  entries (``.`` and ``..`` included, as the server lists them).
"""

from __future__ import annotations

from dataclasses import dataclass

from .scanning import FileEvent, Framer, Reader

# packet types (draft-ietf-secsh-filexfer-02, version 3)
OPEN, CLOSE, READ, WRITE = 3, 4, 5, 6
SETSTAT, OPENDIR, READDIR = 9, 11, 12
REMOVE, MKDIR, RMDIR, RENAME = 13, 14, 15, 18
EXTENDED = 200
STATUS, HANDLE, DATA, NAME = 101, 102, 103, 104

FXF_READ = 0x01
FXF_WRITING = 0x02 | 0x04 | 0x08 | 0x10  # write, append, create, truncate
ATTR_SIZE, ATTR_UIDGID, ATTR_PERMISSIONS = 0x1, 0x2, 0x4
FX_OK = 0

REQUEST_HEAD = 16 * 1024
"""Bytes kept of a request (two paths of 4096 bytes and attributes fit)."""
WRITE_HEAD = 4 + 4 + 256 + 8 + 4
"""id, handle (256 bytes at most), offset, data length: the data itself is not kept."""
MAX_PENDING = 65536
"""Requests remembered at once; a client never has this many outstanding."""
POSIX_RENAME = b"posix-rename@openssh.com"


def _request_cap(packet_type: int) -> int:
    return WRITE_HEAD if packet_type == WRITE else REQUEST_HEAD


def _response_cap(packet_type: int) -> int:
    if packet_type == STATUS:
        return 8  # id, code
    if packet_type == HANDLE:
        return 4 + 4 + 256
    if packet_type == NAME:
        return 8  # id, count
    return 4  # the id (the length of DATA is the packet's)


@dataclass
class OpenFile:
    """An open handle: its path and what went through it."""

    path: str
    writing: bool
    directory: bool = False
    read: int = 0
    written: int = 0


class SftpScanner:
    """File events of one SFTP session (a ``Scanner``)."""

    def __init__(self) -> None:
        self._requests = Framer(_request_cap)
        self._responses = Framer(_response_cap)
        self._pending: dict[int, tuple[str, object, object]] = {}
        self._handles: dict[bytes, OpenFile] = {}

    def from_client(self, data: bytes) -> list[FileEvent]:
        """Remember each request by its id."""
        for packet in self._requests.feed(data):
            try:
                self._request(packet.type, Reader(packet.head), packet.length)
            except IndexError:  # a request we cannot read is relayed all the same
                continue
        return []

    def _request(self, kind: int, body: Reader, length: int) -> None:
        if kind < OPEN or kind >= STATUS and kind != EXTENDED:
            return  # init, or not a request
        request_id = body.u32()
        if len(self._pending) >= MAX_PENDING:
            self._pending.clear()
        remember = self._pending.__setitem__
        if kind == OPEN:
            path = body.text()
            flags = body.u32()
            remember(request_id, ("open", path, not flags & FXF_READ or bool(flags & FXF_WRITING)))
        elif kind == OPENDIR:
            path = body.text()
            remember(request_id, ("opendir", path.rstrip("/") or path, None))
        elif kind in (CLOSE, READ, READDIR):
            what = {CLOSE: "close", READ: "read", READDIR: "read"}[kind]
            remember(request_id, (what, body.string(), None))
        elif kind == WRITE:
            handle = body.string()
            body.u64()
            remember(request_id, ("write", handle, body.u32()))
        elif kind in (REMOVE, RMDIR):
            remember(request_id, ("delete", body.text(), None))
        elif kind == MKDIR:
            remember(request_id, ("mkdir", body.text(), None))
        elif kind == RENAME:
            remember(request_id, ("rename", body.text(), body.text()))
        elif kind == SETSTAT:
            path = body.text()
            flags = body.u32()
            if flags & ATTR_SIZE:
                body.u64()
            if flags & ATTR_UIDGID:
                body.u32()
                body.u32()
            if flags & ATTR_PERMISSIONS:
                remember(request_id, ("chmod", path, body.u32() & 0o7777))
        elif kind == EXTENDED and body.string() == POSIX_RENAME:
            remember(request_id, ("rename", body.text(), body.text()))

    def from_server(self, data: bytes) -> list[FileEvent]:
        """Answers: the events of the requests that succeeded."""
        events: list[FileEvent] = []
        for packet in self._responses.feed(data):
            try:
                event = self._response(packet.type, Reader(packet.head), packet.length)
            except IndexError:
                continue
            if event is not None:
                events.append(event)
        return events

    def _response(self, kind: int, body: Reader, length: int) -> FileEvent | None:
        if kind < STATUS:
            return None  # the version
        request = self._pending.pop(body.u32(), None)
        if request is None or kind not in (STATUS, HANDLE, DATA, NAME):
            return None  # ATTRS, EXTENDED_REPLY: nothing to record
        what, first, second = request
        if kind == NAME:  # a directory's entries (or a realpath's answer: no handle)
            opened = self._handles.get(first) if isinstance(first, bytes) else None
            if opened is not None and opened.directory:
                opened.read += body.u32()
            return None
        if kind == DATA:
            opened = self._handles.get(first) if isinstance(first, bytes) else None
            if opened is not None:
                opened.read += max(length - 8, 0)  # id and the data's length
            return None
        if kind == HANDLE:
            handle = body.string()
            if what == "open" and isinstance(first, str):
                self._handles[handle] = OpenFile(first, writing=bool(second))
            elif what == "opendir" and isinstance(first, str):
                self._handles[handle] = OpenFile(first, writing=False, directory=True)
            return None
        if body.u32() != FX_OK:
            return None
        return self._succeeded(what, first, second)

    def _succeeded(self, what: str, first: object, second: object) -> FileEvent | None:
        if what == "write":
            opened = self._handles.get(first) if isinstance(first, bytes) else None
            if opened is not None and isinstance(second, int):
                opened.written += second
            return None
        if what == "close":
            opened = self._handles.pop(first, None) if isinstance(first, bytes) else None
            if opened is None:
                return None
            if opened.directory:
                count = opened.read
                return FileEvent(
                    "browse", opened.path, detail=f"{count} entr{'y' if count == 1 else 'ies'}"
                )
            if opened.writing:
                return FileEvent("upload", opened.path, opened.written)
            return FileEvent("download", opened.path, opened.read)
        if what in ("delete", "mkdir"):
            return FileEvent(what, str(first))
        if what == "rename":
            return FileEvent("rename", str(first), detail=f"{first} \u2192 {second}")
        if what == "chmod" and isinstance(second, int):
            return FileEvent("chmod", str(first), detail=f"{second:04o}")
        return None

    def finish(self, bytes_in: int, bytes_out: int, exit_status: int | None) -> list[FileEvent]:
        """Nothing more: every event was reported when the server answered."""
        return []
