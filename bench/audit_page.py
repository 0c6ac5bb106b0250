"""GET /audit over a large log: p50/p95 of filtered pages, and the exact unfiltered total.

Fills a throwaway database with N audit entries (default 1,000,000) made by the
database itself: ``INSERT ... SELECT`` over a recursive counter on SQLite, over
``generate_series`` on PostgreSQL, a million rows per transaction. The log's
secondary indexes are dropped for the fill and built again after it (each one
sorted once instead of updated row by row: with them in place 10 M rows took more
than 17 minutes on a busy machine); the SQLite copy is written without a journal or
syncs. The counter row of migration 0007 (``audit_count``) is added to in each
batch's transaction, as the audit writes do, and checked against ``count(*)`` after
the fill and again at the end.

Then it times ``GET /api/v1/audit`` through the real app (ASGI, no network) with the
filters the UI uses, in alternating rounds (every case once per round), among them
the unfiltered page twice: its total from the counter row, and with the row removed
for the request (the ``count(*)`` over every entry of before migration 0007); both
totals must agree. ``--explain`` prints SQLite's query plans too.

.venv/bin/python bench/audit_page.py [--rows 10000000] [--repeat 30]
    [--engines sqlite,postgresql] [--only-unfiltered] [--explain]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import BENCH_KEY, Row, median, percentile, postgres, print_table  # noqa: E402

EVENT_TYPES = [
    "auth.login", "auth.logout", "auth.login_failed", "connection.session_started",
    "connection.session_ended", "file.downloaded", "file.uploaded", "connection.created",
    "connection.updated", "user.updated", "settings.updated", "role.updated",
]  # fmt: skip
WEIGHTS = [30, 20, 8, 15, 15, 4, 3, 1, 1, 1, 1, 1]
USERS = 200
BATCH = 1_000_000
START = datetime(2026, 1, 1)  # naive UTC, as the log stores it
UNFILTERED = "newest page, no filter"
COUNTED = "newest page, no filter, count(*) (before 0007)"

# the bench copy only: no journal, no syncs, one connection, a big page cache
SQLITE_BULK_PRAGMAS = (
    "PRAGMA journal_mode=OFF",
    "PRAGMA synchronous=OFF",
    "PRAGMA locking_mode=EXCLUSIVE",
    "PRAGMA cache_size=-1048576",  # 1 GiB
    "PRAGMA temp_store=MEMORY",
)

# cumulative weights of EVENT_TYPES out of 100, for the SQL fill
_BOUNDS = [sum(WEIGHTS[: i + 1]) for i in range(len(WEIGHTS))]
KIND = (
    "CASE "
    + " ".join(
        f"WHEN h % 100 < {bound} THEN '{name}'"
        for bound, name in zip(_BOUNDS, EVENT_TYPES, strict=True)
    )
    + " END"
)
COLUMNS = (
    "seq, id, user_id, username, display_name, event_type, target, details, ip_address, "
    "timestamp, prev_hash, hash"
)
# Users, event types (with WEIGHTS), targets and addresses come from a multiplicative
# hash of the row number, so every run and both engines hold the same log.
SQLITE_INSERT = f"""
    WITH RECURSIVE n(x) AS (SELECT ? UNION ALL SELECT x + 1 FROM n WHERE x < ?)
    INSERT INTO audit_log ({COLUMNS})
    SELECT x, printf('%032x', x), u.id, 'user' || u.n, 'User ' || u.n, {KIND},
        'host' || (x % 2999) || '.example:22',
        '{{"connectionId":"c' || (x % 5003) || '","bytes":' || (x % 9973) || '}}',
        '10.0.' || (u.n % 256) || '.' || (x % 256),
        strftime('%Y-%m-%d %H:%M:%f', julianday(?) + x * ? / 86400.0) || '000', '', ''
    FROM (SELECT x, (x * 2654435761) % 1000003 AS h FROM n)
    JOIN bench_users u ON u.n = (h / 100) % {USERS}
