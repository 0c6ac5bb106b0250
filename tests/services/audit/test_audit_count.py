"""The audit log's counter row: the unfiltered total, exact on SQLite and PostgreSQL.

Every audit write adds its entries to ``audit_count`` in the transaction that
inserts them, so ``GET /audit`` without a filter reads one row instead of
counting every entry. Checked here: the counter follows single and batched
writes, a rolled-back block adds nothing, concurrent writers from two apps on
one database keep it exact, the unfiltered page runs no ``count(*)`` while a
filtered one still counts, and a database without the row falls back to
counting. The backup round trips check it after a restore
(``tests/services/backup/support.check_restored``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from hostgate.app import create_app, kernel_of
from hostgate.config import Config
from hostgate.db.models.audit import AuditCount, AuditEntry
from hostgate.kernel import Kernel
from hostgate.pagination import Page
from hostgate.services.audit.audit_query import AuditFilter
from hostgate.testing import PatientTestApp
from sqlalchemy import delete, update
from sqlmodel import func, select

from testsupport.statements import executed_statements


@pytest.fixture(params=["sqlite", "postgresql"])
def engine_config(request: pytest.FixtureRequest, config: Config) -> Config:
    if request.param == "sqlite":
        return config
    return config.with_overrides(database_url=request.getfixturevalue("postgres_url"))


@asynccontextmanager
async def started(config: Config) -> AsyncIterator[Kernel]:
    app = create_app(config)
    async with PatientTestApp(app):
        yield kernel_of(app)


async def kept_and_counted(kernel: Kernel) -> tuple[list[int], int]:
    async with kernel.db.session() as session:
        kept = list((await session.exec(select(AuditCount.entries))).all())
        counted = (await session.exec(select(func.count()).select_from(AuditEntry))).one()
    return kept, int(counted)


def counts(statements: list[str]) -> list[str]:
    return [s for s in statements if "count(" in s.lower()]


async def test_the_counter_follows_every_write_and_answers_the_unfiltered_total(
    engine_config: Config,
) -> None:
    async with started(engine_config) as kernel:
        for n in range(3):
            await kernel.audit.record("count.single", target=str(n))
        async with kernel.audit.atomic() as batch:
            for n in range(4):
                batch.record("count.batch", target=str(n))
        with pytest.raises(RuntimeError):
            async with kernel.audit.atomic() as batch:
                batch.record("count.rolled_back")
                raise RuntimeError("the change failed: neither it nor its entry stays")
        kept, counted = await kept_and_counted(kernel)
        assert kept == [counted] and counted >= 7

        with executed_statements(kernel) as statements:
            entries, total = await kernel.audit_query.search(AuditFilter(), Page(1, 5))
        assert total == counted and len(entries) == 5
        assert counts(statements) == []  # one row read, nothing counted
        with executed_statements(kernel) as statements:
            _, batched = await kernel.audit_query.search(
                AuditFilter(event_types=("count.batch",)), Page(1, 5)
            )
        assert batched == 4 and len(counts(statements)) == 1  # filters still count

        # without the row (a database someone edited) the total is counted instead
        async with kernel.db.session() as session:
            await session.exec(delete(AuditCount))  # type: ignore[call-overload]
            await session.commit()
        with executed_statements(kernel) as statements:
            _, fallback = await kernel.audit_query.search(AuditFilter(), Page(1, 5))
        assert fallback == counted and len(counts(statements)) == 1


async def test_concurrent_writers_on_one_database_keep_the_counter_exact(
    engine_config: Config,
) -> None:
    """Two apps (two engines, as two nodes or the CLI beside ``serve``) writing at once."""
    per_writer = 25
    async with started(engine_config) as first, started(engine_config) as second:
        for kernel in (first, second):
            # several nodes: each takes the database's lock for the chain head
            kernel.audit.shared = True
        before, _ = await kept_and_counted(first)

        async def write(kernel: Kernel, name: str) -> None:
            for n in range(per_writer):
                if n % 5 == 4:
                    async with kernel.audit.atomic() as batch:
                        batch.record(f"count.{name}", target=f"{n}a")
                        batch.record(f"count.{name}", target=f"{n}b")
                else:
                    await kernel.audit.record(f"count.{name}", target=str(n))

        await asyncio.gather(write(first, "first"), write(second, "second"), write(first, "third"))
        kept, counted = await kept_and_counted(second)
        assert kept == [counted] == [before[0] + 3 * (per_writer + per_writer // 5)]
        _, total = await second.audit_query.search(AuditFilter(), Page(1, 25))
        assert total == counted
        assert (await first.audit.verify_chain()).ok


async def test_postgresql_writers_without_the_chain_lock_still_count_exactly(
    config: Config, postgres_url: str
) -> None:
    """The counter row's own lock orders writers that do not share the chain lock."""
    pg = config.with_overrides(database_url=postgres_url)
    async with started(pg) as first, started(pg) as second:
        before, _ = await kept_and_counted(first)
        held = asyncio.Event()
        release = asyncio.Event()

        async def slow_writer() -> None:
            async with first.audit.atomic() as batch:
                batch.record("count.slow")
                # the increment runs before commit: hold the transaction open after it
                await batch.session.flush()
                await batch.session.exec(  # type: ignore[call-overload]
                    update(AuditCount).values(entries=AuditCount.entries + 0)
                )
                held.set()
                await release.wait()

        async def other_writers() -> None:
            await held.wait()
            waiting = [asyncio.create_task(second.audit.record("count.other")) for _ in range(3)]
            await asyncio.sleep(0.3)  # they queue behind the open transaction's row lock
            release.set()
            await asyncio.gather(*waiting)

        await asyncio.gather(slow_writer(), other_writers())
        kept, counted = await kept_and_counted(second)
        assert kept == [counted] == [before[0] + 4]
