"""The ``.geb`` container: a versioned header, argon2id, AES-256-GCM in authenticated frames.

Layout::

    header  64 bytes   magic b"HGBACKUP" | format (uint16) | kdf id (uint8) |
                       argon2 time cost (uint32) | memory KiB (uint32) | lanes (uint8) |
                       salt (32) | nonce prefix (7) | max frame plaintext (uint32) |
                       1 reserved zero byte
    frame   uint32 BE  bit 31 = final frame, bits 0-30 = ciphertext length
            ciphertext AES-256-GCM(key, nonce, record, aad=header)

The key is argon2id(password, salt). A frame's nonce is ``prefix | counter (uint32 BE)
| final flag (1 byte)``, so frames cannot be reordered, dropped or replayed, a
frame cannot pretend to be the last one, and a file that stops before the final
frame is detected as truncated. Every frame's plaintext is one record: a kind
byte and a payload (see ``records``).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from argon2.low_level import Type, hash_secret_raw
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ...errors import InvalidInput, Unprocessable

MAGIC = b"HGBACKUP"
FORMAT_VERSION = 1
KDF_ARGON2ID = 1
HEADER = struct.Struct(">8sHBIIB32s7sI1s")
HEADER_SIZE = HEADER.size
FRAME_HEADER = struct.Struct(">I")
FINAL_BIT = 0x8000_0000
TAG_SIZE = 16
FRAME_PLAINTEXT = 1024 * 1024
"""Bytes of record payload per frame when writing."""


@dataclass(frozen=True)
class KdfCost:
    """argon2id parameters; the defaults are RFC 9106's second recommendation."""

    time_cost: int = 3
    memory_kib: int = 64 * 1024
    lanes: int = 4


DEFAULT_COST = KdfCost()
MAX_TIME_COST = 20
MAX_MEMORY_KIB = 1024 * 1024
MAX_LANES = 16
MAX_FRAME_PLAINTEXT = 16 * 1024 * 1024
MIN_PASSWORD = 8

BAD_PASSWORD = "Invalid backup password or corrupted backup file"


class BadPassword(Unprocessable):
    """The first frame does not open: wrong password, or the start of the file is damaged."""

    code = "invalid_backup_password"

    def __init__(self) -> None:
        super().__init__(BAD_PASSWORD)


class CorruptArchive(Unprocessable):
    """The password was right but later data is damaged, reordered or cut short."""

    code = "backup_corrupted"

    def __init__(self, detail: str) -> None:
        super().__init__(f"Corrupted backup file: {detail}")


class NotAnArchive(InvalidInput):
    """The file is not a hostgate backup, or one this version cannot read."""

    code = "invalid_backup"


@dataclass(frozen=True)
class Header:
    """The plaintext parameters at the start of an archive."""

    time_cost: int
    memory_kib: int
    lanes: int
    salt: bytes
    nonce_prefix: bytes
    frame_plaintext: int
    format_version: int = FORMAT_VERSION

    def pack(self) -> bytes:
        """The 64 header bytes (also the associated data of every frame)."""
        return HEADER.pack(
            MAGIC,
            self.format_version,
            KDF_ARGON2ID,
            self.time_cost,
            self.memory_kib,
            self.lanes,
            self.salt,
            self.nonce_prefix,
            self.frame_plaintext,
            b"\x00",
        )

    @classmethod
    def new(cls, cost: KdfCost = DEFAULT_COST) -> Header:
        """Fresh random salt and nonce prefix."""
        return cls(
            time_cost=cost.time_cost,
            memory_kib=cost.memory_kib,
            lanes=cost.lanes,
            salt=os.urandom(32),
            nonce_prefix=os.urandom(7),
            frame_plaintext=FRAME_PLAINTEXT,
        )

    @classmethod
    def parse(cls, raw: bytes) -> Header:
        """Check magic, version and bounds; raise NotAnArchive otherwise."""
        if len(raw) < HEADER_SIZE or not raw.startswith(MAGIC):
            raise NotAnArchive("Not a hostgate backup file")
        magic, version, kdf, time_cost, memory, lanes, salt, prefix, frame, reserved = (
            HEADER.unpack(raw[:HEADER_SIZE])
        )
        if version != FORMAT_VERSION:
            raise NotAnArchive(
                f"Backup format version {version} is not supported by this hostgate "
                f"(it reads version {FORMAT_VERSION})",
                code="unsupported_backup_version",
            )
        if kdf != KDF_ARGON2ID:
            raise NotAnArchive(f"Unknown key derivation {kdf} in the backup header")
        if not (
            1 <= time_cost <= MAX_TIME_COST
            and 8 * max(lanes, 1) <= memory <= MAX_MEMORY_KIB
            and 1 <= lanes <= MAX_LANES
            and 1 <= frame <= MAX_FRAME_PLAINTEXT
            # the frames authenticate the header as re-packed: a set reserved byte would pass
            and reserved == b"\x00"
        ):
            raise NotAnArchive("The backup header holds out-of-range parameters")
        return cls(time_cost, memory, lanes, salt, prefix, frame, version)


