"""``/roles``: built-in and custom roles (``roles.manage``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from ..db.models.identity import Role
from ..guards import app_kernel, current_caller, requires
from ..openapi import Success, answers
from ..timefmt import iso
from .fields import Name, Permission

blueprint = Blueprint("roles", __name__)

MANAGE = "roles.manage"


class CreateRoleBody(BaseModel):
    """A custom role."""

    model_config = ConfigDict(extra="forbid")
    name: Name
    description: str = Field(default="", max_length=1000)
    permissions: list[Permission] = Field(default_factory=list, max_length=1000)


class UpdateRoleBody(BaseModel):
    """Any subset of name, description, permissions."""

    model_config = ConfigDict(extra="forbid")
    name: Name | None = None
    description: str | None = Field(default=None, max_length=1000)
    permissions: list[Permission] | None = Field(default=None, max_length=1000)


class RoleRecord(TypedDict):
    """A role and its permissions."""

    id: str
    name: str
    description: str
    isBuiltin: bool
    permissions: list[str]
    createdAt: str
    updatedAt: str


def role_json(role: Role) -> RoleRecord:
    """The spec's role object."""
    return {
        "id": role.id,
        "name": role.name,
        "description": role.description,
        "isBuiltin": role.is_builtin,
        "permissions": list(role.permissions),
        "createdAt": iso(role.created_at),
        "updatedAt": iso(role.updated_at),
    }


class RoleList(TypedDict):
    """Built-in roles first, then custom roles by name."""

    roles: list[RoleRecord]


class PermissionGroups(TypedDict):
    """Every permission name, by group, and what each allows."""

    permissionGroups: dict[str, list[str]]
    descriptions: dict[str, str]


@blueprint.get("/roles")
@requires(MANAGE)
@answers(RoleList)
@tag(["roles"])
async def list_roles() -> dict[str, Any]:
    """Built-in roles first, then custom roles by name."""
    return {"roles": [role_json(r) for r in await app_kernel().roles.list_roles()]}


@blueprint.get("/roles/permissions")
@requires(MANAGE)
@answers(PermissionGroups)
@tag(["roles"])
async def permission_groups() -> dict[str, Any]:
    """Every permission name, by group (packs add theirs), and what each allows."""
    kernel = app_kernel()
    return {
        "permissionGroups": kernel.permission_groups,
        "descriptions": kernel.permission_descriptions,
    }


@blueprint.post("/roles")
@requires(MANAGE)
@validate_request(CreateRoleBody)
@answers(RoleRecord, status=201, errors=(409,))
@tag(["roles"])
async def create_role(data: CreateRoleBody) -> tuple[dict[str, Any], int]:
    """Create a custom role (201)."""
    role = await app_kernel().roles.create_role(
        name=data.name,
        description=data.description,
        permissions=data.permissions,
        actor=current_caller(),
    )
    return dict(role_json(role)), 201


@blueprint.put("/roles/<role_id>")
@requires(MANAGE)
@validate_request(UpdateRoleBody)
@answers(RoleRecord, errors=(409,))
@tag(["roles"])
async def update_role(role_id: str, data: UpdateRoleBody) -> dict[str, Any]:
    """Change a role; built-in roles keep their name and description."""
    changes = {k: v for k, v in data.model_dump(exclude_unset=True).items() if v is not None}
    role = await app_kernel().roles.update_role(role_id, changes, actor=current_caller())
    return dict(role_json(role))


@blueprint.post("/roles/<role_id>/reset")
@requires(MANAGE)
@answers(RoleRecord, errors=(409,))
@tag(["roles"])
async def reset_role(role_id: str) -> dict[str, Any]:
    """Restore a built-in role's default permissions."""
    return dict(role_json(await app_kernel().roles.reset_role(role_id, actor=current_caller())))


@blueprint.delete("/roles/<role_id>")
@requires(MANAGE)
@answers(Success, errors=(409,))
@tag(["roles"])
async def delete_role(role_id: str) -> Success:
    """Delete a custom role no user holds."""
    await app_kernel().roles.delete_role(role_id, actor=current_caller())
    return {"success": True}
