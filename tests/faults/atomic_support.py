"""What the atomic-audit fault tests share: the audit-write fault, the world, the cases.

The fault is deterministic: every ``INSERT INTO audit_log`` fails the way SQLite
fails on a full disk. A case is one audited change; it is made once with the
fault (it must answer 503 ``storage_full`` and leave neither the change nor an
audit entry behind) and once without (it must succeed, add exactly its entries,
and the chain must verify).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hostgate.db.models.audit import AuditEntry
from hostgate.db.models.connections import Connection
from hostgate.errors import storage_error
from hostgate.kernel import Kernel
from sqlalchemy import event
from sqlalchemy.exc import OperationalError
from sqlmodel import select

from tests.services.identity.helpers import API, audit_entries

AUDIT_TABLE = AuditEntry.__tablename__


def disk_full() -> sqlite3.OperationalError:
    """The error SQLite's driver raises when the disk is full."""
    error = sqlite3.OperationalError("database or disk is full")
    error.sqlite_errorcode = sqlite3.SQLITE_FULL  # type: ignore[attr-defined]
    error.sqlite_errorname = "SQLITE_FULL"  # type: ignore[attr-defined]
    return error


@contextlib.contextmanager
def audit_writes_fail(kernel: Kernel) -> Iterator[None]:
    """Every insert into the audit log fails; other statements run as usual."""
    engine = kernel.db.engine.sync_engine

    def refuse(
        _conn: Any, _cursor: Any, statement: str, _params: Any, _context: Any, _many: bool
    ) -> None:
        if statement.lstrip().upper().startswith(f"INSERT INTO {AUDIT_TABLE.upper()}"):
            raise disk_full()

    event.listen(engine, "before_cursor_execute", refuse)
    try:
        yield
    finally:
        event.remove(engine, "before_cursor_execute", refuse)


@dataclass
class World:
    """What a case prepares and reads back with."""

    kernel: Kernel
    admin: Any
    make_user: Callable[..., Awaitable[Any]]
    make_connection: Callable[..., Awaitable[Connection]]
    ids: dict[str, Any] = field(default_factory=dict)
    client: Any = None

    async def get(self, model: type[Any], key: str) -> Any:
        async with self.kernel.db.session() as session:
            return await session.get(model, key)

    async def find(self, model: type[Any], **equal: Any) -> Any:
        query = select(model)
        for name, value in equal.items():
            query = query.where(getattr(model, name) == value)
        async with self.kernel.db.session() as session:
            return (await session.exec(query)).first()

    async def add(self, row: Any) -> Any:
        async with self.kernel.db.session() as session:
            session.add(row)
            await session.commit()
        return row


Prepare = Callable[[World], Awaitable[None]]
Stored = Callable[[World], Awaitable[bool]]


async def nothing(world: World) -> None:
    return None


@dataclass(frozen=True)
class Case:
    """One audited change over HTTP; ``{user}``-style placeholders name prepared ids.

    ``body`` is a JSON object or a coroutine function of the world returning one
    (called for each attempt). ``entries`` are the event types a success adds,
    in order (default: just ``event``).
    """

    event: str
    prepare: Prepare
    method: str
    path: str
    body: dict[str, Any] | Callable[[World], Awaitable[dict[str, Any]]] | None
    status: int
    stored: Stored
    entries: tuple[str, ...] = ()
    label: str = ""

    @property
    def id(self) -> str:
        return f"{self.event}[{self.label}]" if self.label else self.event


@dataclass(frozen=True)
class KernelCase:
    """One audited change made through the kernel (no HTTP path without a real server)."""

    event: str
    prepare: Prepare
    act: Callable[[World], Awaitable[Any]]
    stored: Stored
    entries: tuple[str, ...] = ()
    label: str = ""

    @property
    def id(self) -> str:
        return f"{self.event}[{self.label}]" if self.label else self.event


async def _succeeded(world: World, case: Case | KernelCase, before: int) -> None:
    """The change is stored with exactly its entries, and the chain verifies."""
    assert await case.stored(world)
    entries = await audit_entries(world.kernel)
    assert [e.event_type for e in entries[before:]] == list(case.entries or (case.event,))
    result = await world.kernel.audit.verify_chain()
    assert result.ok, result.problem


async def check_http_case(case: Case, world: World, client: Any) -> None:
    """Refused with 503 ``storage_full`` and nothing stored, then stored once it can be."""
    await case.prepare(world)
    path = API + case.path.format(**world.ids)

    async def send() -> Any:
        call = getattr(client, case.method.lower())
        kwargs: dict[str, Any] = {"headers": world.admin.headers}
        if callable(case.body):
            kwargs["json"] = await case.body(world)
        elif case.body is not None:
            kwargs["json"] = case.body
        return await call(path, **kwargs)

    before = len(await audit_entries(world.kernel))
    with audit_writes_fail(world.kernel):
        refused = await send()
    body = await refused.get_json()
    assert refused.status_code == 503, body
    assert set(body) == {"error", "code"} and body["code"] == "storage_full"
    assert not await case.stored(world), "the change was stored without its audit entry"
    assert len(await audit_entries(world.kernel)) == before

    done = await send()
    assert done.status_code == case.status, await done.get_json()
    await _succeeded(world, case, before)


async def check_kernel_case(case: KernelCase, world: World) -> None:
    """As ``check_http_case``, through the kernel: the storage error reaches the caller."""
    await case.prepare(world)
    before = len(await audit_entries(world.kernel))
    with audit_writes_fail(world.kernel), pytest.raises(OperationalError) as raised:
        await case.act(world)
    mapped = storage_error(raised.value)
    assert mapped is not None and mapped.code == "storage_full", raised.value
    assert not await case.stored(world), "the change was stored without its audit entry"
    assert len(await audit_entries(world.kernel)) == before

    await case.act(world)
    await _succeeded(world, case, before)
