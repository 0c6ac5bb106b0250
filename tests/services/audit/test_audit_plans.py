"""The audit page's user + event type filter is answered by its own index (SQLite's plan)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hostgate.db.engine import Database
from hostgate.db.models.audit import AuditEntry
from hostgate.services.audit.audit_query import AuditFilter, conditions
from sqlalchemy import func, select
from sqlalchemy.dialects import sqlite
from sqlmodel import col


def plan(db: Path, statement: object) -> str:
    compiled = statement.compile(  # type: ignore[attr-defined]
        dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True}
    )
    with sqlite3.connect(db) as conn:
        rows = conn.execute(f"EXPLAIN QUERY PLAN {compiled}").fetchall()
    return "; ".join(str(row[-1]) for row in rows)


async def test_the_user_and_event_type_filter_uses_its_index(tmp_path: Path) -> None:
    db = tmp_path / "hostgate.db"
    database = Database(f"sqlite+aiosqlite:///{db}")
    await database.migrate()
    await database.close()
    with sqlite3.connect(db) as conn:
        # enough rows of a few users and types that the planner's statistics are real
        conn.executemany(
            "INSERT INTO audit_log (id, user_id, username, display_name, event_type, target,"
            " details, ip_address, timestamp, prev_hash, hash)"
            " VALUES (?, ?, '', '', ?, '', '{}', '', ?, '', '')",
            [
                (f"e{i}", f"u{i % 20}", f"type.{i % 7}", f"2026-01-01T00:{i % 60:02d}:00")
                for i in range(4000)
            ],
        )
        conn.execute("ANALYZE")
    where = conditions(AuditFilter(user_id="u3", event_types=("type.2",)))
    count = plan(db, select(func.count()).select_from(AuditEntry).where(*where))
    page = plan(
        db,
        select(AuditEntry)
        .where(*where)
        .order_by(col(AuditEntry.timestamp).desc(), col(AuditEntry.seq).desc())
        .limit(25),
    )
    assert "ix_audit_user_type_ts" in count, count
    assert "COVERING INDEX" in count, count  # the count never reads the rows
    assert "ix_audit_user_type_ts" in page, page
    # one user alone still pages through (user_id, timestamp)
    alone = plan(
        db,
        select(AuditEntry)
        .where(*conditions(AuditFilter(user_id="u3")))
        .order_by(col(AuditEntry.timestamp).desc(), col(AuditEntry.seq).desc())
        .limit(25),
    )
    assert "ix_audit_user_ts" in alone and "TEMP B-TREE" not in alone, alone
