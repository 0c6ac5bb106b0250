"""The caller's own account: profile, password, SSH preferences, MFA, login sessions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlmodel import col, select

from ...db.models.identity import LoginSession, User
from ...errors import Conflict, InvalidInput, NotAuthenticated, NotFound
from ...security.passwords import hash_password, verify_password
from ...security.ratelimit import MFA_PER_USER, PASSWORD_CHECK_PER_USER
from ...timefmt import as_utc, utcnow
from . import mfa
from .accounts import check_display_name, check_email, check_password

if TYPE_CHECKING:
    from ...db.engine import Database
    from ...db.readcache import ReadCache
    from ...security.ratelimit import RateLimiter
    from ...security.secretbox import SecretBox
    from ..audit.audit import AuditLog
    from ..settings import Settings
    from .identity import Caller, Identity
    from .logins import Logins

PASSWORD_BUCKET = "password_check"
MFA_VERIFY_BUCKET = "mfa_verify"
AVATAR_MAX = 16
WARNING_MAX = 100
MAX_WARNINGS = 200

SSH_PREF_SETTINGS = {
    "fontFamily": "ssh.font_family",
    "fontSize": "ssh.font_size",
    "cursorStyle": "ssh.cursor_style",
    "cursorBlink": "ssh.cursor_blink",
    "theme": "ssh.theme",
    "scrollback": "ssh.scrollback",
}


# -- SSH preferences -----------------------------------------------------------


# -- warnings ----------------------------------------------------------------------


# -- MFA -------------------------------------------------------------------------


# -- login sessions ------------------------------------------------------------------


@dataclass(frozen=True)
class MfaEnrolment:
    """A started TOTP set-up: the secret, its ``otpauth://`` URL and that URL as a QR code."""

    secret: str
    otpauth_url: str
    qr_data_url: str


