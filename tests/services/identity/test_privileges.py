"""Nobody climbs above their own role: every user and role action against a subordinate,
a peer and a superior, by a custom role holding only users.manage, one holding only
roles.manage, and an admin. A refusal is a 403 that says why and changes nothing."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hostgate.db.models.identity import Role, User
from sqlmodel import select

from tests.services.identity.helpers import API

NUMBERS = itertools.count()
ESCALATION = "privilege_escalation"
OUTRANKED = "target_outranks_you"
EXTRA = "audit.view_any"  # what a superior holds beyond the caller
CALLERS = {"users.manage only": ["users.manage"], "roles.manage only": ["roles.manage"]}
LEVELS = ("subordinate", "peer", "superior")


@dataclass
class Case:
    client: Any
    kernel: Any
    make_user: Callable[..., Awaitable[Any]]
    caller: Any
    held: list[str]
    level: str

    @property
    def permissions(self) -> list[str]:
        """The permissions of a role at this case's level relative to the caller."""
        if self.level == "subordinate":  # an admin keeps managing, so never the last manager
            return [p for p in self.held if p != EXTRA] if EXTRA in self.held else []
        if self.level == "peer":
            return list(self.held)
        return [*self.held, EXTRA]

    async def role(self, permissions: list[str] | None = None) -> str:
        """A fresh role holding ``permissions`` (this level's by default); its id."""
        async with self.kernel.db.session() as session:
            chosen = self.permissions if permissions is None else permissions
            row = Role(name=f"made-{next(NUMBERS)}", permissions=chosen)
            session.add(row)
            await session.commit()
            return row.id

    async def target(self) -> Any:
        """A user at this level, with failed logins to unlock."""
        user = await self.make_user(permissions=self.permissions)
        async with self.kernel.db.session() as session:
            row = await session.get(User, user.id)
            row.failed_login_count = 3
            session.add(row)
            await session.commit()
        return user

    async def subordinate(self) -> Any:
        """A user below the caller whatever the level."""
        return await self.make_user(permissions=[])

    async def call(self, request: Request) -> Any:
        method, path, body = request
        return await self.client.open(
            f"{API}{path}", method=method, headers=self.caller.headers, json=body
        )


Request = tuple[str, str, Any]


async def create_user(case: Case) -> Request:
    body = {"username": "newcomer", "password": "long-enough", "role": await case.role()}
    return "POST", "/users", body


async def change_role_of(case: Case) -> Request:
    target = await case.subordinate()
    return "PUT", f"/users/{target.id}", {"role": await case.role()}


async def change_own_role(case: Case) -> Request:
    return "PUT", f"/users/{case.caller.id}", {"role": await case.role()}


async def change(case: Case) -> Request:
    target = await case.target()
    return "PUT", f"/users/{target.id}", {"displayName": "Renamed"}


async def reset_password(case: Case) -> Request:
    target = await case.target()
    body = {"newPassword": "another-password"}
    return "POST", f"/users/{target.id}/reset-password", body


async def delete(case: Case) -> Request:
    target = await case.target()
    return "DELETE", f"/users/{target.id}", None


async def unlock(case: Case) -> Request:
    target = await case.target()
    return "POST", f"/users/{target.id}/unlock", None


async def suspend(case: Case) -> Request:
    target = await case.target()
    return "POST", f"/users/{target.id}/suspend", None


async def create_role(case: Case) -> Request:
    return "POST", "/roles", {"name": "Made", "permissions": case.permissions}


async def grant_to_role(case: Case) -> Request:
    role_id = await case.role([])
    return "PUT", f"/roles/{role_id}", {"permissions": case.permissions}


async def grant_to_own_role(case: Case) -> Request:
    body = {"permissions": case.permissions}
    return "PUT", f"/roles/{case.caller.role_id}", body


async def edit_role(case: Case) -> Request:
    return "PUT", f"/roles/{await case.role()}", {"description": "changed"}


async def delete_role(case: Case) -> Request:
    return "DELETE", f"/roles/{await case.role()}", None


