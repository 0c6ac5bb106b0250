"""An audited change and its audit entry are stored together, or neither is.

The fault is deterministic: every ``INSERT INTO audit_log`` fails the way SQLite
fails on a full disk. Each audited change to users, roles, connections, groups and
shares then answers 503 ``storage_full`` and leaves nothing behind: not the change,
not an audit entry. Without the fault the same request succeeds and the chain
verifies. (Before ``audit.atomic()`` the change was committed first, so a failed
audit write kept a change nobody could see in the log.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hostgate.db.models.connections import Connection, ConnectionGroup, ConnectionShare
from hostgate.db.models.identity import Role, User
from hostgate.kernel import Kernel

from tests.faults.atomic_support import Case, World, check_http_case, nothing
from tests.services.connections.conftest import FakeProtocols


@pytest.fixture
def plugins() -> list[object]:
    return [FakeProtocols()]


# -- what each case prepares (before the fault) ------------------------------------


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


async def user_suspended(world: World) -> bool:
    return bool((await world.get(User, world.ids["user"])).suspended)


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
    Case("user.suspended", a_user, "POST", "/users/{user}/suspend", None, 200, user_suspended),
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


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
async def test_a_failed_audit_write_stores_neither_the_change_nor_the_entry(
    case: Case,
    client: Any,
    admin: Any,
    kernel: Kernel,
    make_user: Callable[..., Awaitable[Any]],
    make_connection: Callable[..., Awaitable[Connection]],
) -> None:
    await check_http_case(case, World(kernel, admin, make_user, make_connection), client)
