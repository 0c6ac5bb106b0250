"""Steps a signed-in user takes before anything else: a new password, two-step set-up.

An administrator may set a user's password with "must change at first sign-in", and
the instance may require two-step verification for everyone or for chosen roles
(``security.require_mfa``, ``security.require_mfa_roles``). Until the step is done,
the user's session answers only the routes that do it (``guards.onboarding``); every
other call gets 403 with the step's code. Doors that cannot walk a person through the
step (the SSH front door) refuse the sign-in with a message pointing to the browser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ...errors import PermissionDenied

if TYPE_CHECKING:
    from ..settings import Settings

PASSWORD_CHANGE = "password_change"
MFA_ENROLLMENT = "mfa_enrollment"
PendingStep = Literal["password_change", "mfa_enrollment"]

CODES: dict[str, str] = {
    PASSWORD_CHANGE: "password_change_required",
    MFA_ENROLLMENT: "mfa_enrollment_required",
}
_API_MESSAGES: dict[str, str] = {
    PASSWORD_CHANGE: "Change your password first (PUT /profile/password)",
    MFA_ENROLLMENT: "Set up two-step verification first "
    "(POST /profile/mfa/setup, then POST /profile/mfa/verify)",
}
_DOOR_MESSAGES: dict[str, str] = {
    PASSWORD_CHANGE: "This account must change its password first: sign in to the "
    "hostgate browser app, then connect again",
    MFA_ENROLLMENT: "This account must set up two-step verification first: sign in to "
    "the hostgate browser app, then connect again",
}


MFA_ROLES = "security.require_mfa_roles"


def role_list(text: str) -> frozenset[str]:
    """The role names of ``security.require_mfa_roles`` (comma-separated, case-insensitive)."""
    return frozenset(part.strip().lower() for part in text.split(",") if part.strip())


def role_names(text: str) -> list[str]:
    """The role names of ``security.require_mfa_roles`` as written, in order."""
    return [part.strip() for part in text.split(",") if part.strip()]


def role_renamed(text: str, old: str, new: str | None) -> str | None:
    """``security.require_mfa_roles`` after role ``old`` became ``new`` (None: deleted).

    None when the list does not name ``old`` (nothing to change).
    """
    names = role_names(text)
    if old.lower() not in {name.lower() for name in names}:
        return None
    kept = [name for name in names if name.lower() != old.lower()]
    if new is not None:
        kept.append(new)
    return ", ".join(kept)


def mfa_required(settings: Settings, role_name: str) -> bool:
    """True when the instance requires two-step verification of this role."""
    mode = settings.get("security.require_mfa")
    if mode == "everyone":
        return True
    if mode == "roles":
        return role_name.lower() in role_list(str(settings.get("security.require_mfa_roles")))
    return False


def pending_step(
    settings: Settings, *, must_change_password: bool, mfa_enabled: bool, role_name: str
) -> PendingStep | None:
    """The step a user must take before anything else, or None (password first)."""
    if must_change_password:
        return "password_change"
    if not mfa_enabled and mfa_required(settings, role_name):
        return "mfa_enrollment"
    return None


def pending_error(step: str, *, door: bool = False) -> PermissionDenied:
    """The 403 for a call made before the step is done (``door``: the browser's pointer)."""
    messages = _DOOR_MESSAGES if door else _API_MESSAGES
    return PermissionDenied(messages[step], code=CODES[step])