"""
POSTGRES_INSERT = f"""
    INSERT INTO audit_log ({COLUMNS.replace("timestamp", '"timestamp"')})
    SELECT x, lpad(to_hex(x), 32, '0'), u.id, 'user' || u.n, 'User ' || u.n, {KIND},
        'host' || (x % 2999) || '.example:22',
        '{{"connectionId":"c' || (x % 5003) || '","bytes":' || (x % 9973) || '}}',
        '10.0.' || (u.n % 256) || '.' || (x % 256),
        $3::timestamp + x * $4::double precision * interval '1 second', '', ''
    FROM (SELECT x, (x * 2654435761) % 1000003 AS h FROM generate_series($1::bigint, $2) x) g
    JOIN bench_users u ON u.n = (g.h / 100) % {USERS}
"""
COUNTER_ADD = "UPDATE audit_count SET entries = entries + {} WHERE id = 1"
COUNTER_CHECK = (
    "SELECT (SELECT entries FROM audit_count WHERE id = 1), (SELECT count(*) FROM audit_log)"
)


@dataclass
class Filled:
    """What a fill made: the users, the newest entry's time, and how long each part took."""

    users: list[str]
    newest: datetime
    seconds: dict[str, float]


def bench_users() -> list[str]:
    return [str(uuid.UUID(int=random.Random(7 + n).getrandbits(128))) for n in range(USERS)]


def batches(rows: int) -> list[tuple[int, int]]:
    return [(low, min(rows, low + BATCH - 1)) for low in range(1, rows + 1, BATCH)]


def check_counter(entries: int | None, counted: int, expected: int | None = None) -> int:
    """The counter row must equal ``count(*)`` (and ``expected`` when given)."""
    if entries != counted or (expected is not None and counted != expected):
        raise RuntimeError(f"counter row {entries}, count(*) {counted:,}, expected {expected}")
    return counted


def fill_sqlite(db: Path, rows: int) -> Filled:
    """Bulk-insert ``rows`` entries spread over a year into the migrated SQLite file."""
    users = bench_users()
    step = 365 * 86400 / rows
    seconds: dict[str, float] = {}
    conn = sqlite3.connect(db, isolation_level=None)  # explicit transactions below
    for pragma in SQLITE_BULK_PRAGMAS:
        conn.execute(pragma)
    before = check_counter(*conn.execute(COUNTER_CHECK).fetchone())
    conn.execute("CREATE TEMP TABLE bench_users (n INTEGER PRIMARY KEY, id TEXT)")
    conn.executemany("INSERT INTO bench_users VALUES (?, ?)", enumerate(users))
    indexes = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit_log'"
        " AND sql IS NOT NULL"  # the UNIQUE(id) and key indexes have none: they stay
    ).fetchall()
    for name, _ in indexes:
        conn.execute(f'DROP INDEX "{name}"')
    began = time.perf_counter()
    origin = START.strftime("%Y-%m-%d %H:%M:%S")
    for low, high in batches(rows):
        conn.execute("BEGIN")
        conn.execute(SQLITE_INSERT, (low, high, origin, step))
        # (the cursor's rowcount is -1 for a statement starting with WITH)
        (added,) = conn.execute("SELECT changes()").fetchone()
        conn.execute(COUNTER_ADD.format(int(added)))
        conn.execute("COMMIT")
    seconds["insert"] = time.perf_counter() - began
    began = time.perf_counter()
    for _, sql in indexes:
        conn.execute(sql)
    seconds["indexes"] = time.perf_counter() - began
    began = time.perf_counter()
    conn.execute("ANALYZE")
    seconds["analyze"] = time.perf_counter() - began
    check_counter(*conn.execute(COUNTER_CHECK).fetchone(), expected=before + rows)
    conn.close()
    return Filled(users, START + timedelta(seconds=step * rows), seconds)


