"""Another process's writer holding a test's SQLite database (WAL: readers still read)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def write_lock(database: Path) -> Iterator[None]:
    """Hold the write lock of ``database`` for the block; writes past the busy timeout fail."""
    other = sqlite3.connect(database, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield
        other.execute("ROLLBACK")
    finally:
        other.close()
