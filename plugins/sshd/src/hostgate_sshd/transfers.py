"""File-transfer commands (``scp -O``, ``rsync``, ``git``) relayed raw, with their events.

These run as ``exec`` commands, but they carry a protocol, not terminal output: the
door relays them byte for byte on a raw channel (a file session, not an asciicast)
and reports what it can know:

- legacy ``scp`` (``scp -t`` receives an upload, ``scp -f`` sends a download): the
  sender's ``C``/``D``/``E`` lines are read as they pass, one ``upload`` or
  ``download`` event per file with its size, a ``mkdir`` per directory uploaded;
- ``rsync --server`` (``--sender``: a download) and git's ``git-upload-pack`` /
  ``git-upload-archive`` (clone, fetch: a download) and ``git-receive-pack`` (push:
  an upload): one event when the command ends, with the command and the bytes each way.
  A failed command is no event. ``git-receive-pack`` exits 0 when a hook or the
  server refused every ref, so a push is an event only when the server's status
  report (``report-status``, read as it passes) says ``unpack ok`` and updated a ref.
"""

from __future__ import annotations

import posixpath
import shlex

from .scanning import FileEvent

MAX_LINE = 64 * 1024
"""An scp control line longer than this is not one: the scanner stops reading."""
GIT_DOWNLOADS = frozenset({"git-upload-pack", "git-upload-archive"})
GIT_UPLOADS = frozenset({"git-receive-pack"})
HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")


def transfer_scanner(command: str) -> ScpScanner | WholeCommand | None:
    """The scanner of a file-transfer command, or None for any other command."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words:
        return None
    program = posixpath.basename(words[0])
    if program == "scp":
        return ScpScanner.of(words[1:])
    if program == "rsync" and "--server" in words:
        action = "download" if "--sender" in words else "upload"
        return WholeCommand(action, words[-1] if len(words) > 2 else ".", command)
    if program == "git" and len(words) >= 3:  # "git upload-pack 'repo'"
        program, words = f"git-{words[1]}", words[1:]
    if program in GIT_DOWNLOADS and len(words) >= 2:
        return WholeCommand("download", words[-1], command)
    if program in GIT_UPLOADS and len(words) >= 2:
        return GitPush("upload", words[-1], command)
    return None


class WholeCommand:
    """One event when the command ends (rsync, git): the command and the bytes each way."""

    def __init__(self, action: str, path: str, command: str) -> None:
        self.action = action
        self.path = path
        self.command = command

    def from_client(self, data: bytes) -> list[FileEvent]:
        """Nothing to read in rsync's or git's own protocol."""
        return []

    def from_server(self, data: bytes) -> list[FileEvent]:
        """Nothing to read in rsync's or git's own protocol."""
        return []

    def finish(self, bytes_in: int, bytes_out: int, exit_status: int | None) -> list[FileEvent]:
        """The event, when the command succeeded."""
        if exit_status != 0:
            return []
        size = bytes_out if self.action == "download" else bytes_in
        detail = f"{self.command[:300]} ({bytes_in} bytes sent, {bytes_out} bytes received)"
        return [FileEvent(self.action, self.path, size, detail)]


class GitPush(WholeCommand):
    """``git-receive-pack``: an upload only when its status report updated a ref.

    The server's bytes are pkt-lines (4 hex digits of length, then the payload): the
    ref advertisement up to a flush packet (``0000``), then the report, each packet on
    side-band channel 1 when the client asked for side-band (its inner pkt-lines may
    span packets). Only one packet is held at a time.
    """

    def __init__(self, action: str, path: str, command: str) -> None:
        super().__init__(action, path, command)
        self._outer = _PktLines()
        self._inner = _PktLines()
        self._advertised = False
        self._unpacked = False
        self._updated = 0
        self._broken = False

    def from_server(self, data: bytes) -> list[FileEvent]:
        """Read the advertisement, then the status report."""
        if self._broken:
            return []
        for packet in self._outer.feed(data):
            if packet is None:  # a flush: the advertisement ends with the first one
                self._advertised = True
            elif self._advertised:
                if packet[:1] == b"\x01":  # side-band data: the report's own pkt-lines
                    for line in self._inner.feed(packet[1:]):
                        self._status(line)
                elif packet[:1] not in (b"\x02", b"\x03"):  # progress and errors aside
                    self._status(packet)
        self._broken = self._outer.broken or self._inner.broken
        return []

    def _status(self, line: bytes | None) -> None:
        if line is None:
            return
        if line.rstrip(b"\n") == b"unpack ok":
            self._unpacked = True
        elif line.startswith(b"ok "):
            self._updated += 1

    def finish(self, bytes_in: int, bytes_out: int, exit_status: int | None) -> list[FileEvent]:
        """The event, when the push succeeded and the report says a ref was updated."""
        if self._broken or not (self._unpacked and self._updated):
            return []
        return super().finish(bytes_in, bytes_out, exit_status)


class _PktLines:
    """git's pkt-lines from a byte stream: each payload, or None for a flush packet."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.broken = False

    def feed(self, data: bytes) -> list[bytes | None]:
        """The packets ``data`` completes (``broken`` once the stream is not pkt-lines)."""
        if self.broken:
            return []
        self._buffer += data
        packets: list[bytes | None] = []
        while len(self._buffer) >= 4:
            head = bytes(self._buffer[:4])
            if not all(char in HEX_DIGITS for char in head):
                self.broken = True
                self._buffer.clear()
                break
            size = int(head, 16)
            if size < 4:  # flush (0000), delimiter (0001), response end (0002)
                packets.append(None)
                del self._buffer[:4]
                continue
            if len(self._buffer) < size:
                break
            packets.append(bytes(self._buffer[4:size]))
            del self._buffer[:size]
        return packets