async def fill_postgres(url: str, rows: int) -> Filled:
    """Bulk-insert ``rows`` entries spread over a year into the migrated PostgreSQL database."""
    import asyncpg

    users = bench_users()
    step = 365 * 86400 / rows
    seconds: dict[str, float] = {}
    conn = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        await conn.execute("SET synchronous_commit = off")
        await conn.execute("SET maintenance_work_mem = '1GB'")
        before = check_counter(*await conn.fetchrow(COUNTER_CHECK))
        await conn.execute("CREATE TEMP TABLE bench_users (n integer PRIMARY KEY, id text)")
        await conn.executemany("INSERT INTO bench_users VALUES ($1, $2)", enumerate(users))
        indexes = await conn.fetch(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'audit_log'"
            " AND indexname LIKE 'ix_audit%'"  # not the key's nor UNIQUE(id)'s
        )
        for index in indexes:
            await conn.execute(f'DROP INDEX "{index["indexname"]}"')
        began = time.perf_counter()
        for low, high in batches(rows):
            async with conn.transaction():
                status = await conn.execute(POSTGRES_INSERT, low, high, START, step)
                await conn.execute(COUNTER_ADD.format(int(status.split()[-1])))
        seconds["insert"] = time.perf_counter() - began
        began = time.perf_counter()
        for index in indexes:
            await conn.execute(index["indexdef"])
        seconds["indexes"] = time.perf_counter() - began
        # the rows were given their seq: the next audit write continues after them
        await conn.execute(
            "SELECT setval(pg_get_serial_sequence('audit_log', 'seq'), max(seq))"
            " FROM audit_log HAVING max(seq) IS NOT NULL"
        )
        began = time.perf_counter()
        # what autovacuum does to a table this size soon after: statistics, and the
        # visibility map index-only scans (count(*)) rely on
        await conn.execute("VACUUM (ANALYZE) audit_log")
        seconds["vacuum analyze"] = time.perf_counter() - began
        check_counter(*await conn.fetchrow(COUNTER_CHECK), expected=before + rows)
    finally:
        await conn.close()
    return Filled(users, START + timedelta(seconds=step * rows), seconds)


def explain(db: Path, kernel_query: str, params: tuple[object, ...]) -> str:
    conn = sqlite3.connect(db)
    plan = conn.execute(f"EXPLAIN QUERY PLAN {kernel_query}", params).fetchall()
    conn.close()
    return "; ".join(str(row[-1]) for row in plan)


