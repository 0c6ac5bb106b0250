"""User administration: first-admin setup, create, update, delete, reset, unlock, suspend.

The API (``/users``, ``/auth/setup``) and the recovery CLI (``hostgate user``,
``hostgate setup``) both call these functions, so the rules hold everywhere:
a caller cannot delete themselves, the instance never loses its last user
able to manage users or roles, and an API caller neither grants a role above
their own nor acts on a user who outranks them (``privileges``).
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, delete, select
from sqlmodel.ext.asyncio.session import AsyncSession

from ...closereasons import CloseReason
from ...db.models.identity import Role, User
from ...db.models.settings import SystemValue
from ...errors import Conflict, InvalidInput, NotFound, PermissionDenied
from ...permissions import ADMIN_ROLE, USER_ROLE
from ...security.passwords import (
    MAX_PASSWORD_LENGTH,
    MIN_PASSWORD_LENGTH,
    hash_password,
    too_guessable,
)
from ...timefmt import as_utc, utcnow
from ..sessions.live_sessions import USER_DELETED
from .api_tokens import session_key
from .privileges import check_grant, check_target
from .usernames import check_new_username, lookup_keys, username_key

if TYPE_CHECKING:
    from ...db.engine import Database
    from ..audit.audit import AuditBatch, AuditLog
    from ..sessions.live_sessions import LiveSessions
    from .identity import Caller, ClientInfo, Identity
    from .logins import Logins
    from .signin_guard import SignInGuard

SETUP_GUARD = "setup_complete"
MANAGE_PERMISSIONS = ("users.manage", "roles.manage")
NAME_MAX = 200
EMAIL_MAX = 320
USERNAME_PATTERN = r"^[^\s\x00-\x1f\x7f]{1,200}$"
"""A local username: 1-200 characters, no spaces or control characters."""
EMAIL_PATTERN = r"^[^@\s\x00-\x1f\x7f]+@[^@\s\x00-\x1f\x7f]+$"
"""An e-mail address: something@somewhere, no spaces or control characters."""
NOT_BLANK_PATTERN = r"[^\s\x1c-\x1f]"
"""Holds a character that is not white space (Python's and JSON Schema's alike)."""
_USERNAME = re.compile(USERNAME_PATTERN)
_EMAIL = re.compile(EMAIL_PATTERN)


# -- validation ---------------------------------------------------------------


def check_username(username: str) -> str:
    """A valid new username (1-200 characters, no spaces; see ``usernames``).

    No control, invisible or text-direction characters; letters of one script.
    """
    if not isinstance(username, str) or not _USERNAME.match(username):
        raise InvalidInput("username must be 1-200 characters without spaces")
    return check_new_username(username)


async def check_password(
    password: str, field: str = "password", user_inputs: Iterable[str] = ()
) -> str:
    """A new password: 8 to 1024 characters and not very weak.

    The one rule for every new password (setup, the CLI, users, resets, the profile):
    a common password, a keyboard pattern or the username itself (``user_inputs``)
    is refused, as the browser's strength meter says.
    """
    if not isinstance(password, str) or len(password) < MIN_PASSWORD_LENGTH:
        raise InvalidInput(f"{field} must be at least {MIN_PASSWORD_LENGTH} characters")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise InvalidInput(f"{field} must be at most {MAX_PASSWORD_LENGTH} characters")
    if await asyncio.to_thread(too_guessable, password, user_inputs):  # up to ~0.2 s of CPU
        raise InvalidInput(
            f"{field} is too easy to guess (a common password, a name or a pattern); "
            "a few unrelated words make a strong one",
            code="weak_password",
        )
    return password


def check_email(email: str) -> str:
    """An e-mail address or ``""``."""
    email = email.strip()
    if email and (len(email) > EMAIL_MAX or not _EMAIL.match(email)):
        raise InvalidInput("email must be an e-mail address (or empty)")
    return email


def check_display_name(name: str) -> str:
    """A display name: 1-200 characters, stored verbatim."""
    if not name.strip():
        raise InvalidInput("displayName must not be empty")
    if len(name) > NAME_MAX:
        raise InvalidInput(f"displayName must be at most {NAME_MAX} characters")
    return name


# -- shapes -------------------------------------------------------------------


def initials(display_name: str, username: str) -> str:
    """Up to two initials of the display name (the username's first letters otherwise)."""
    words = [w for w in re.split(r"[\s._-]+", display_name) if w]
    if len(words) >= 2:
        return (words[0][0] + words[1][0]).upper()
    source = words[0] if words else username
    return source[:2].upper()


def locked_until(user: User) -> datetime | None:
    """The end of the user's lock while it lasts, else None."""
    if user.locked_until is None or as_utc(user.locked_until) <= utcnow():
        return None
    return user.locked_until


@dataclass(frozen=True)
class UserWithRole:
    """A user and the name of their role: what administration lists are made of."""

    user: User
    role: str


# -- lookups ------------------------------------------------------------------


async def resolve_role(session: AsyncSession, ref: str) -> Role | None:
    """A role by id or by name (names case-insensitively)."""
    role = await session.get(Role, ref)
    if role is not None:
        return role
    query = select(Role).where(func.lower(Role.name) == ref.strip().lower())
    return (await session.exec(query)).first()


async def _role_or_400(session: AsyncSession, ref: str) -> Role:
    role = await resolve_role(session, ref)
    if role is None:
        raise NotFound(f"Unknown role: {ref}", code="unknown_role")
    return role


async def _user_or_404(session: AsyncSession, user_id: str) -> User:
    user = await session.get(User, user_id)
    if user is None:
        raise NotFound("User not found")
    return user


async def _target_user(
    session: AsyncSession, user_id: str, actor: Caller | None, action: str
) -> User:
    """The user ``action`` is about; 403 when their permissions exceed the actor's."""
    user = await _user_or_404(session, user_id)
    role = await session.get(Role, user.role_id)
    permissions = role.permissions if role is not None else []
    check_target(actor, permissions, action=f"{action} {user.username}")
    return user


target_user = _target_user
"""``_target_user`` for the identity services beside this one (invites)."""


def _check_role_grant(actor: Caller | None, role: Role) -> None:
    check_grant(actor, role.permissions, what=f"the role {role.name!r}")


async def role_names(session: AsyncSession) -> dict[str, str]:
    """``{role id: role name}``."""
    return {r.id: r.name for r in (await session.exec(select(Role))).all()}


# -- the last manager -----------------------------------------------------------


async def lock_roles(session: AsyncSession) -> None:
    """Serialise changes that could remove the last manager (row locks on PostgreSQL)."""
    await session.exec(select(Role.id).with_for_update())


async def manager_holders(session: AsyncSession) -> dict[str, int]:
    """``{permission: number of users whose role holds it}`` for users/roles.manage."""
    counts = (await session.exec(select(User.role_id, func.count()).group_by(User.role_id))).all()
    roles = {r.id: r for r in (await session.exec(select(Role))).all()}
    holders = dict.fromkeys(MANAGE_PERMISSIONS, 0)
    for role_id, count in counts:
        role = roles.get(role_id)
        for permission in MANAGE_PERMISSIONS:
            if role is not None and permission in role.permissions:
                holders[permission] += int(count)
    return holders


async def ensure_managers_remain(session: AsyncSession, before: Mapping[str, int]) -> None:
    """After a flushed change: 409 when it removed the last holder of a manage permission."""
    after = await manager_holders(session)
    for permission in MANAGE_PERMISSIONS:
        if before.get(permission, 0) > 0 and after[permission] == 0:
            raise Conflict(
                f"This would leave no user with {permission}; the instance would lock "
                "itself out. Give another user that permission first.",
                code="last_manager",
            )


# -- audit helper -------------------------------------------------------------


def audit(
    batch: AuditBatch,
    event_type: str,
    actor: Caller | None,
    *,
    target: str = "",
    details: Mapping[str, Any] | None = None,
) -> None:
    """Add an event by an API caller, or by the CLI when ``actor`` is None, to ``batch``.

    The entry is stored by the commit of the ``kernel.audit.atomic()`` block, together
    with the change it records.
    """
    if actor is None:
        batch.record(
            event_type, target=target, details={**(details or {}), "via": "cli"}, username="cli"
        )
    else:
        batch.record(event_type, actor=actor, target=target, details=details)


# -- operations ------------------------------------------------------------------


class Accounts:
    """User accounts: list, create, change, delete, reset passwords, unlock, suspend (audited)."""

    def __init__(
        self,
        *,
        audit: AuditLog,
        db: Database,
        identity: Identity,
        live: LiveSessions,
        logins: Logins,
        signin_guard: SignInGuard,
    ) -> None:
        self.audit = audit
        self.db = db
        self.identity = identity
        self.live = live
        self.logins = logins
        self.signin_guard = signin_guard
        # one suspension at a time on this node: two at once could each leave the other
        # administrator as the way in (the lock-out check of settings changes does the same)
        self._suspensions = asyncio.Lock()

    async def user_by_name(self, username: str) -> User | None:
        """A user by username, case-insensitively (any login provider)."""
        query = select(User).where(col(User.username_key).in_(lookup_keys(username)))
        async with self.db.session() as session:
            return (await session.exec(query)).first()

    async def users_exist(self) -> bool:
        """True once any user exists (``needsSetup`` is the opposite)."""
        async with self.db.session() as session:
            return (await session.exec(select(User.id).limit(1))).first() is not None

    async def list_users(self) -> list[UserWithRole]:
        """Every user, oldest first."""
        async with self.db.session() as session:
            names = await role_names(session)
            users = (
                await session.exec(select(User).order_by(col(User.created_at), col(User.id)))
            ).all()
        return [UserWithRole(u, names.get(u.role_id, "")) for u in users]

    async def create_user(
        self,
        *,
        username: str,
        password: str | None,
        display_name: str = "",
        email: str = "",
        role: str = USER_ROLE,
        actor: Caller | None,
        must_change_password: bool = False,
        then: Callable[[AuditBatch, User], Awaitable[None]] | None = None,
    ) -> UserWithRole:
        """Create a local user.

        ``password`` None: no password yet (an invited user sets their own);
        ``must_change_password``: the user changes it at the first sign-in; ``then`` runs
        in the creation's transaction (an invite stored with the user it invites).
        """
        check_username(username)
        if password is not None:
            await check_password(password, user_inputs=(username, display_name))
        email = check_email(email)
        display_name = check_display_name(display_name) if display_name else username
        password_hash = await hash_password(password) if password is not None else None
        async with self.audit.atomic() as batch:
            session = batch.session
            role_row = await _role_or_400(session, role)
            _check_role_grant(actor, role_row)
            taken = await session.exec(
                select(User.id).where(col(User.username_key).in_(lookup_keys(username)))
            )
            if taken.first() is not None:
                raise Conflict("Username already exists", code="username_taken")
            user = User(
                username=username,
                username_key=username_key(username),
                display_name=display_name,
                email=email,
                password_hash=password_hash,
                role_id=role_row.id,
                must_change_password=must_change_password and password is not None,
            )
            session.add(user)
            try:
                await session.flush()
            except IntegrityError:
                raise Conflict("Username already exists", code="username_taken") from None
            after = {
                "username": user.username,
                "displayName": user.display_name,
                "email": user.email or "",
                "role": role_row.name,
                "mustChangePassword": user.must_change_password,
            }
            audit(batch, "user.created", actor, target=username, details={"after": after})
            if then is not None:
                await then(batch, user)
        return UserWithRole(user, role_row.name)

    async def setup_first_admin(
        self,
        *,
        username: str,
        password: str,
        display_name: str = "",
        client: ClientInfo | None = None,
    ) -> User:
        """Create the first admin while no user exists; 409 otherwise, even when two race.

        A guard row in ``system_values`` is inserted in the same transaction as the
        user, so of two concurrent setups exactly one commits.
        """
        check_username(username)
        await check_password(password, user_inputs=(username, display_name))
        display_name = check_display_name(display_name) if display_name else username
        password_hash = await hash_password(password)
        done = Conflict("Setup already completed", code="setup_completed")
        async with self.audit.atomic() as batch:
            session = batch.session
            if (await session.exec(select(User.id).limit(1))).first() is not None:
                raise done
            stale = await session.get(SystemValue, SETUP_GUARD)
            if stale is not None:
                # No user is left (removed outside the API): setup may run again, but
                # only one of several racing callers may remove the old guard.
                result = await session.exec(
                    delete(SystemValue).where(
                        col(SystemValue.name) == SETUP_GUARD, col(SystemValue.value) == stale.value
                    )
                )
                if result.rowcount != 1:
                    raise done
            role = (await session.exec(select(Role).where(Role.name == ADMIN_ROLE))).one()
            session.add(SystemValue(name=SETUP_GUARD, value=uuid.uuid4().hex))
            user = User(
                username=username,
                username_key=username_key(username),
                display_name=display_name,
                password_hash=password_hash,
                role_id=role.id,
            )
            session.add(user)
            try:
                await session.flush()
                # Inside the write transaction now: a setup that committed meanwhile is seen.
                if (await session.exec(select(func.count()).select_from(User))).one() != 1:
                    raise done
            except IntegrityError:
                raise done from None
            batch.record(
                "user.setup",
                user_id=user.id,
                username=user.username,
                display_name=user.display_name,
                target=user.username,
                details={"role": ADMIN_ROLE} if client else {"role": ADMIN_ROLE, "via": "cli"},
                ip_address=client.ip_address if client else "",
            )
        return user

    async def update_user(
        self, user_id: str, changes: Mapping[str, Any], *, actor: Caller | None
    ) -> None:
        """Change displayName, email and/or role (by name or id).

        A role with no permissions at all ends the user's API tokens (and their
        sockets): an admin takes everything away from an account they no longer trust.
        """
        tokens: list[str] = []
        async with self.audit.atomic() as batch:
            session = batch.session
            await lock_roles(session)
            before_holders = await manager_holders(session)
            user = await _target_user(session, user_id, actor, "change")
            names = await role_names(session)
            before: dict[str, Any] = {}
            after: dict[str, Any] = {}
            if "displayName" in changes and changes["displayName"] != user.display_name:
                value = check_display_name(changes["displayName"])
                before["displayName"], after["displayName"] = user.display_name, value
                user.display_name = value
            if "email" in changes:
                value = check_email(changes["email"])
                if value != user.email:
                    before["email"], after["email"] = user.email, value
                    user.email = value
            if "role" in changes:
                role = await _role_or_400(session, changes["role"])
                if role.id != user.role_id:
                    _check_role_grant(actor, role)
                    before["role"], after["role"] = names.get(user.role_id, ""), role.name
                    user.role_id = role.id
            if not after:
                return
            user.updated_at = utcnow()
            session.add(user)
            await session.flush()
            details: dict[str, Any] = {"before": before, "after": after}
            if "role" in after:
                await ensure_managers_remain(session, before_holders)
                role = await session.get(Role, user.role_id)
                if role is not None and not role.permissions:
                    tokens = await self.identity.mark_tokens_revoked(session, user.id)
                    details["apiTokenIds"] = tokens
            audit(batch, "user.updated", actor, target=user.username, details=details)
        await self.identity.close_sessions(
            [session_key(t) for t in tokens], "the account's role holds no permissions"
        )

    async def delete_user(self, user_id: str, *, actor: Caller | None) -> None:
        """Delete a user (their login sessions and connections go with them)."""
        if actor is not None and actor.user_id == user_id:
            raise PermissionDenied("Cannot delete your own account", code="cannot_delete_self")
        async with self.audit.atomic() as batch:
            session = batch.session
            await lock_roles(session)
            before_holders = await manager_holders(session)
            user = await _target_user(session, user_id, actor, "delete")
            names = await role_names(session)
            snapshot = {
                "username": user.username,
                "displayName": user.display_name,
                "email": user.email,
                "role": names.get(user.role_id, ""),
            }
            await session.delete(user)
            await session.flush()
            await ensure_managers_remain(session, before_holders)
            audit(
                batch,
                "user.deleted",
                actor,
                target=snapshot["username"],
                details={"before": snapshot},
            )
        await self.live.close_where(
            USER_DELETED, reason_code=CloseReason.USER_DELETED, user_id=user_id
        )

    async def reset_password(
        self,
        user_id: str,
        new_password: str,
        *,
        actor: Caller | None,
        must_change_password: bool = False,
    ) -> None:
        """Set a new password; every session and API token of the user ends, the lock lifts.

        ``must_change_password``: the user changes it at the next sign-in, before anything else.

        Not your own (403 ``cannot_reset_own_password``): ``PUT /profile/password``
        asks for the current password, which an API token or an unattended browser
        holding ``users.manage`` does not know. The CLI (no actor) may.
        """
        if actor is not None and actor.user_id == user_id:
            raise PermissionDenied(
                "You cannot reset your own password here: change it with "
                "PUT /profile/password, which asks for the current one",
                code="cannot_reset_own_password",
            )
        await check_password(new_password, "newPassword")
        password_hash = await hash_password(new_password)
        async with self.audit.atomic() as batch:
            user = await _target_user(batch.session, user_id, actor, "reset the password of")
            user.password_hash = password_hash
            user.must_change_password = must_change_password
            user.failed_login_count = 0
            user.locked_until = None
            user.updated_at = utcnow()
            batch.session.add(user)
            # in the reset's own commit: no moment where the password changed and a
            # session or token of the old one still works
            identity = self.identity
            revoked = await identity.mark_sessions_revoked(
                batch.session, user_id, reason="password_reset"
            )
            tokens = await identity.mark_tokens_revoked(batch.session, user_id)
            audit(
                batch,
                "user.password_reset",
                actor,
                target=user.username,
                details={
                    "userId": user_id,
                    "apiTokenIds": tokens,
                    "mustChangePassword": must_change_password,
                },
            )
        await identity.close_sessions([*revoked, *map(session_key, tokens)], "password reset")
        await self.logins.forget_devices(user_id)
        await self.live.close_where(
            "password reset", reason_code=CloseReason.REVOKED, user_id=user_id
        )

    async def set_suspended(self, user_id: str, suspended: bool, *, actor: Caller | None) -> None:
        """Suspend (no sign-in by any method) or resume a user (audited).

        Suspending ends the user's login sessions, API tokens and sockets as a password
        reset does; resuming lets them sign in again (the tokens stay revoked). Not your
        own account (403 ``cannot_suspend_self``), nor the last administrator who could
        sign in (409 ``would_lock_out``). Setting the state it already has changes nothing.
        """
        if actor is not None and actor.user_id == user_id and suspended:
            raise PermissionDenied(
                "You cannot suspend your own account", code="cannot_suspend_self"
            )
        async with self._suspensions:
            await self._set_suspended(user_id, suspended, actor=actor)

    async def _set_suspended(self, user_id: str, suspended: bool, *, actor: Caller | None) -> None:
        revoked: list[str] = []
        tokens: list[str] = []
        async with self.audit.atomic() as batch:
            action = "suspend" if suspended else "resume"
            user = await _target_user(batch.session, user_id, actor, action)
            if user.suspended == suspended:
                return
            if suspended:
                await self.signin_guard.check_suspension(user_id)
                # in the suspension's own commit, as for a password reset
                revoked = await self.identity.mark_sessions_revoked(
                    batch.session, user_id, reason="suspended"
                )
                tokens = await self.identity.mark_tokens_revoked(batch.session, user_id)
            user.suspended = suspended
            user.updated_at = utcnow()
            batch.session.add(user)
            details: dict[str, Any] = {"userId": user_id}
            if suspended:
                details["apiTokenIds"] = tokens
            audit(
                batch,
                "user.suspended" if suspended else "user.resumed",
                actor,
                target=user.username,
                details=details,
            )
        if suspended:
            await self.identity.close_sessions(
                [*revoked, *map(session_key, tokens)], "account suspended"
            )
            await self.logins.forget_devices(user_id)
            await self.live.close_where(
                "account suspended", reason_code=CloseReason.REVOKED, user_id=user_id
            )

    async def unlock_user(self, user_id: str, *, actor: Caller | None) -> None:
        """Clear the failure count and any lock (succeeds when not locked too)."""
        async with self.audit.atomic() as batch:
            user = await _target_user(batch.session, user_id, actor, "unlock")
            # what ``logins.reset_failures`` does, in this transaction
            await batch.session.exec(
                update(User)
                .where(col(User.id) == user_id)
                .values(failed_login_count=0, locked_until=None)
            )
            audit(batch, "user.unlocked", actor, target=user.username, details={"userId": user_id})