def derive_key(password: str, header: Header) -> bytes:
    """argon2id(password, salt) -> the 32-byte archive key (memory-hard; run off the loop)."""
    return hash_secret_raw(
        password.encode(),
        header.salt,
        time_cost=header.time_cost,
        memory_cost=header.memory_kib,
        parallelism=header.lanes,
        hash_len=32,
        type=Type.ID,
    )


def _nonce(header: Header, counter: int, final: bool) -> bytes:
    return header.nonce_prefix + struct.pack(">I", counter) + (b"\x01" if final else b"\x00")


class FrameWriter:
    """Seals records into frames; ``seal`` returns the bytes to write."""

    def __init__(self, header: Header, key: bytes) -> None:
        self.header = header
        self._aad = header.pack()
        self._aead = AESGCM(key)
        self._counter = 0
        self._finished = False

    def start(self) -> bytes:
        """The header bytes (write them first)."""
        return self._aad

    def seal(self, record: bytes, *, final: bool = False) -> bytes:
        """One frame holding ``record``."""
        if self._finished:
            raise RuntimeError("archive already finished")
        if self._counter >= 0xFFFF_FFFF:
            raise RuntimeError("archive too large")
        sealed = self._aead.encrypt(_nonce(self.header, self._counter, final), record, self._aad)
        self._counter += 1
        self._finished = final
        return FRAME_HEADER.pack(len(sealed) | (FINAL_BIT if final else 0)) + sealed


class Readable(Protocol):
    """Anything with a file-like ``read``."""

    def read(self, size: int = -1, /) -> bytes:
        """Up to ``size`` bytes; fewer only at the end."""
        ...


def read_header(stream: Readable) -> Header:
    """Read and check the header at the start of ``stream``."""
    return Header.parse(stream.read(HEADER_SIZE))


class FrameReader:
    """Opens frames in order; raises BadPassword, CorruptArchive as soon as something is off."""

    def __init__(self, stream: Readable, header: Header, key: bytes) -> None:
        self.header = header
        self._stream = stream
        self._aad = header.pack()
        self._aead = AESGCM(key)
        self._counter = 0
        self._limit = header.frame_plaintext + 64 + TAG_SIZE

    def __iter__(self) -> Iterator[tuple[bytes, bool]]:
        """Yield ``(record, final)``; after the final frame the stream must end."""
        while True:
            prefix = self._stream.read(FRAME_HEADER.size)
            if len(prefix) < FRAME_HEADER.size:
                if self._counter == 0:
                    raise CorruptArchive("the file holds no data after its header")
                raise CorruptArchive("the file is truncated (the final frame is missing)")
            (word,) = FRAME_HEADER.unpack(prefix)
            final = bool(word & FINAL_BIT)
            length = word & ~FINAL_BIT
            if not TAG_SIZE < length <= self._limit:
                raise self._failure(f"frame {self._counter} has an impossible length")
            sealed = self._stream.read(length)
            if len(sealed) < length:
                raise CorruptArchive("the file is truncated (a frame is cut short)")
            try:
                record = self._aead.decrypt(
                    _nonce(self.header, self._counter, final), sealed, self._aad
                )
            except InvalidTag:
                raise self._failure(f"frame {self._counter} failed authentication") from None
            self._counter += 1
            yield record, final
            if final:
                if self._stream.read(1):
                    raise CorruptArchive("data follows the final frame")
                return

    def _failure(self, detail: str) -> Unprocessable:
        # Nothing has opened yet: a wrong password looks exactly like a damaged start.
        return BadPassword() if self._counter == 0 else CorruptArchive(detail)