# action -> (the permission its route needs, the code of a refusal at the superior level)
ACTIONS: dict[Callable[[Case], Awaitable[Request]], tuple[str, str]] = {
    create_user: ("users.manage", ESCALATION),
    change_role_of: ("users.manage", ESCALATION),
    change_own_role: ("users.manage", ESCALATION),
    change: ("users.manage", OUTRANKED),
    reset_password: ("users.manage", OUTRANKED),
    delete: ("users.manage", OUTRANKED),
    unlock: ("users.manage", OUTRANKED),
    suspend: ("users.manage", OUTRANKED),
    create_role: ("roles.manage", ESCALATION),
    grant_to_role: ("roles.manage", ESCALATION),
    grant_to_own_role: ("roles.manage", ESCALATION),
    edit_role: ("roles.manage", OUTRANKED),
    delete_role: ("roles.manage", OUTRANKED),
}
# An admin holds every permission: nobody is above them, so they have no superior case.
MATRIX = [
    pytest.param(action, caller, level, id=f"{action.__name__}-{caller}-{level}")
    for action in ACTIONS
    for caller in [*CALLERS, "admin"]
    for level in LEVELS
    if not (caller == "admin" and level == "superior")
]


async def snapshot(kernel: Any) -> tuple[list[Any], list[Any]]:
    """Everything an administration action could change."""
    async with kernel.db.session() as session:
        users = [
            (
                u.id,
                u.username,
                u.display_name,
                u.role_id,
                u.password_hash,
                u.failed_login_count,
                u.suspended,
            )
            for u in (await session.exec(select(User).order_by(User.id))).all()
        ]
        roles = [
            (r.id, r.name, r.description, list(r.permissions))
            for r in (await session.exec(select(Role).order_by(Role.id))).all()
        ]
    return users, roles


@pytest.mark.parametrize(("action", "caller", "level"), MATRIX)
async def test_privilege_matrix(client, kernel, make_user, admin, action, caller, level):
    if caller == "admin":
        subject, held = admin, list(kernel.permission_names)
    else:
        held = CALLERS[caller]
        subject = await make_user("caller", permissions=held)
    case = Case(client, kernel, make_user, subject, held, level)
    needed, refusal = ACTIONS[action]

    request = await action(case)  # creates the target first
    before = await snapshot(kernel)
    response = await case.call(request)
    body = await response.get_json()
    if needed not in held:
        assert response.status_code == 403 and body["code"] == "forbidden", body
        assert await snapshot(kernel) == before
    elif level == "superior":
        assert response.status_code == 403, body
        assert body["code"] == refusal
        expected = "do not hold yourself" if refusal == ESCALATION else "exceed your own"
        assert expected in body["error"] and EXTRA in body["error"], body
        assert await snapshot(kernel) == before
    else:
        assert 200 <= response.status_code < 300, body


async def test_a_refused_grant_changes_nothing(client, kernel, make_user, admin):
    caller = await make_user("caller", permissions=["users.manage"])
    target = await make_user("target", permissions=[])
    before = await snapshot(kernel)
    for body in ({"role": "admin"}, {"role": "admin", "displayName": "Boss"}):
        response = await client.put(f"{API}/users/{target.id}", headers=caller.headers, json=body)
        assert response.status_code == 403
        own = await client.put(f"{API}/users/{caller.id}", headers=caller.headers, json=body)
        assert own.status_code == 403
    reset = await client.post(
        f"{API}/users/{admin.id}/reset-password",
        headers=caller.headers,
        json={"newPassword": "taken-over-now"},
    )
    assert reset.status_code == 403
    assert (await reset.get_json())["error"] == (
        "You cannot reset the password of admin: that user's permissions exceed your own "
        f"({', '.join(p for p in kernel.permission_names if p != 'users.manage')})"
    )
    assert await snapshot(kernel) == before


async def test_resetting_a_builtin_role_grants_its_defaults(client, kernel, make_user):
    roles_only = await make_user("caller", permissions=["roles.manage"])
    async with kernel.db.session() as session:
        user_role = (await session.exec(select(Role).where(Role.name == "user"))).one()
        user_role.permissions = []
        session.add(user_role)
        await session.commit()
    response = await client.post(f"{API}/roles/user/reset", headers=roles_only.headers)
    assert response.status_code == 403
    assert (await response.get_json())["code"] == ESCALATION
    admin_reset = await client.post(f"{API}/roles/admin/reset", headers=roles_only.headers)
    assert admin_reset.status_code == 403
    assert (await admin_reset.get_json())["code"] == OUTRANKED
