"""``/profile``: the caller's own account, SSH preferences, MFA and login sessions."""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from ..db.models.identity import LoginSession as LoginSessionRow
from ..db.models.identity import User
from ..guards import app_kernel, authenticated, current_caller, interactive, onboarding
from ..openapi import Ok, Success, answers
from ..services.identity.accounts import initials
from ..services.identity.identity import Caller
from ..services.identity.onboarding import PendingStep
from ..timefmt import iso
from .fields import WHOLE, DisplayName, Email, NewPassword, Password

blueprint = Blueprint("profile", __name__)

CursorStyle = Literal["block", "bar", "underline"]
FontSize = Annotated[int, Field(ge=6, le=72), WHOLE] | Annotated[float, Field(ge=6, le=72)]
"""A font size in points, whole or not (a whole number stays one)."""


class ProfileBody(BaseModel):
    """Any subset of displayName, email, avatarText; ``""`` clears email and avatarText."""

    model_config = ConfigDict(extra="forbid")
    displayName: DisplayName | None = None
    email: Email | None = None
    avatarText: str | None = Field(default=None, max_length=16)


class PasswordBody(BaseModel):
    """The current password and a new one (at least 8 characters)."""

    model_config = ConfigDict(extra="forbid")
    currentPassword: Password
    newPassword: NewPassword


class SshPrefsBody(BaseModel):
    """Any subset of the terminal preferences; numbers must be numbers."""

    model_config = ConfigDict(extra="forbid", strict=True)
    fontFamily: str | None = Field(default=None, min_length=1, max_length=200)
    fontSize: FontSize | None = None
    cursorStyle: CursorStyle | None = None
    cursorBlink: bool | None = None
    theme: str | None = Field(default=None, min_length=1, max_length=64)
    scrollback: Annotated[int, Field(ge=0, le=1_000_000), WHOLE] | None = None


class CodeBody(BaseModel):
    """A TOTP code."""

    token: str = Field(min_length=1, max_length=32)


class PasswordOnlyBody(BaseModel):
    """The current password."""

    password: Password


class WarningBody(BaseModel):
    """The name of a dismissed warning."""

    warning: str = Field(min_length=1, max_length=100)


class Me(TypedDict):
    """The caller, with live role and permissions."""

    id: str
    username: str
    displayName: str
    role: str
    permissions: list[str]
    dismissedWarnings: list[str]
    pendingStep: Literal["password_change", "mfa_enrollment"] | None


class Profile(Me):
    """The caller's profile; strings are never null."""

    email: str
    avatarText: str
    authProvider: str
    mfaEnabled: bool


def me_json(user: User, caller: Caller) -> Me:
    """``GET /auth/me``'s user."""
    return {
        "id": user.id,
        "username": user.username,
        "displayName": user.display_name,
        "role": caller.role_name,
        "permissions": sorted(caller.permissions),
        "dismissedWarnings": list(user.dismissed_warnings or []),
        # a step to take before anything else (the browser shows its screen first)
        "pendingStep": cast(PendingStep | None, caller.pending),
    }


def profile_json(user: User, caller: Caller) -> Profile:
    """``GET /profile``: strings are never null."""
    return {
        **me_json(user, caller),
        "email": user.email or "",
        "avatarText": user.avatar_text or initials(user.display_name, user.username),
        "authProvider": user.auth_provider,
        "mfaEnabled": bool(user.mfa_enabled),
    }


class SshPrefs(TypedDict):
    """Terminal preferences."""

    fontFamily: str
    fontSize: int | float
    cursorStyle: CursorStyle
    cursorBlink: bool
    theme: str
    scrollback: int


class MfaStatus(TypedDict):
    """Whether TOTP is on."""

    enabled: bool


class MfaSetup(TypedDict):
    """A new TOTP secret, as text, QR code and otpauth URL."""

    secret: str
    qrDataUrl: str
    otpauthUrl: str


class LoginSession(TypedDict):
    """One live login session of the caller."""

    id: str
    browser: str
    os: str
    ipAddress: str
    createdAt: str
    lastUsedAt: str | None
    isCurrent: bool
    method: str


def login_session_json(row: LoginSessionRow, caller: Caller) -> LoginSession:
    """One of the caller's login sessions on the wire."""
    return {
        "id": row.id,
        "browser": row.browser or "Unknown",
        "os": row.os or "Unknown",
        "ipAddress": row.ip_address or "Unknown",
        "createdAt": iso(row.created_at),
        "lastUsedAt": iso(row.last_used_at),
        "isCurrent": row.id == caller.login_session_id,
        "method": row.method,
    }


class LoginSessions(TypedDict):
    """The caller's live login sessions."""

    sessions: list[LoginSession]


@blueprint.get("/profile")
@authenticated
@tag(["profile"])
@answers(Profile)
async def get_profile() -> dict[str, Any]:
    """The caller's profile."""
    caller = current_caller()
    return dict(profile_json(await app_kernel().profiles.current_user(caller), caller))


