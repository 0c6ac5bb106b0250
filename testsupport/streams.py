"""Byte streams for the file adapter tests: large reproducible bodies, never held whole."""

from __future__ import annotations

import hashlib
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

MIB = 1024 * 1024
PIECE = 64 * 1024


def _pieces(total: int, seed: int, piece: int) -> Any:
    rng = random.Random(seed)
    sent = 0
    while sent < total:
        size = min(piece, total - sent)
        yield rng.randbytes(size)
        sent += size


async def pattern(total: int, seed: int = 11, piece: int = PIECE) -> AsyncIterator[bytes]:
    """``total`` pseudo-random bytes in body-sized pieces."""
    for block in _pieces(total, seed, piece):
        yield block


def pattern_digest(total: int, seed: int = 11, piece: int = PIECE) -> str:
    """SHA-256 of what ``pattern`` yields for the same arguments."""
    digest = hashlib.sha256()
    for block in _pieces(total, seed, piece):
        digest.update(block)
    return digest.hexdigest()


async def once(data: bytes) -> AsyncIterator[bytes]:
    """A body of one piece."""
    yield data


async def read_all(files: Any, path: str, offset: int = 0, length: int | None = None) -> bytes:
    """Everything an adapter's ``read`` yields."""
    return b"".join([chunk async for chunk in files.read(path, offset, length)])


def file_digest(path: Path) -> str:
    """SHA-256 of a local file, read in 4 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(4 * MIB):
            digest.update(block)
    return digest.hexdigest()