def cases(users: list[str], newest: datetime, only_unfiltered: bool) -> dict[str, str]:
    """Name -> query string of the pages timed (besides ``COUNTED``)."""
    if only_unfiltered:
        return {UNFILTERED: ""}
    day = timedelta(days=1)
    fmt = "%Y-%m-%dT%H:%M:%S.000Z"
    return {
        UNFILTERED: "",
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


async def measure(
    url: str,
    data: Path,
    filled: Filled,
    repeat: int,
    *,
    only_unfiltered: bool = False,
) -> list[Row]:
    from hostgate.app import create_app, kernel_of
    from hostgate.config import Config
    from hostgate.db.models.audit import AUDIT_COUNT_ID, AuditCount
    from hostgate.services.identity.identity import ClientInfo
    from hostgate.testing import PatientTestApp
    from sqlalchemy import delete, text
    from sqlmodel import select

    config = Config(
        data_dir=data, encryption_key=BENCH_KEY, load_entry_points=False, database_url=url
    )
    app = create_app(config)
    kernel = kernel_of(app)
    rows: list[Row] = []
    async with PatientTestApp(app):
        client = app.test_client()
        await kernel.accounts.create_user(
            username="bench", password="bench-password", role="admin", actor=None
        )
        user = await kernel.accounts.user_by_name("bench")
        assert user is not None
        issued = await kernel.identity.issue_session(user, ClientInfo(ip_address="127.0.0.1"))
        headers = {"Authorization": f"Bearer {issued.token}"}

        async def counter_row(entries: int | None) -> None:
            """Put the counter row back with ``entries``, or remove it (None)."""
            async with kernel.db.session() as session:
                await session.exec(delete(AuditCount))  # type: ignore[call-overload]
                if entries is not None:
                    session.add(AuditCount(id=AUDIT_COUNT_ID, entries=entries))
                await session.commit()

        async def page(query: str) -> tuple[float, int]:
            began = time.perf_counter()
            response = await client.get(f"/api/v1/audit{query}", headers=headers)
            elapsed = (time.perf_counter() - began) * 1000
            if response.status_code != 200:
                raise RuntimeError(f"{query}: {response.status_code}")
            return elapsed, int((await response.get_json())["pagination"]["total"])

        async with kernel.db.session() as session:
            kept = (await session.exec(select(AuditCount.entries))).one()
        timed = cases(filled.users, filled.newest, only_unfiltered)
        timings: dict[str, list[float]] = {name: [] for name in [*timed, COUNTED]}
        totals: dict[str, int] = {}
        for _ in range(repeat):  # alternating rounds: every case once per round
            for name, query in timed.items():
                elapsed, totals[name] = await page(query)
                timings[name].append(elapsed)
            await counter_row(None)
            elapsed, totals[COUNTED] = await page("")
            timings[COUNTED].append(elapsed)
            await counter_row(kept)
        if totals[COUNTED] != totals[UNFILTERED]:
            raise RuntimeError(
                f"the counter row said {totals[UNFILTERED]:,}, count(*) {totals[COUNTED]:,}"
            )
        async with kernel.db.session() as session:
            check_counter(*(await session.exec(text(COUNTER_CHECK))).one())  # type: ignore[call-overload]
        for name in timings:
            rows.append(Row(f"{name} p50 ({totals[name]:,} match)", median(timings[name]), "ms"))
            target = "" if "search" in name else "< 100 ms"
            rows.append(Row(f"{name} p95", percentile(timings[name], 95), "ms", target=target))
    return rows


def migrate(url: str) -> None:
    from hostgate.db.engine import Database

    async def run() -> None:
        database = Database(url)
        await database.migrate()
        await database.close()

    asyncio.run(run())


def database_mib(url: str, data: Path) -> float:
    if url.startswith("sqlite"):
        return sum(p.stat().st_size for p in data.glob("hostgate.db*")) / 2**20
    import asyncpg

    async def size() -> float:
        conn = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
        value = await conn.fetchval("SELECT pg_database_size(current_database())")
        await conn.close()
        return float(value) / 2**20

    return asyncio.run(size())


def run(engine: str, url: str, data: Path, args: argparse.Namespace) -> list[Row]:
    """Migrate, fill and measure one database; rows named after ``engine``."""
    migrate(url)
    print(f"{engine}: filling {args.rows:,} entries (load average {os.getloadavg()[0]:.1f})")
    began, cpu = time.perf_counter(), time.process_time()
    if engine == "sqlite":
        filled = fill_sqlite(data / "hostgate.db", args.rows)
    else:
        filled = asyncio.run(fill_postgres(url, args.rows))
    parts = ", ".join(f"{name} {value:.0f} s" for name, value in filled.seconds.items())
    print(
        f"  filled in {time.perf_counter() - began:.0f} s ({parts}; this process's CPU"
        f" {time.process_time() - cpu:.0f} s), {database_mib(url, data):,.0f} MiB,"
        f" load average {os.getloadavg()[0]:.1f}; counter row = count(*)"
    )
    if args.explain and engine == "sqlite":
        base = "SELECT * FROM audit_log WHERE {} ORDER BY timestamp DESC, seq DESC LIMIT 25"
        for label, where, params in [
            ("eventType", "event_type IN (?)", ("auth.login",)),
            ("userId", "user_id = ?", (filled.users[3],)),
            ("range", "timestamp >= ? AND timestamp <= ?", ("2026-06-01", "2026-06-02")),
            ("none", "1", ()),
        ]:
            print(f"  plan {label}: {explain(data / 'hostgate.db', base.format(where), params)}")
    rows = asyncio.run(
        measure(url, data, filled, args.repeat, only_unfiltered=args.only_unfiltered)
    )
    return [Row(f"{engine}: {r.name}", r.value, r.unit, target=r.target) for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--engines", default="sqlite", help="comma-separated: sqlite,postgresql")
    parser.add_argument(
        "--only-unfiltered", action="store_true", help="time the unfiltered page only"
    )
    parser.add_argument("--explain", action="store_true", help="print SQLite query plans")
    args = parser.parse_args()
    engines = set(filter(None, args.engines.split(",")))
    rows: list[Row] = []
    print(f"load average before: {os.getloadavg()}")
    if "sqlite" in engines:
        data = Path(tempfile.mkdtemp(prefix="hg-bench-audit-"))
        try:
            rows += run("sqlite", f"sqlite+aiosqlite:///{data / 'hostgate.db'}", data, args)
        finally:
            shutil.rmtree(data, ignore_errors=True)
    if "postgresql" in engines:
        with postgres() as url:
            if url is not None:
                data = Path(tempfile.mkdtemp(prefix="hg-bench-audit-pg-"))
                try:
                    rows += run("postgresql", url, data, args)
                finally:
                    shutil.rmtree(data, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")
    print_table(rows)


if __name__ == "__main__":
    main()