class ScpScanner:
    """Reads the sending side of the scp protocol: ``C``/``D``/``E`` lines and file data."""

    def __init__(self, upload: bool, target: str, into_directory: bool) -> None:
        self.upload = upload
        self.action = "upload" if upload else "download"
        if upload:
            self._root = target if into_directory else posixpath.dirname(target)
            self._named = None if into_directory else target
        else:  # the server sends the files it was named, from their directory
            self._root = posixpath.dirname(target.rstrip("/")) or "."
            self._named = None
        self._dirs: list[str] = []
        self._line = bytearray()
        self._skip = 0  # file data still to pass, then its status byte
        self._file: tuple[str, int] | None = None
        self._broken = False

    @classmethod
    def of(cls, args: list[str]) -> ScpScanner | None:
        """From ``scp``'s arguments (``-t`` or ``-f``, flags, ``--``, the path)."""
        flags: set[str] = set()
        paths: list[str] = []
        ended = False
        for word in args:
            if not ended and word == "--":
                ended = True
            elif not ended and word.startswith("-") and len(word) > 1:
                flags.update(word[1:])
            else:
                paths.append(word)
        if ("t" in flags) == ("f" in flags) or len(paths) != 1:
            return None
        upload = "t" in flags
        target = paths[0]
        into = "d" in flags or "r" in flags or target.endswith("/") or target in (".", "~")
        return cls(upload, target, into)

    def _path(self, name: str) -> str:
        if self.upload and not self._dirs and self._named is not None:
            return self._named
        return posixpath.join(self._root, *self._dirs, name)

    def _scan(self, data: bytes) -> list[FileEvent]:
        events: list[FileEvent] = []
        pos, end = 0, len(data)
        while pos < end and not self._broken:
            if self._skip:
                step = min(self._skip, end - pos)
                self._skip -= step
                pos += step
                if not self._skip and self._file is not None:
                    path, size = self._file
                    self._file = None
                    events.append(FileEvent(self.action, path, size))
                continue
            newline = data.find(b"\n", pos)
            stop = end if newline < 0 else newline
            self._line += data[pos:stop]
            pos = stop if newline < 0 else newline + 1
            if len(self._line) > MAX_LINE:
                self._broken = True
            if newline < 0:
                break
            events.extend(self._control(bytes(self._line)))
            self._line.clear()
        return events

    def _control(self, line: bytes) -> list[FileEvent]:
        text = line.decode("utf-8", errors="replace")
        kind, rest = text[:1], text[1:]
        if kind in ("C", "D"):
            parts = rest.split(" ", 2)
            if len(parts) != 3 or not parts[1].isdigit():
                self._broken = True
                return []
            name = parts[2]
            if kind == "C":
                size = int(parts[1])
                self._file = (self._path(name), size)
                self._skip = size + 1  # the data, then the sender's status byte
                return []
            path = self._path(name)
            self._dirs.append(name)
            return [FileEvent("mkdir", path)] if self.upload else []
        if kind == "E" and self._dirs:
            self._dirs.pop()
        return []  # T (times), E, and \x01 / \x02 error lines

    def from_client(self, data: bytes) -> list[FileEvent]:
        """An upload's lines and data come from the client."""
        return self._scan(data) if self.upload else []

    def from_server(self, data: bytes) -> list[FileEvent]:
        """A download's lines and data come from the server."""
        return [] if self.upload else self._scan(data)

    def finish(self, bytes_in: int, bytes_out: int, exit_status: int | None) -> list[FileEvent]:
        """Every file was reported as its data passed."""
        return []
