"""The recording file format: AES-256-GCM in fixed-size chunks, one data key per recording.

Layout::

    header   16 bytes   "HGREC" 00 01 00 | chunk size (uint32 BE) | 4 reserved zero bytes
    slot i   at 16 + i * (chunk + 32):
             nonce (12) | plaintext length (uint32 BE) | ciphertext + tag (length + 16)

Every slot but the last holds exactly ``chunk`` plaintext bytes, so the slot of any
plaintext offset is known without an index and a Range read decrypts only the
chunks it touches. The associated data binds each slot to the header, its index
and its length (no reordering, no silent truncation inside a slot). The last,
partial slot is rewritten in place with a fresh random nonce each time the writer
flushes, so a crash loses at most what was written since the last flush.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ...datadir import private_open

MAGIC = b"HGREC\x00\x01\x00"
HEADER_SIZE = 16
CHUNK_SIZE = 64 * 1024
NONCE_SIZE = 12
TAG_SIZE = 16
SLOT_OVERHEAD = NONCE_SIZE + 4 + TAG_SIZE
KEY_SIZE = 32


STORAGE_FAILED = "storage_failed"
"""The note of a recording whose store gave up on it (a bucket that kept failing)."""


class RecordingFormatError(Exception):
    """The file is not a recording, or a chunk failed authentication."""


def new_key() -> bytes:
    """A fresh random data key for one recording."""
    return os.urandom(KEY_SIZE)


def _header(chunk: int) -> bytes:
    return MAGIC + struct.pack(">I", chunk) + b"\x00" * 4


def _parse_header(raw: bytes) -> int:
    if len(raw) < HEADER_SIZE or raw[:8] != MAGIC:
        raise RecordingFormatError("not a hostgate recording file")
    (chunk,) = struct.unpack(">I", raw[8:12])
    if not 0 < chunk <= 16 * 1024 * 1024:
        raise RecordingFormatError("recording header has an invalid chunk size")
    return chunk


def _aad(header: bytes, index: int, length: int) -> bytes:
    return header + struct.pack(">QI", index, length)


class SlotSink(Protocol):
    """Where a writer's slots go: a local file, or an object-store upload.

    Full slots are written once, in order; the tail slot (``full=False``) is written
    again at each flush until it fills. A sink that cannot raise where it fails (a
    bucket uploading in the background) says so in ``failure`` instead.
    """

    failure: str | None
    """Why the sink lost written bytes (it gave up on them), None while it did not."""

    def stored_size(self) -> int:
        """Bytes already stored (a resumed recording), 0 for a new one."""
        ...

    def read(self, offset: int, length: int) -> bytes:
        """Stored bytes (a resumed recording's header, first and tail slots)."""
        ...

    def write(self, offset: int, data: bytes, *, full: bool) -> None:
        """Store ``data`` at ``offset``: the header, a full slot or the tail slot."""
        ...

    def truncate(self, size: int) -> None:
        """Drop stored bytes past ``size`` (a damaged tail slot)."""
        ...

    def flush(self) -> None:
        """Make what was written durable as far as the sink can (see its docs)."""
        ...

    def close(self) -> None:
        """Flush, make everything durable and release the sink."""
        ...

    def discard(self) -> None:
        """Release the sink and delete what it stored."""
        ...

    def kept_size(self) -> int:
        """Bytes the store holds after ``close`` (less than written after a ``failure``)."""
        ...


class FileSink:
    """A recording file on local disk, held open for the session."""

    failure: str | None = None  # a failed write raises where it happens

    def __init__(self, path: Path) -> None:
        self.path = path
        existing = path.exists() and path.stat().st_size >= HEADER_SIZE
        self._file = private_open(path, "r+b" if existing else "w+b")
        self.closed = False

    def stored_size(self) -> int:
        """The file's size."""
        return os.fstat(self._file.fileno()).st_size

    def read(self, offset: int, length: int) -> bytes:
        """Bytes of the file."""
        self._file.seek(offset)
        return self._file.read(length)

    def write(self, offset: int, data: bytes, *, full: bool) -> None:
        """Write in place."""
        self._file.seek(offset)
        self._file.write(data)

    def truncate(self, size: int) -> None:
        """Cut the file."""
        self._file.truncate(size)

    def flush(self) -> None:
        """Hand the bytes to the OS."""
        self._file.flush()

    def close(self) -> None:
        """Flush, sync to disk and close."""
        if self.closed:
            return
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
        finally:
            self._file.close()
            self.closed = True

    def discard(self) -> None:
        """Close and delete the file."""
        if not self.closed:
            self._file.close()
            self.closed = True
        self.path.unlink(missing_ok=True)

    def kept_size(self) -> int:
        """The file's size."""
        return self.path.stat().st_size


class RecordingWriter:
    """Appends plaintext to an encrypted recording; ``flush`` makes it durable-ish.

    Opening an existing recording continues after its last complete byte (the tail
    slot is decrypted and rewritten on the next flush), so a session can resume
    writing after a restart; a recording sealed under another key is refused.
    ``target`` is a file path, or a ``SlotSink`` (an object-store upload).
    """

    def __init__(self, target: Path | SlotSink, key: bytes, *, chunk: int = CHUNK_SIZE) -> None:
        if len(key) != KEY_SIZE:
            raise RecordingFormatError("a recording key is 32 bytes")
        self.path = target if isinstance(target, Path) else None
        self._aead = AESGCM(key)
        self._tail = bytearray()
        self._dirty = False
        self._index = 0
        self.closed = False
        self._sink: SlotSink = FileSink(target) if isinstance(target, Path) else target
        try:
            if self._sink.stored_size() >= HEADER_SIZE:
                self._header = self._sink.read(0, HEADER_SIZE)
                self.chunk = _parse_header(self._header)
                self._resume()
            else:
                self.chunk = chunk
                self._header = _header(chunk)
                self._sink.write(0, self._header, full=True)
                self._sink.flush()
        except BaseException:
            self._sink.close()
            raise

    @property
    def slot_size(self) -> int:
        """Bytes one full slot takes on disk."""
        return self.chunk + SLOT_OVERHEAD

    @property
    def size(self) -> int:
        """Plaintext bytes written so far."""
        return self._index * self.chunk + len(self._tail)

    @property
    def failure(self) -> str | None:
        """Why the store lost part of the recording (a bucket that stopped answering)."""
        return self._sink.failure

    def kept_size(self) -> int:
        """Plaintext bytes the store holds after ``close``: ``size`` less what a failure lost."""
        if self._sink.failure is None:
            return self.size
        slots = max(0, self._sink.kept_size() - HEADER_SIZE) // self.slot_size
        return min(self.size, slots * self.chunk)

    def _resume(self) -> None:
        total = self._sink.stored_size() - HEADER_SIZE
        full, rest = divmod(total, self.slot_size)
        if full:
            # a recording written under another key must not be appended to
            _open_slot(self._aead, self._header, 0, self._sink.read(HEADER_SIZE, self.slot_size))
        self._index = full
        if rest:
            raw = self._sink.read(HEADER_SIZE + full * self.slot_size, rest)
            try:
                self._tail = bytearray(_open_slot(self._aead, self._header, full, raw))
            except RecordingFormatError:
                self._tail = bytearray()
                self._sink.truncate(HEADER_SIZE + full * self.slot_size)

    def _write_slot(self, index: int, plaintext: bytes) -> None:
        nonce = os.urandom(NONCE_SIZE)
        length = len(plaintext)
        sealed = self._aead.encrypt(nonce, plaintext, _aad(self._header, index, length))
        self._sink.write(
            HEADER_SIZE + index * self.slot_size,
            nonce + struct.pack(">I", length) + sealed,
            full=length == self.chunk,
        )

    def write(self, data: bytes) -> None:
        """Append plaintext; full chunks are sealed and written at once."""
        if self.closed:
            raise RecordingFormatError("the recording is closed")
        if not data:
            return
        view = memoryview(data)
        if self._tail:
            # complete the partial chunk first
            taken = min(self.chunk - len(self._tail), len(view))
            self._tail += view[:taken]
            view = view[taken:]
            if len(self._tail) == self.chunk:
                self._write_slot(self._index, bytes(self._tail))
                self._tail.clear()
                self._index += 1
        # whole chunks straight from the caller's bytes, not through the tail
        while len(view) >= self.chunk:
            self._write_slot(self._index, bytes(view[: self.chunk]))
            view = view[self.chunk :]
            self._index += 1
        self._tail += view
        self._dirty = True

    def flush(self) -> None:
        """Seal the partial tail chunk in place and hand everything to the sink."""
        if self.closed or not self._dirty:
            return
        if self._tail:
            self._write_slot(self._index, bytes(self._tail))
        self._sink.flush()
        self._dirty = False

    def close(self) -> None:
        """Flush, make durable (fsync, or complete the upload) and close."""
        if self.closed:
            return
        try:
            self.flush()
        finally:
            self.closed = True
            self._sink.close()

    def discard(self) -> None:
        """Close and delete the recording: its session was never stored (no row refers to it)."""
        self.closed = True
        self._sink.discard()


def _open_slot(aead: AESGCM, header: bytes, index: int, raw: bytes) -> bytes:
    if len(raw) < SLOT_OVERHEAD:
        raise RecordingFormatError(f"recording chunk {index} is truncated")
    nonce = raw[:NONCE_SIZE]
    (length,) = struct.unpack(">I", raw[NONCE_SIZE : NONCE_SIZE + 4])
    body = raw[NONCE_SIZE + 4 :]
    if len(body) != length + TAG_SIZE:
        raise RecordingFormatError(f"recording chunk {index} is truncated")
    try:
        return aead.decrypt(nonce, body, _aad(header, index, length))
    except InvalidTag:
        raise RecordingFormatError(f"recording chunk {index} failed authentication") from None


class SlotSource(Protocol):
    """Random access to a stored recording's bytes (a file, an object)."""

    def size(self) -> int:
        """Stored bytes."""
        ...

    def read(self, offset: int, length: int) -> bytes:
        """Stored bytes ``offset`` .. ``offset + length``."""
        ...

    def close(self) -> None:
        """Release it."""
        ...


class FileSource:
    """A recording file on local disk."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 - closed by close()

    def size(self) -> int:
        """The file's size."""
        return os.fstat(self._file.fileno()).st_size

    def read(self, offset: int, length: int) -> bytes:
        """Bytes of the file."""
        self._file.seek(offset)
        return self._file.read(length)

    def close(self) -> None:
        """Close the file."""
        self._file.close()


class RecordingReader:
    """Random access to an encrypted recording's plaintext (a file path or a ``SlotSource``)."""

    def __init__(self, source: Path | SlotSource, key: bytes) -> None:
        if len(key) != KEY_SIZE:
            raise RecordingFormatError("a recording key is 32 bytes")
        self.path = source if isinstance(source, Path) else None
        self._aead = AESGCM(key)
        self._source: SlotSource = FileSource(source) if isinstance(source, Path) else source
        try:
            self._header = self._source.read(0, HEADER_SIZE)
            self.chunk = _parse_header(self._header)
            total = self._source.size() - HEADER_SIZE
            self._full, rest = divmod(total, self.chunk + SLOT_OVERHEAD)
            self._tail_length = 0
            if rest >= SLOT_OVERHEAD:
                offset = HEADER_SIZE + self._full * (self.chunk + SLOT_OVERHEAD)
                head = self._source.read(offset, NONCE_SIZE + 4)
                (length,) = struct.unpack(">I", head[NONCE_SIZE:])
                if rest == length + SLOT_OVERHEAD:
                    self._tail_length = length
        except BaseException:
            self._source.close()
            raise

    @property
    def size(self) -> int:
        """Plaintext bytes in the recording."""
        return self._full * self.chunk + self._tail_length

    def read_chunk(self, index: int) -> bytes:
        """Decrypt one chunk."""
        slot = self.chunk + SLOT_OVERHEAD
        length = self.chunk if index < self._full else self._tail_length
        raw = self._source.read(HEADER_SIZE + index * slot, length + SLOT_OVERHEAD)
        return _open_slot(self._aead, self._header, index, raw)

    def chunks(self, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        """Plaintext bytes ``start`` to ``end`` (inclusive), one decrypted chunk at a time."""
        last = self.size - 1 if end is None else min(end, self.size - 1)
        position = start
        while position <= last:
            index = position // self.chunk
            data = self.read_chunk(index)
            offset = position - index * self.chunk
            stop = min(len(data), last - index * self.chunk + 1)
            piece = data[offset:stop]
            if not piece:
                return
            yield piece
            position += len(piece)

    def close(self) -> None:
        """Release the file or object."""
        self._source.close()

    def __enter__(self) -> RecordingReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def plaintext_size(path: Path | SlotSource, key: bytes) -> int:
    """The plaintext size of a recording file or object.

    ``RecordingFormatError`` when it cannot be read (a damaged header, another key).
    """
    try:
        with RecordingReader(path, key) as reader:
            return reader.size
    except OSError as exc:
        raise RecordingFormatError(f"the file cannot be read: {exc.strerror}") from None
