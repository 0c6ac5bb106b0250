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
from ..services.identity.invites import DEFAULT_HOURS, MAX_HOURS, InviteState, NewInvite
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
    mustChangePassword: bool = False


class InviteUserBody(BaseModel):
    """A new local user who sets their own password through a single-use link."""

    model_config = ConfigDict(extra="forbid")
    username: Username
    displayName: DisplayName | Literal[""] = ""
    email: Email | None = ""
    role: str = Field(default=USER_ROLE, min_length=1, max_length=200)
    expiresInHours: float = Field(default=DEFAULT_HOURS, ge=1, le=MAX_HOURS)


class RenewInviteBody(BaseModel):
    """How long the new link lasts."""

    model_config = ConfigDict(extra="forbid")
    expiresInHours: float = Field(default=DEFAULT_HOURS, ge=1, le=MAX_HOURS)


class UpdateUserBody(BaseModel):
    """Any subset of displayName, email, role."""

    model_config = ConfigDict(extra="forbid")
    displayName: DisplayName | None = None
    email: Email | None = None
    role: str | None = Field(default=None, min_length=1, max_length=200)


class ResetPasswordBody(BaseModel):
    """The new password (at least 8 characters); the user may have to change it first."""

    model_config = ConfigDict(extra="forbid")
    newPassword: NewPassword
    mustChangePassword: bool = False


class OpenInvite(TypedDict):
    """A user's invite link that is not used or revoked (``expired`` once past ``expiresAt``)."""

    expiresAt: str
    expired: bool


class InviteLink(TypedDict):
    """An invite link, shown this once: the browser app's ``path`` with its secret."""

    path: str
    expiresAt: str


class InvitedUser(TypedDict):
    """The user just invited and their link."""

    user: UserRecord
    invite: InviteLink


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
    mustChangePassword: bool
    createdAt: NotRequired[str]
    mfaEnabled: NotRequired[bool]
    mfaMethod: NotRequired[Literal["totp"] | None]
    invite: NotRequired[OpenInvite | None]


def user_json(
    entry: UserWithRole, *, full: bool = True, invite: InviteState | None = None
) -> UserRecord:
    """A user on the wire (``full`` adds createdAt, the MFA fields and the open invite)."""
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
        "mustChangePassword": bool(user.must_change_password),
    }
    if full:
        record["createdAt"] = iso(user.created_at)
        record["mfaEnabled"] = bool(user.mfa_enabled)
        record["mfaMethod"] = "totp" if user.mfa_enabled else None
        record["invite"] = (
            {"expiresAt": iso(invite.expires_at), "expired": invite.expired} if invite else None
        )
    return record


def invite_json(made: NewInvite) -> InviteLink:
    """A new link on the wire."""
    return {"path": made.path, "expiresAt": iso(made.expires_at)}


class UserList(TypedDict):
    """Every user, oldest first."""

    users: list[UserRecord]


@blueprint.get("/users")
@requires(MANAGE)
@answers(UserList)
@tag(["users"])
async def list_users() -> dict[str, Any]:
    """Every user, oldest first."""
    kernel = app_kernel()
    invites = await kernel.invites.open_invites()
    return {
        "users": [
            user_json(entry, invite=invites.get(entry.user.id))
            for entry in await kernel.accounts.list_users()
        ]
    }


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
        must_change_password=data.mustChangePassword,
    )
    return dict(user_json(created, full=False)), 201


@blueprint.post("/users/invite")
@requires(MANAGE)
@validate_request(InviteUserBody)
@answers(InvitedUser, status=201, errors=(404, 409))
@tag(["users"])
async def invite_user(data: InviteUserBody) -> tuple[dict[str, Any], int]:
    """Create a local user without a password and a single-use link to set one (201).

    The link (``invite.path``, the secret in its fragment) is shown this once.
    """
    created, made = await app_kernel().invites.invite_user(
        username=data.username,
        display_name=data.displayName,
        email=data.email or "",
        role=data.role,
        hours=data.expiresInHours,
        actor=current_caller(),
    )
    body: InvitedUser = {"user": user_json(created, full=False), "invite": invite_json(made)}
    return dict(body), 201


@blueprint.post("/users/<user_id>/invite")
@requires(MANAGE)
@validate_request(RenewInviteBody)
@answers(InviteLink, errors=(409,))
@tag(["users"])
async def renew_invite(user_id: str, data: RenewInviteBody) -> InviteLink:
    """A new link for an invited user who has not set a password; earlier links end.

    409 ``already_accepted`` once the user can sign in.
    """
    made = await app_kernel().invites.renew(user_id, data.expiresInHours, actor=current_caller())
    return invite_json(made)


@blueprint.delete("/users/<user_id>/invite")
@requires(MANAGE)
@answers(Success)
@tag(["users"])
async def revoke_invite(user_id: str) -> Success:
    """Withdraw a user's open invite link (404 ``no_invite`` when there is none)."""
    await app_kernel().invites.revoke(user_id, actor=current_caller())
    return {"success": True}


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
    """Set a new password; every session and API token of that user ends (not your own).

    ``mustChangePassword``: the user changes it at the next sign-in, before anything else.
    """
    await app_kernel().accounts.reset_password(
        user_id,
        data.newPassword,
        actor=current_caller(),
        must_change_password=data.mustChangePassword,
    )
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
