"""GET /audit over a large log: p50/p95 of filtered pages.

Fills a throwaway SQLite database with N audit entries (default 1,000,000; 10 M
takes a few minutes) with INSERT ... SELECT, then times `GET /api/v1/audit` with
the filters the UI uses, through the real app (ASGI, no network). `--explain`
prints SQLite's query plans too.

.venv/bin/python bench/audit_page.py [--rows 10000000] [--repeat 30] [--explain]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import BENCH_KEY, Row, median, percentile, print_table  # noqa: E402

EVENT_TYPES = [
    "auth.login", "auth.logout", "auth.login_failed", "connection.session_started",
    "connection.session_ended", "file.downloaded", "file.uploaded", "connection.created",
    "connection.updated", "user.updated", "settings.updated", "role.updated",
]  # fmt: skip
WEIGHTS = [30, 20, 8, 15, 15, 4, 3, 1, 1, 1, 1, 1]
USERS = 200
BATCH = 1_000_000


# cumulative weights of EVENT_TYPES out of 100, for the SQL fill
_BOUNDS = [sum(WEIGHTS[: i + 1]) for i in range(len(WEIGHTS))]


def fill(db: Path, rows: int) -> tuple[list[str], datetime]:
    """Bulk-insert ``rows`` entries spread over a year; returns (user ids, newest time).

    The rows are made by SQLite itself (``INSERT ... SELECT`` over a recursive
    counter, a million per statement): 10 M rows take minutes, not an hour of
    Python tuples. Users, event types (with ``WEIGHTS``), targets and addresses
    come from a multiplicative hash of the row number, so every run is the same.
    """
    users = [str(uuid.UUID(int=random.Random(7 + n).getrandbits(128))) for n in range(USERS)]
    start = datetime(2026, 1, 1, tzinfo=UTC).replace(tzinfo=None)
    step = timedelta(days=365) / rows
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA journal_mode=MEMORY")
    conn.execute("PRAGMA cache_size=-262144")  # 256 MiB: the three indexes stay in memory
    conn.execute("CREATE TEMP TABLE bench_users (n INTEGER PRIMARY KEY, id TEXT)")
    conn.executemany("INSERT INTO bench_users VALUES (?, ?)", enumerate(users))
    kind = (
        "CASE "
        + " ".join(
            f"WHEN h % 100 < {bound} THEN '{name}'"
            for bound, name in zip(_BOUNDS, EVENT_TYPES, strict=True)
        )
        + " END"
    )
    insert = f"""
        WITH RECURSIVE n(x) AS (SELECT ? UNION ALL SELECT x + 1 FROM n WHERE x < ?)
        INSERT INTO audit_log (seq, id, user_id, username, display_name, event_type, target,
            details, ip_address, timestamp, prev_hash, hash)
        SELECT x, printf('%032x', x), u.id, 'user' || u.n, 'User ' || u.n, {kind},
            'host' || (x % 2999) || '.example:22',
            '{{"connectionId":"c' || (x % 5003) || '","bytes":' || (x % 9973) || '}}',
            '10.0.' || (u.n % 256) || '.' || (x % 256),
            strftime('%Y-%m-%d %H:%M:%f', julianday(?) + x * ?) || '000', '', ''
        FROM (SELECT x, (x * 2654435761) % 1000003 AS h FROM n)
        JOIN bench_users u ON u.n = (h / 100) % {USERS}
    """
    origin = start.strftime("%Y-%m-%d %H:%M:%S")
    days_per_row = step / timedelta(days=1)
    for low in range(1, rows + 1, BATCH):
        high = min(rows, low + BATCH - 1)
        conn.execute(insert, (low, high, origin, days_per_row))
        conn.commit()
    # what the audit writes keep in step (the rows above bypass them)
    conn.execute("UPDATE audit_count SET entries = (SELECT count(*) FROM audit_log)")
    conn.commit()
    conn.execute("ANALYZE")
    conn.commit()
    conn.close()
    return users, start + step * rows


def explain(db: Path, kernel_query: str, params: tuple[object, ...]) -> str:
    conn = sqlite3.connect(db)
    plan = conn.execute(f"EXPLAIN QUERY PLAN {kernel_query}", params).fetchall()
    conn.close()
    return "; ".join(str(row[-1]) for row in plan)


async def measure(data: Path, users: list[str], newest: datetime, repeat: int) -> list[Row]:
    from hostgate.app import create_app, kernel_of
    from hostgate.config import Config
    from hostgate.db.models.audit import AuditCount
    from hostgate.services.identity.identity import ClientInfo
    from sqlalchemy import delete

    config = Config(data_dir=data, encryption_key=BENCH_KEY, load_entry_points=False)
    app = create_app(config)
    kernel = kernel_of(app)
    rows: list[Row] = []
    async with app.test_app() as test_app:
        client = test_app.test_client()
        await kernel.accounts.create_user(
            username="bench", password="bench-password", role="admin", actor=None
        )
        user = await kernel.accounts.user_by_name("bench")
        assert user is not None
        issued = await kernel.identity.issue_session(user, ClientInfo(ip_address="127.0.0.1"))
        headers = {"Authorization": f"Bearer {issued.token}"}
        day = timedelta(days=1)
        fmt = "%Y-%m-%dT%H:%M:%S.000Z"
        cases = {
            "newest page, no filter": "",
            "eventType=auth.login_failed": "?eventType=auth.login_failed",
            "eventType=a,b (two types)": "?eventType=file.downloaded,file.uploaded",
            "userId=one user": f"?userId={users[3]}",
            "userId + eventType": f"?userId={users[3]}&eventType=auth.login",
            "from/to one day": (
                f"?from={(newest - 40 * day).strftime(fmt)}&to={(newest - 39 * day).strftime(fmt)}"
            ),
            "page 400 of eventType": "?eventType=auth.login&page=400",
            "search=host123 (scan)": "?search=host123.example",
        }

        async def timed(name: str, query: str) -> int:
            timings = []
            for _ in range(repeat):
                began = time.perf_counter()
                response = await client.get(f"/api/v1/audit{query}", headers=headers)
                timings.append((time.perf_counter() - began) * 1000)
                if response.status_code != 200:
                    raise RuntimeError(f"{query}: {response.status_code}")
            total = int((await response.get_json())["pagination"]["total"])
            rows.append(Row(f"{name} p50 ({total:,} match)", median(timings), "ms"))
            target = "" if "search" in name else "< 100 ms"
            rows.append(Row(f"{name} p95", percentile(timings, 95), "ms", target=target))
            return total

        kept = 0
        for name, query in cases.items():
            total = await timed(name, query)
            if not query:
                kept = total
        # the same page as before migration 0007: without the counter row the total
        # is counted over every entry (and must come out the same)
        async with kernel.db.session() as session:
            await session.exec(delete(AuditCount))  # type: ignore[call-overload]
            await session.commit()
        counted = await timed("newest page, no filter, count(*) (before)", "")
        if counted != kept:
            raise RuntimeError(f"the counter row said {kept:,}, count(*) {counted:,}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--explain", action="store_true", help="print SQLite query plans")
    args = parser.parse_args()

    from hostgate.db.engine import Database

    data = Path(tempfile.mkdtemp(prefix="hg-bench-audit-"))
    try:
        db = data / "hostgate.db"

        async def migrate() -> None:
            database = Database(f"sqlite+aiosqlite:///{db}")
            await database.migrate()
            await database.close()

        asyncio.run(migrate())
        began = time.perf_counter()
        users, newest = fill(db, args.rows)
        print(f"filled {args.rows:,} entries in {time.perf_counter() - began:.1f} s")
        if args.explain:
            base = "SELECT * FROM audit_log WHERE {} ORDER BY timestamp DESC, seq DESC LIMIT 25"
            for label, where, params in [
                ("eventType", "event_type IN (?)", ("auth.login",)),
                ("userId", "user_id = ?", (users[3],)),
                ("range", "timestamp >= ? AND timestamp <= ?", ("2026-06-01", "2026-06-02")),
                ("none", "1", ()),
            ]:
                print(f"plan {label}: {explain(db, base.format(where), params)}")
        rows = asyncio.run(measure(data, users, newest, args.repeat))
        print_table(rows)
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