@blueprint.put("/profile")
@authenticated
@validate_request(ProfileBody)
@tag(["profile"])
@answers(Success)
async def update_profile(data: ProfileBody) -> Success:
    """Change display name, e-mail, avatar text."""
    changes = {k: v for k, v in data.model_dump(exclude_unset=True).items() if v is not None}
    await app_kernel().profiles.update_profile(current_caller(), changes)
    return {"success": True}


@blueprint.put("/profile/password")
@onboarding
@interactive
@validate_request(PasswordBody)
@tag(["profile"])
@answers(Success, errors=(429,))
async def change_password(data: PasswordBody) -> Success:
    """Change the password; other sessions end."""
    await app_kernel().profiles.change_password(
        current_caller(), data.currentPassword, data.newPassword
    )
    return {"success": True}


@blueprint.get("/profile/ssh-prefs")
@authenticated
@tag(["profile"])
@answers(SshPrefs)
async def get_ssh_prefs() -> dict[str, Any]:
    """Terminal preferences: the instance defaults overlaid with the caller's."""
    return await app_kernel().profiles.ssh_prefs(current_caller())


@blueprint.put("/profile/ssh-prefs")
@authenticated
@validate_request(SshPrefsBody)
@tag(["profile"])
@answers(Ok)
async def put_ssh_prefs(data: SshPrefsBody) -> Ok:
    """Store some preferences (the rest keep their values)."""
    changes = {k: v for k, v in data.model_dump(exclude_unset=True).items() if v is not None}
    await app_kernel().profiles.update_ssh_prefs(current_caller(), changes)
    return {"ok": True}


@blueprint.delete("/profile/ssh-prefs")
@authenticated
@tag(["profile"])
@answers(Ok)
async def delete_ssh_prefs() -> Ok:
    """Back to the instance defaults."""
    await app_kernel().profiles.update_ssh_prefs(current_caller(), None)
    return {"ok": True}


@blueprint.get("/profile/mfa/status")
@onboarding
@authenticated
@tag(["profile"])
@answers(MfaStatus)
async def mfa_status() -> dict[str, Any]:
    """Whether TOTP is on."""
    return {"enabled": await app_kernel().profiles.mfa_enabled(current_caller())}


@blueprint.post("/profile/mfa/setup")
@onboarding
@interactive
@tag(["profile"])
@answers(MfaSetup, errors=(409,))
async def mfa_setup() -> dict[str, Any]:
    """A new TOTP secret and its QR code (enabled once verified)."""
    enrolment = await app_kernel().profiles.mfa_setup(current_caller())
    return {
        "secret": enrolment.secret,
        "qrDataUrl": enrolment.qr_data_url,
        "otpauthUrl": enrolment.otpauth_url,
    }


@blueprint.post("/profile/mfa/verify")
@onboarding
@interactive
@validate_request(CodeBody)
@tag(["profile"])
@answers(Ok, errors=(409, 429))
async def mfa_verify(data: CodeBody) -> Ok:
    """Enable TOTP with a code from the authenticator app."""
    await app_kernel().profiles.mfa_verify(current_caller(), data.token)
    return {"ok": True}


@blueprint.post("/profile/mfa/disable")
@interactive
@validate_request(PasswordOnlyBody)
@tag(["profile"])
@answers(Ok, errors=(429,))
async def mfa_disable(data: PasswordOnlyBody) -> Ok:
    """Turn TOTP off (needs the current password)."""
    await app_kernel().profiles.mfa_disable(current_caller(), data.password)
    return {"ok": True}


@blueprint.post("/profile/dismiss-warning")
@authenticated
@validate_request(WarningBody)
@tag(["profile"])
@answers(Ok)
async def dismiss_warning(data: WarningBody) -> Ok:
    """Remember that a warning was dismissed."""
    await app_kernel().profiles.dismiss_warning(current_caller(), data.warning)
    return {"ok": True}


@blueprint.get("/profile/login-sessions")
@authenticated
@tag(["profile"])
@answers(LoginSessions)
async def list_login_sessions() -> dict[str, Any]:
    """The caller's live login sessions."""
    caller = current_caller()
    rows = await app_kernel().profiles.login_sessions(caller)
    return {"sessions": [login_session_json(row, caller) for row in rows]}


@blueprint.delete("/profile/login-sessions/<session_id>")
@interactive
@tag(["profile"])
@answers(Ok)
async def revoke_login_session(session_id: str) -> Ok:
    """End one of the caller's sessions (the current one too)."""
    await app_kernel().profiles.revoke_login_session(current_caller(), session_id)
    return {"ok": True}


@blueprint.delete("/profile/login-sessions")
@interactive
@tag(["profile"])
@answers(Ok)
async def revoke_other_sessions() -> Ok:
    """End every session but the current one."""
    await app_kernel().profiles.revoke_other_sessions(current_caller())
    return {"ok": True}
