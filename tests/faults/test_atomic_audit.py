"""An audited change and its audit entry are stored together, or neither is.

The fault is deterministic: every ``INSERT INTO audit_log`` fails the way SQLite
fails on a full disk. Each audited change to users, roles, connections, groups and
shares then answers 503 ``storage_full`` and leaves nothing behind: not the change,
not an audit entry. Without the fault the same request succeeds and the chain
verifies. (Before ``audit.atomic()`` the change was committed first, so a failed
audit write kept a change nobody could see in the log.)
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hostgate.db.models.audit import AuditEntry
from hostgate.db.models.connections import Connection, ConnectionGroup, ConnectionShare
from hostgate.db.models.identity import Role, User
from hostgate.kernel import Kernel
from hostgate.services.audit_verify import verify_chain
from sqlalchemy import event
from sqlmodel import select

from tests.connections.conftest import FakeProtocols
from tests.identity.helpers import API, audit_entries

AUDIT_TABLE = AuditEntry.__tablename__


@pytest.fixture
def plugins() -> list[object]:
    return [FakeProtocols()]


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


# -- what each case prepares (before the fault) ------------------------------------


async def nothing(world: World) -> None:
    return None


async def a_user(world: World) -> None:
    bob = await world.make_user("bob")
    world.ids["user"] = bob.id
    world.ids["hash"] = (await world.get(User, bob.id)).password_hash


async def a_locked_user(world: World) -> None:
    await a_user(world)
    user = await world.get(User, world.ids["user"])
    user.failed_login_count = 3
    await world.add(user)


async def a_role(world: World) -> None:
    world.ids["role"] = (await world.add(Role(name="auditors", permissions=[]))).id


async def a_changed_builtin_role(world: World) -> None:
    role = await world.find(Role, name="user")
    role.permissions = []
    world.ids["role"] = (await world.add(role)).id


async def a_connection(world: World) -> None:
    world.ids["connection"] = (await world.make_connection(world.admin, "fakedesk")).id


async def a_connection_and_a_user(world: World) -> None:
    await a_connection(world)
    await a_user(world)


async def a_group(world: World) -> None:
    group = ConnectionGroup(owner_id=world.admin.id, name="racks")
    world.ids["group"] = (await world.add(group)).id


# -- whether the change is stored --------------------------------------------------


async def user_created(world: World) -> bool:
    return await world.find(User, username_key="newcomer") is not None


async def user_renamed(world: World) -> bool:
    return bool((await world.get(User, world.ids["user"])).display_name == "Robert")


async def user_gone(world: World) -> bool:
    return await world.get(User, world.ids["user"]) is None


async def password_changed(world: World) -> bool:
    return bool((await world.get(User, world.ids["user"])).password_hash != world.ids["hash"])


async def user_unlocked(world: World) -> bool:
    return bool((await world.get(User, world.ids["user"])).failed_login_count == 0)


async def role_created(world: World) -> bool:
    return await world.find(Role, name="newrole") is not None


async def role_described(world: World) -> bool:
    return bool((await world.get(Role, world.ids["role"])).description == "reads the log")


async def role_restored(world: World) -> bool:
    return bool((await world.get(Role, world.ids["role"])).permissions != [])


async def role_gone(world: World) -> bool:
    return await world.get(Role, world.ids["role"]) is None


async def connection_created(world: World) -> bool:
    return await world.find(Connection, name="fresh box") is not None


async def connection_renamed(world: World) -> bool:
    return bool((await world.get(Connection, world.ids["connection"])).name == "renamed")


async def connection_gone(world: World) -> bool:
    return await world.get(Connection, world.ids["connection"]) is None


async def group_created(world: World) -> bool:
    return await world.find(ConnectionGroup, name="fresh group") is not None


async def group_renamed(world: World) -> bool:
    return bool((await world.get(ConnectionGroup, world.ids["group"])).name == "shelves")


async def group_gone(world: World) -> bool:
    return await world.get(ConnectionGroup, world.ids["group"]) is None


async def connection_shared(world: World) -> bool:
    share = await world.find(ConnectionShare, connection_id=world.ids["connection"])
    return share is not None


@dataclass(frozen=True)
class Case:
    """One audited change over HTTP; ``{user}``-style placeholders name prepared ids."""

    event: str
    prepare: Callable[[World], Awaitable[None]]
    method: str
    path: str
    body: dict[str, Any] | None
    status: int
    stored: Callable[[World], Awaitable[bool]]


CASES = [
    Case("user.created", nothing, "POST", "/users",
         {"username": "newcomer", "password": "long-enough-1"}, 201, user_created),
    Case("user.updated", a_user, "PUT", "/users/{user}", {"displayName": "Robert"}, 200,
         user_renamed),
    Case("user.deleted", a_user, "DELETE", "/users/{user}", None, 200, user_gone),
    Case("user.password_reset", a_user, "POST", "/users/{user}/reset-password",
         {"newPassword": "another-long-one"}, 200, password_changed),
    Case("user.unlocked", a_locked_user, "POST", "/users/{user}/unlock", None, 200,
         user_unlocked),
    Case("role.created", nothing, "POST", "/roles", {"name": "newrole", "permissions": []}, 201,
         role_created),
    Case("role.updated", a_role, "PUT", "/roles/{role}", {"description": "reads the log"}, 200,
         role_described),
    Case("role.reset", a_changed_builtin_role, "POST", "/roles/{role}/reset", None, 200,
         role_restored),
    Case("role.deleted", a_role, "DELETE", "/roles/{role}", None, 200, role_gone),
    Case("connection.created", nothing, "POST", "/connections",
         {"name": "fresh box", "protocol": "fakedesk", "host": "127.0.0.1"}, 201,
         connection_created),
    Case("connection.updated", a_connection, "PUT", "/connections/{connection}",
         {"name": "renamed"}, 200, connection_renamed),
    Case("connection.deleted", a_connection, "DELETE", "/connections/{connection}", None, 200,
         connection_gone),
    Case("group.created", nothing, "POST", "/connections/groups", {"name": "fresh group"}, 201,
         group_created),
    Case("group.updated", a_group, "PUT", "/connections/groups/{group}", {"name": "shelves"},
         200, group_renamed),
    Case("group.deleted", a_group, "DELETE", "/connections/groups/{group}", None, 200,
         group_gone),
    Case("connection.shared", a_connection_and_a_user, "PUT", "/connections/{connection}/shares",
         {"shares": [{"shareType": "user", "targetId": "bob"}]}, 200, connection_shared),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[case.event for case in CASES])
async def test_a_failed_audit_write_stores_neither_the_change_nor_the_entry(
    case: Case,
    client: Any,
    admin: Any,
    kernel: Kernel,
    make_user: Callable[..., Awaitable[Any]],
    make_connection: Callable[..., Awaitable[Connection]],
) -> None:
    world = World(kernel, admin, make_user, make_connection)
    await case.prepare(world)
    path = API + case.path.format(**world.ids)

    async def send() -> Any:
        call = getattr(client, case.method.lower())
        kwargs: dict[str, Any] = {"headers": admin.headers}
        if case.body is not None:
            kwargs["json"] = case.body
        return await call(path, **kwargs)

    before = len(await audit_entries(kernel))
    with audit_writes_fail(kernel):
        refused = await send()
    body = await refused.get_json()
    assert refused.status_code == 503, body
    assert set(body) == {"error", "code"} and body["code"] == "storage_full"
    assert not await case.stored(world), "the change was stored without its audit entry"
    assert len(await audit_entries(kernel)) == before

    done = await send()
    assert done.status_code == case.status, await done.get_json()
    assert await case.stored(world)
    entries = await audit_entries(kernel)
    assert [e.event_type for e in entries[before:]] == [case.event]
    result = await verify_chain(kernel)
    assert result.ok, result.problem
