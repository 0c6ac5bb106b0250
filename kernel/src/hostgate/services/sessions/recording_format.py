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


class RecordingWriter:
    """Appends plaintext to an encrypted recording; ``flush`` makes it durable-ish.

    Opening an existing file continues after its last complete byte (the tail
    slot is decrypted and rewritten on the next flush), so a session can resume
    writing after a restart; a file sealed under another key is refused.
    """

    def __init__(self, path: Path, key: bytes, *, chunk: int = CHUNK_SIZE) -> None:
        if len(key) != KEY_SIZE:
            raise RecordingFormatError("a recording key is 32 bytes")
        self.path = path
        self._aead = AESGCM(key)
        self._tail = bytearray()
        self._dirty = False
        self._index = 0
        self.closed = False
        if path.exists() and path.stat().st_size >= HEADER_SIZE:
            self._file = private_open(path, "r+b")  # held open for the session
            self._header = self._file.read(HEADER_SIZE)
            self.chunk = _parse_header(self._header)
            self._resume()
        else:
            self._file = private_open(path, "w+b")  # held open for the session
            self.chunk = chunk
            self._header = _header(chunk)
            self._file.write(self._header)
            self._file.flush()

    @property
    def slot_size(self) -> int:
        """Bytes one full slot takes on disk."""
        return self.chunk + SLOT_OVERHEAD

    @property
    def size(self) -> int:
        """Plaintext bytes written so far."""
        return self._index * self.chunk + len(self._tail)

    def _resume(self) -> None:
        total = os.fstat(self._file.fileno()).st_size - HEADER_SIZE
        full, rest = divmod(total, self.slot_size)
        if full:
            # a file written under another key must not be appended to
            self._file.seek(HEADER_SIZE)
            _open_slot(self._aead, self._header, 0, self._file.read(self.slot_size))
        self._index = full
        if rest:
            self._file.seek(HEADER_SIZE + full * self.slot_size)
            raw = self._file.read(rest)
            try:
                self._tail = bytearray(_open_slot(self._aead, self._header, full, raw))
            except RecordingFormatError:
                self._tail = bytearray()
                self._file.truncate(HEADER_SIZE + full * self.slot_size)

    def _write_slot(self, index: int, plaintext: bytes) -> None:
        nonce = os.urandom(NONCE_SIZE)
        length = len(plaintext)
        sealed = self._aead.encrypt(nonce, plaintext, _aad(self._header, index, length))
        self._file.seek(HEADER_SIZE + index * self.slot_size)
        self._file.write(nonce + struct.pack(">I", length))
        self._file.write(sealed)

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
        """Seal the partial tail chunk in place and hand everything to the OS."""
        if self.closed or not self._dirty:
            return
        if self._tail:
            self._write_slot(self._index, bytes(self._tail))
        self._file.flush()
        self._dirty = False

    def close(self) -> None:
        """Flush, sync to disk and close."""
        if self.closed:
            return
        self.flush()
        try:
            os.fsync(self._file.fileno())
        finally:
            self._file.close()
            self.closed = True

    def discard(self) -> None:
        """Close and delete the file: its session was never stored (no row refers to it)."""
        if not self.closed:
            self._file.close()
            self.closed = True
        self.path.unlink(missing_ok=True)


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


class RecordingReader:
    """Random access to an encrypted recording's plaintext."""

    def __init__(self, path: Path, key: bytes) -> None:
        if len(key) != KEY_SIZE:
            raise RecordingFormatError("a recording key is 32 bytes")
        self.path = path
        self._aead = AESGCM(key)
        self._file = open(path, "rb")  # noqa: SIM115 - closed by close()
        try:
            self._header = self._file.read(HEADER_SIZE)
            self.chunk = _parse_header(self._header)
            total = os.fstat(self._file.fileno()).st_size - HEADER_SIZE
            self._full, rest = divmod(total, self.chunk + SLOT_OVERHEAD)
            self._tail_length = 0
            if rest >= SLOT_OVERHEAD:
                self._file.seek(HEADER_SIZE + self._full * (self.chunk + SLOT_OVERHEAD))
                head = self._file.read(NONCE_SIZE + 4)
                (length,) = struct.unpack(">I", head[NONCE_SIZE:])
                if rest == length + SLOT_OVERHEAD:
                    self._tail_length = length
        except BaseException:
            self._file.close()
            raise

    @property
    def size(self) -> int:
        """Plaintext bytes in the file."""
        return self._full * self.chunk + self._tail_length

    def read_chunk(self, index: int) -> bytes:
        """Decrypt one chunk."""
        slot = self.chunk + SLOT_OVERHEAD
        length = self.chunk if index < self._full else self._tail_length
        self._file.seek(HEADER_SIZE + index * slot)
        raw = self._file.read(length + SLOT_OVERHEAD)
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
        """Close the file."""
        self._file.close()

    def __enter__(self) -> RecordingReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def plaintext_size(path: Path, key: bytes) -> int:
    """The plaintext size of a recording file.

    ``RecordingFormatError`` when it cannot be read (a damaged header, another key).
    """
    try:
        with RecordingReader(path, key) as reader:
            return reader.size
    except OSError as exc:
        raise RecordingFormatError(f"the file cannot be read: {exc.strerror}") from None
