"""The SQL statements a kernel's database runs while a block runs (for counted tests)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event


@contextmanager
def executed_statements(kernel: Any) -> Iterator[list[str]]:
    """Every statement sent to ``kernel``'s database inside the block, as SQL text."""
    statements: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    engine = kernel.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", seen)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", seen)
