"""Roles: built-in (``admin``, ``user``) and custom; permission names checked against the kernel.

Built-in roles keep their name and description; their permissions can change and
``reset`` restores the defaults. A role with users cannot be deleted, no change
may leave the instance without a user able to manage users or roles, and an API
caller writes only permissions they hold, to roles that do not outrank them
(``privileges``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from ... import permissions as perms
from ...db.models.identity import Role, User
from ...errors import Conflict, InvalidInput, NotFound
from ...timefmt import utcnow
from .accounts import NAME_MAX, audit, ensure_managers_remain, lock_roles, manager_holders
from .accounts import resolve_role as _resolve
from .onboarding import MFA_ROLES, role_names, role_renamed
from .privileges import check_grant, check_target

if TYPE_CHECKING:
    from ...contract import AuditBatchAPI
    from ...db.engine import Database
    from ..audit.audit import AuditLog
    from ..settings import Settings
    from .identity import Caller

DESCRIPTION_MAX = 1000


def _check_name(name: str) -> str:
    cleaned = name.strip()
    if not cleaned:
        raise InvalidInput("name must not be empty")
    if len(name) > NAME_MAX:
        raise InvalidInput(f"name must be at most {NAME_MAX} characters")
    return name


def _check_description(description: str) -> str:
    if len(description) > DESCRIPTION_MAX:
        raise InvalidInput(f"description must be at most {DESCRIPTION_MAX} characters")
    return description


async def _name_taken(session: AsyncSession, name: str, except_id: str | None = None) -> bool:
    query = select(Role.id).where(func.lower(Role.name) == name.strip().lower())
    if except_id is not None:
        query = query.where(col(Role.id) != except_id)
    return (await session.exec(query)).first() is not None


async def _role_or_404(session: AsyncSession, ref: str) -> Role:
    role = await _resolve(session, ref)
    if role is None:
        raise NotFound("Role not found")
    return role


async def _target_role(session: AsyncSession, ref: str, actor: Caller | None, action: str) -> Role:
    """The role ``action`` is about; 403 when it holds a permission the actor lacks."""
    role = await _role_or_404(session, ref)
    check_target(actor, role.permissions, action=f"{action} the role {role.name!r}", kind="role")
    return role


def _changes(before: list[str], after: list[str]) -> dict[str, Any]:
    added = [p for p in after if p not in before]
    removed = [p for p in before if p not in after]
    out: dict[str, Any] = {}
    if added:
        out["permissionsAdded"] = added
    if removed:
        out["permissionsRemoved"] = removed
    return out


class Roles:
    """Custom and built-in roles: create, change, reset, delete (audited)."""

    def __init__(
        self,
        *,
        audit: AuditLog,
        db: Database,
        permission_groups: dict[str, list[str]],
        settings: Settings | None = None,
    ) -> None:
        self.audit = audit
        self.db = db
        self.permission_groups = permission_groups
        # security.require_mfa_roles names roles: it follows a rename and a deletion
        self.settings = settings

    async def check_mfa_roles(self, clean: Mapping[str, Any]) -> None:
        """Settings guard: ``security.require_mfa_roles`` names roles only (400 names others)."""
        if MFA_ROLES not in clean:
            return
        async with self.db.session() as session:
            known = {name.lower() for name in (await session.exec(select(Role.name))).all()}
        unknown = [name for name in role_names(str(clean[MFA_ROLES])) if name.lower() not in known]
        if unknown:
            raise InvalidInput(
                f"{MFA_ROLES} names no role called {', '.join(repr(n) for n in unknown)}",
                code="unknown_role",
            )

    async def _follow_role(
        self, batch: AuditBatchAPI, old: str, new: str | None, details: dict[str, Any]
    ) -> None:
        """Keep ``security.require_mfa_roles`` naming role ``old``, now ``new`` (None: gone)."""
        if self.settings is None:
            return
        changed = role_renamed(str(self.settings.get(MFA_ROLES)), old, new)
        if changed is None:
            return
        before, after = await self.settings.change_in(batch, {MFA_ROLES: changed})
        details["requireMfaRoles"] = {"from": before[MFA_ROLES], "to": after[MFA_ROLES]}

    @property
    def permission_names(self) -> list[str]:
        """Every known permission name, in the kernel's order."""
        return perms.all_names(self.permission_groups)

    def check_permissions(self, names: Iterable[str]) -> list[str]:
        """Known permission names in the kernel's order; 400 naming any unknown ones."""
        wanted = list(names)
        known = self.permission_names
        unknown = sorted({n for n in wanted if n not in known})
        if unknown:
            raise InvalidInput(
                f"Unknown permission(s): {', '.join(unknown)}", code="unknown_permission"
            )
        chosen = set(wanted)
        return [n for n in known if n in chosen]

    async def list_roles(self) -> list[Role]:
        """Built-in roles first, then by name."""
        async with self.db.session() as session:
            roles = (await session.exec(select(Role))).all()
        ordered = sorted(roles, key=lambda r: (not r.is_builtin, r.name.lower()))
        return ordered

    async def create_role(
        self,
        *,
        name: str,
        description: str,
        permissions: Iterable[str],
        actor: Caller | None,
    ) -> Role:
        """A new custom role."""
        name = _check_name(name)
        description = _check_description(description)
        granted = self.check_permissions(permissions)
        check_grant(actor, granted, what=f"the role {name!r}")
        async with self.audit.atomic() as batch:
            session = batch.session
            if await _name_taken(session, name):
                raise Conflict(f"A role named {name!r} already exists", code="role_exists")
            role = Role(name=name, description=description, permissions=granted)
            session.add(role)
            try:
                await session.flush()
            except IntegrityError:
                raise Conflict(
                    f"A role named {name!r} already exists", code="role_exists"
                ) from None
            audit(
                batch,
                "role.created",
                actor,
                target=role.name,
                details={"roleId": role.id, "permissions": granted},
            )
        return role

    async def update_role(
        self, ref: str, changes: Mapping[str, Any], *, actor: Caller | None
    ) -> Role:
        """Change name, description and/or permissions (built-ins: permissions only)."""
        async with self.audit.atomic() as batch:
            session = batch.session
            await lock_roles(session)
            before_holders = await manager_holders(session)
            role = await _target_role(session, ref, actor, "edit")
            details: dict[str, Any] = {"roleId": role.id}
            if "name" in changes and changes["name"] != role.name:
                if role.is_builtin:
                    raise Conflict(
                        "Built-in roles keep their name and description", code="builtin_role"
                    )
                name = _check_name(changes["name"])
                if await _name_taken(session, name, except_id=role.id):
                    raise Conflict(f"A role named {name!r} already exists", code="role_exists")
                details["nameChanged"] = {"from": role.name, "to": name}
                await self._follow_role(batch, role.name, name, details)
                role.name = name
            if "description" in changes and changes["description"] != role.description:
                if role.is_builtin:
                    raise Conflict(
                        "Built-in roles keep their name and description", code="builtin_role"
                    )
                role.description = _check_description(changes["description"])
                details["descriptionChanged"] = True
            if "permissions" in changes:
                granted = self.check_permissions(changes["permissions"])
                check_grant(actor, granted, what=f"the role {role.name!r}")
                details.update(_changes(list(role.permissions), granted))
                role.permissions = granted
            if len(details) > 1:
                role.updated_at = utcnow()
                session.add(role)
                await session.flush()
                await ensure_managers_remain(session, before_holders)
                audit(batch, "role.updated", actor, target=role.name, details=details)
        return role

    async def reset_role(self, ref: str, *, actor: Caller | None) -> Role:
        """Restore a built-in role's default permissions."""
        defaults = perms.builtin_defaults(self.permission_groups)
        async with self.audit.atomic() as batch:
            session = batch.session
            await lock_roles(session)
            before_holders = await manager_holders(session)
            role = await _target_role(session, ref, actor, "reset")
            if not role.is_builtin or role.name not in defaults:
                raise Conflict("Only built-in roles can be reset", code="not_builtin")
            description, granted = defaults[role.name]
            check_grant(actor, granted, what=f"the role {role.name!r}")
            details: dict[str, Any] = {
                "roleId": role.id,
                **_changes(list(role.permissions), granted),
            }
            role.permissions = list(granted)
            role.description = description
            role.updated_at = utcnow()
            session.add(role)
            await session.flush()
            await ensure_managers_remain(session, before_holders)
            audit(batch, "role.reset", actor, target=role.name, details=details)
        return role

    async def delete_role(self, ref: str, *, actor: Caller | None) -> None:
        """Delete a custom role that no user holds."""
        async with self.audit.atomic() as batch:
            session = batch.session
            role = await _target_role(session, ref, actor, "delete")
            if role.is_builtin:
                raise Conflict("Cannot delete built-in role", code="builtin_role")
            count = (
                await session.exec(select(func.count()).where(col(User.role_id) == role.id))
            ).one()
            if count:
                raise Conflict(
                    f"Cannot delete role: {count} user(s) still assigned to it", code="role_in_use"
                )
            details: dict[str, Any] = {"roleId": role.id}
            await self._follow_role(batch, role.name, None, details)
            await session.delete(role)
            try:
                await session.flush()
            except IntegrityError:
                raise Conflict(
                    "Cannot delete role: users are assigned to it", code="role_in_use"
                ) from None
            audit(batch, "role.deleted", actor, target=role.name, details=details)
