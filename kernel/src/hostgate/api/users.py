"""``/users``: user administration (``users.manage``)."""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from ..guards import app_kernel, current_caller, requires
from ..openapi import Success, answers
from ..permissions import USER_ROLE
from ..services.identity.accounts import UserWithRole, locked_until
from ..timefmt import iso
from .fields import DisplayName, Email, NewPassword, Username

blueprint = Blueprint("users", __name__)

MANAGE = "users.manage"


class CreateUserBody(BaseModel):
    """A new local user; ``role`` is a role name or id (default ``user``)."""

    model_config = ConfigDict(extra="forbid")
    username: Username
    password: NewPassword
    displayName: DisplayName | Literal[""] = ""
    email: Email | None = ""
    role: str = Field(default=USER_ROLE, min_length=1, max_length=200)


class UpdateUserBody(BaseModel):
    """Any subset of displayName, email, role."""

    model_config = ConfigDict(extra="forbid")
    displayName: DisplayName | None = None
    email: Email | None = None
    role: str | None = Field(default=None, min_length=1, max_length=200)


class ResetPasswordBody(BaseModel):
    """The new password (at least 8 characters)."""

    model_config = ConfigDict(extra="forbid")
    newPassword: NewPassword


class UserRecord(TypedDict):
    """A user as administrators see it."""

    id: str
    username: str
    displayName: str
    email: str
    role: str
    failedLoginCount: int
    lockedUntil: str | None
    lastLoginAt: str | None
    authProvider: str
    suspended: bool
    createdAt: NotRequired[str]
    mfaEnabled: NotRequired[bool]
    mfaMethod: NotRequired[Literal["totp"] | None]


def user_json(entry: UserWithRole, *, full: bool = True) -> UserRecord:
    """A user on the wire (``full`` adds createdAt and the MFA fields)."""
    user = entry.user
    record: UserRecord = {
        "id": user.id,
        "username": user.username,
        "displayName": user.display_name,
        "email": user.email or "",
        "role": entry.role,
        "failedLoginCount": user.failed_login_count,
        "lockedUntil": iso(locked_until(user)),
        "lastLoginAt": iso(user.last_login_at),
        "authProvider": user.auth_provider,
        "suspended": bool(user.suspended),
    }
    if full:
        record["createdAt"] = iso(user.created_at)
        record["mfaEnabled"] = bool(user.mfa_enabled)
        record["mfaMethod"] = "totp" if user.mfa_enabled else None
    return record


class UserList(TypedDict):
    """Every user, oldest first."""

    users: list[UserRecord]


@blueprint.get("/users")
@requires(MANAGE)
@answers(UserList)
@tag(["users"])
async def list_users() -> dict[str, Any]:
    """Every user, oldest first."""
    return {"users": [user_json(entry) for entry in await app_kernel().accounts.list_users()]}


@blueprint.post("/users")
@requires(MANAGE)
@validate_request(CreateUserBody)
@answers(UserRecord, status=201, errors=(404, 409))
@tag(["users"])
async def create_user(data: CreateUserBody) -> tuple[dict[str, Any], int]:
    """Create a local user (201)."""
    created = await app_kernel().accounts.create_user(
        username=data.username,
        password=data.password,
        display_name=data.displayName,
        email=data.email or "",
        role=data.role,
        actor=current_caller(),
    )
    return dict(user_json(created, full=False)), 201


@blueprint.put("/users/<user_id>")
@requires(MANAGE)
@validate_request(UpdateUserBody)
@answers(Success, errors=(409,))
@tag(["users"])
async def update_user(user_id: str, data: UpdateUserBody) -> Success:
    """Change display name, e-mail and/or role."""
    changes = {k: v for k, v in data.model_dump(exclude_unset=True).items()}
    if changes.get("email") is None and "email" in changes:
        changes["email"] = ""
    if "displayName" in changes and changes["displayName"] is None:
        changes.pop("displayName")
    if "role" in changes and changes["role"] is None:
        changes.pop("role")
    await app_kernel().accounts.update_user(user_id, changes, actor=current_caller())
    return {"success": True}


@blueprint.delete("/users/<user_id>")
@requires(MANAGE)
@answers(Success, errors=(409,))
@tag(["users"])
async def delete_user(user_id: str) -> Success:
    """Delete a user (not yourself, not the last manager)."""
    await app_kernel().accounts.delete_user(user_id, actor=current_caller())
    return {"success": True}


@blueprint.post("/users/<user_id>/reset-password")
@requires(MANAGE)
@validate_request(ResetPasswordBody)
@answers(Success)
@tag(["users"])
async def reset_password(user_id: str, data: ResetPasswordBody) -> Success:
    """Set a new password; every session and API token of that user ends (not your own)."""
    await app_kernel().accounts.reset_password(user_id, data.newPassword, actor=current_caller())
    return {"success": True}


@blueprint.post("/users/<user_id>/unlock")
@requires(MANAGE)
@answers(Success)
@tag(["users"])
async def unlock_user(user_id: str) -> Success:
    """Lift a lockout and reset the failure count."""
    await app_kernel().accounts.unlock_user(user_id, actor=current_caller())
    return {"success": True}


@blueprint.post("/users/<user_id>/suspend")
@requires(MANAGE)
@answers(Success, errors=(409,))
@tag(["users"])
async def suspend_user(user_id: str) -> Success:
    """Suspend: no sign-in by any method; every session, API token and socket of the user ends.

    Not yourself (403 ``cannot_suspend_self``), not the last administrator who could
    sign in (409 ``would_lock_out``). Suspending a suspended user changes nothing.
    """
    await app_kernel().accounts.set_suspended(user_id, True, actor=current_caller())
    return {"success": True}


@blueprint.post("/users/<user_id>/resume")
@requires(MANAGE)
@answers(Success)
@tag(["users"])
async def resume_user(user_id: str) -> Success:
    """Lift a suspension: the user can sign in again (revoked API tokens stay revoked)."""
    await app_kernel().accounts.set_suspended(user_id, False, actor=current_caller())
    return {"success": True}