class Profiles:
    """What users change about themselves.

    Profile, password, MFA, terminal preferences and their login sessions.
    """

    def __init__(
        self,
        *,
        audit: AuditLog,
        db: Database,
        identity: Identity,
        limits: RateLimiter,
        logins: Logins,
        readcache: ReadCache,
        secrets: SecretBox,
        settings: Settings,
    ) -> None:
        self.audit = audit
        self.db = db
        self.identity = identity
        self.limits = limits
        self.logins = logins
        self.readcache = readcache
        self.secrets = secrets
        self.settings = settings

    async def _user(self, caller: Caller) -> User:
        """The caller's user row (from the read cache: read-only)."""

        async def load() -> User | None:
            async with self.db.session() as session:
                return await session.get(User, caller.user_id)

        user = await self.readcache.get(("user", caller.user_id), load)
        if user is None:
            raise NotAuthenticated("Session has been revoked", code="session_revoked")
        return user

    async def current_user(self, caller: Caller) -> User:
        """The caller's user row (cached until the database changes); 401 when it is gone."""
        return await self._user(caller)

    async def update_profile(self, caller: Caller, changes: Mapping[str, Any]) -> None:
        """Change displayName, email, avatarText (``""`` clears email and avatarText)."""
        async with self.audit.atomic() as batch:
            user = await batch.session.get(User, caller.user_id)
            if user is None:
                raise NotAuthenticated("Session has been revoked", code="session_revoked")
            before: dict[str, Any] = {}
            after: dict[str, Any] = {}
            if "displayName" in changes:
                value = check_display_name(changes["displayName"])
                if value != user.display_name:
                    before["displayName"], after["displayName"] = user.display_name, value
                    user.display_name = value
            if "email" in changes:
                value = check_email(changes["email"])
                if value != user.email:
                    before["email"], after["email"] = user.email, value
                    user.email = value
            if "avatarText" in changes:
                value = changes["avatarText"].strip()
                if len(value) > AVATAR_MAX:
                    raise InvalidInput(f"avatarText must be at most {AVATAR_MAX} characters")
                if value != user.avatar_text:
                    before["avatarText"], after["avatarText"] = user.avatar_text, value
                    user.avatar_text = value
            if not after:
                return
            user.updated_at = utcnow()
            batch.session.add(user)
            batch.record(
                "profile.updated",
                actor=caller,
                target=caller.username,
                details={"before": before, "after": after},
            )

    async def check_own_password(self, user: User, password: str, message: str) -> None:
        """Verify the caller's password, limited to 10 checks per 15 minutes (400 if wrong)."""
        await self.limits.hit(
            PASSWORD_BUCKET,
            user.id,
            PASSWORD_CHECK_PER_USER,
            "Too many password attempts. Please try again later.",
        )
        if not await verify_password(user.password_hash, password):
            raise InvalidInput(message, code="wrong_password")
        await self.limits.reset(PASSWORD_BUCKET, user.id)

    async def change_password(self, caller: Caller, current: str, new: str) -> None:
        """Change the caller's password; every other login session ends."""
        user = await self._user(caller)
        await check_password(new, "newPassword", user_inputs=(user.username, user.display_name))
        await self.check_own_password(user, current, "Current password is incorrect")
        if user.must_change_password and new == current:
            raise InvalidInput(
                "newPassword must differ from the password you were given", code="same_password"
            )
        password_hash = await hash_password(new)
        async with self.audit.atomic() as batch:
            row = await batch.session.get(User, user.id)
            if row is None:
                raise NotAuthenticated("Session has been revoked", code="session_revoked")
            row.password_hash = password_hash
            row.must_change_password = False  # the step an administrator asked for is done
            row.updated_at = utcnow()
            batch.session.add(row)
            batch.record("auth.password_changed", actor=caller, target=caller.username)
        await self.identity.revoke_sessions(
            user.id, reason="password_changed", keep=caller.login_session_id
        )

    def ssh_defaults(self) -> dict[str, Any]:
        """The instance's terminal defaults from the ``ssh.*`` settings."""
        return {name: self.settings.get(key) for name, key in SSH_PREF_SETTINGS.items()}

    async def ssh_prefs(self, caller: Caller) -> dict[str, Any]:
        """Global defaults overlaid with the caller's own choices."""
        user = await self._user(caller)
        stored = {k: v for k, v in (user.ssh_prefs or {}).items() if k in SSH_PREF_SETTINGS}
        return {**self.ssh_defaults(), **stored}

    async def update_ssh_prefs(self, caller: Caller, changes: Mapping[str, Any] | None) -> None:
        """Merge validated preferences into the caller's (``None`` clears them all)."""
        async with self.db.session() as session:
            user = await session.get(User, caller.user_id)
            if user is None:
                raise NotAuthenticated("Session has been revoked", code="session_revoked")
            user.ssh_prefs = {} if changes is None else {**(user.ssh_prefs or {}), **changes}
            session.add(user)
            await session.commit()

    async def dismiss_warning(self, caller: Caller, warning: str) -> None:
        """Remember a dismissed warning (once)."""
        warning = warning.strip()
        if not warning or len(warning) > WARNING_MAX:
            raise InvalidInput(f"warning must be 1-{WARNING_MAX} characters")
        async with self.db.session() as session:
            user = await session.get(User, caller.user_id)
            if user is None:
                raise NotAuthenticated("Session has been revoked", code="session_revoked")
            current = list(user.dismissed_warnings or [])
            if warning in current:
                return
            if len(current) >= MAX_WARNINGS:
                raise InvalidInput("too many dismissed warnings")
            user.dismissed_warnings = [*current, warning]
            session.add(user)
            await session.commit()

    async def mfa_enabled(self, caller: Caller) -> bool:
        """Whether the caller has TOTP on."""
        user = await self._user(caller)
        return bool(user.mfa_enabled and user.mfa_secret)

    async def mfa_setup(self, caller: Caller) -> MfaEnrolment:
        """A new pending secret, its QR code and ``otpauth://`` URL; enabled by ``mfa_verify``."""
        secret = mfa.new_secret()
        async with self.db.session() as session:
            user = await session.get(User, caller.user_id)
            if user is None:
                raise NotAuthenticated("Session has been revoked", code="session_revoked")
            if user.mfa_enabled:
                raise Conflict("MFA is already enabled; disable it first", code="mfa_enabled")
            user.mfa_pending_secret = self.secrets.seal(secret)
            user.mfa_last_step = None
            session.add(user)
            await session.commit()
        issuer = str(self.settings.get("app.name") or "hostgate")
        uri = mfa.provisioning_uri(secret, user.username, issuer)
        return MfaEnrolment(secret=secret, otpauth_url=uri, qr_data_url=mfa.qr_data_url(uri))

    async def mfa_verify(self, caller: Caller, code: str) -> None:
        """Enable MFA with a valid code for the pending secret (5 tries per 5 minutes)."""
        await self.limits.hit(
            MFA_VERIFY_BUCKET,
            caller.user_id,
            MFA_PER_USER,
            "Too many attempts. Please wait before trying again.",
        )
        user = await self._user(caller)
        if user.mfa_enabled:
            raise Conflict("MFA is already enabled", code="mfa_enabled")
        if not user.mfa_pending_secret:
            raise Conflict("Start MFA setup first", code="mfa_not_started")
        secret = self.secrets.open(user.mfa_pending_secret)
        if not await mfa.accept_code(self.db, user.id, secret, code):
            raise InvalidInput("Invalid verification code", code="invalid_code")
        async with self.audit.atomic() as batch:
            row = await batch.session.get(User, user.id)
            if row is None:
                raise NotAuthenticated("Session has been revoked", code="session_revoked")
            row.mfa_secret = row.mfa_pending_secret
            row.mfa_pending_secret = None
            row.mfa_enabled = True
            row.updated_at = utcnow()
            batch.session.add(row)
            batch.record("auth.mfa_enabled", actor=caller, target=caller.username)
        await self.limits.reset(MFA_VERIFY_BUCKET, caller.user_id)

    async def mfa_disable(self, caller: Caller, password: str) -> None:
        """Turn MFA off (needs the current password); trusted devices are forgotten."""
        user = await self._user(caller)
        await self.check_own_password(user, password, "Incorrect password")
        async with self.audit.atomic() as batch:
            row = await batch.session.get(User, user.id)
            if row is None:
                raise NotAuthenticated("Session has been revoked", code="session_revoked")
            was_enabled = row.mfa_enabled
            row.mfa_enabled = False
            row.mfa_secret = None
            row.mfa_pending_secret = None
            row.mfa_last_step = None
            row.updated_at = utcnow()
            batch.session.add(row)
            if was_enabled:
                batch.record("auth.mfa_disabled", actor=caller, target=caller.username)
        await self.logins.forget_devices(user.id)

    async def login_sessions(self, caller: Caller) -> list[LoginSession]:
        """The caller's live login sessions, most recently used first."""
        now = utcnow()
        idle = int(self.settings.get("security.idle_timeout_minutes") or 0)
        query = (
            select(LoginSession)
            .where(
                col(LoginSession.user_id) == caller.user_id,
                col(LoginSession.revoked_at).is_(None),
                col(LoginSession.expires_at) > now,
            )
            .order_by(col(LoginSession.last_used_at).desc())
        )
        async with self.db.session() as session:
            rows = (await session.exec(query)).all()
        return [
            row
            for row in rows
            if idle <= 0 or now - as_utc(row.last_used_at) <= timedelta(minutes=idle)
        ]

    async def logout(self, caller: Caller) -> None:
        """End the caller's current login session (its sockets close after the commit)."""
        session_id = caller.login_session_id
        revoked = False
        async with self.audit.atomic() as batch:
            if session_id:
                revoked = await self.identity.mark_session_revoked(
                    batch.session, session_id, user_id=caller.user_id, reason="logout"
                )
            batch.record("auth.logout", actor=caller, target=caller.username)
        if revoked and session_id:
            await self.identity.close_sessions([session_id], "logout")

    async def revoke_login_session(self, caller: Caller, login_session_id: str) -> None:
        """End one of the caller's sessions; another user's id, or an unknown one, is a 404."""
        identity = self.identity
        async with self.audit.atomic() as batch:
            revoked = await identity.mark_session_revoked(
                batch.session, login_session_id, user_id=caller.user_id, reason="revoked"
            )
            if not revoked:
                raise NotFound("No such login session", code="login_session_not_found")
            batch.record(
                "auth.session_revoked",
                actor=caller,
                target=caller.username,
                details={"loginSessionId": login_session_id},
            )
        await identity.close_sessions([login_session_id], "revoked")

    async def revoke_other_sessions(self, caller: Caller) -> int:
        """End every session of the caller but the current one."""
        identity = self.identity
        async with self.audit.atomic() as batch:
            revoked = await identity.mark_sessions_revoked(
                batch.session, caller.user_id, reason="revoked", keep=caller.login_session_id
            )
            if revoked:
                batch.record(
                    "auth.session_revoked",
                    actor=caller,
                    target=caller.username,
                    details={"count": len(revoked)},
                )
        await identity.close_sessions(revoked, "revoked")
        return len(revoked)
