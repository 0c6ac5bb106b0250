"""Invite links: an administrator creates a user who sets their own password.

The link carries a 256-bit secret in its fragment (``/invite#<secret>``), so it is
never sent in a GET nor written to an access log; only its SHA-256 is stored. A link
is single use and expires (``hours``, 1 to 720); a new link for the same user revokes
the old one. Accepting it sets the password (the one strength rule), signs the user
in and ends the link. Expired, used and revoked links each get their own code, so
the browser can say which (all 404: no link to accept is there); an unknown one gets
404 ``invite_invalid``.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from ...db.models.identity import User, UserInvite
from ...errors import ApiError, Conflict, InvalidInput, NotFound
from ...principals import SignedIn
from ...security.passwords import hash_password
from ...timefmt import as_utc, iso, utcnow
from .accounts import UserWithRole, audit, check_password, target_user

if TYPE_CHECKING:
    from ...db.engine import Database
    from ..audit.audit import AuditBatch, AuditLog
    from .accounts import Accounts
    from .identity import Caller, ClientInfo
    from .logins import Logins

DEFAULT_HOURS = 72
MAX_HOURS = 720
TOKEN_BYTES = 32
INVITE_PATH = "/invite#"
"""The browser app's page for an invite; the secret follows in the fragment."""


class InviteGone(ApiError):
    """The link was valid once: expired, used or revoked (404 with the reason's code)."""

    status = 404
    code = "invite_gone"


def hash_invite(secret: str) -> str:
    """How an invite's secret is stored: its SHA-256, hex."""
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class NewInvite:
    """An invite just made: the secret (shown this once) and when it expires."""

    secret: str
    expires_at: datetime

    @property
    def path(self) -> str:
        """The browser app's path of the link (prefix it with the gateway's address)."""
        return f"{INVITE_PATH}{self.secret}"


@dataclass(frozen=True)
class InviteState:
    """A user's open invite as administrators see it."""

    expires_at: datetime
    expired: bool


@dataclass(frozen=True)
class InvitedUser:
    """Who an invite is for (``POST /auth/invite/check``)."""

    username: str
    display_name: str
    expires_at: datetime


def _check_hours(hours: float) -> timedelta:
    if not 1 <= hours <= MAX_HOURS:
        raise InvalidInput(f"expiresInHours must be between 1 and {MAX_HOURS}")
    return timedelta(hours=hours)


class Invites:
    """``kernel.invites``: make, revoke, check and accept invite links."""

    def __init__(
        self, *, db: Database, audit: AuditLog, accounts: Accounts, logins: Logins
    ) -> None:
        self.db = db
        self.audit = audit
        self.accounts = accounts
        self.logins = logins

    async def invite_user(
        self,
        *,
        username: str,
        display_name: str,
        email: str,
        role: str,
        hours: float,
        actor: Caller | None,
    ) -> tuple[UserWithRole, NewInvite]:
        """Create a user without a password and their link, in one transaction (audited)."""
        lifetime = _check_hours(hours)
        made: list[NewInvite] = []

        async def add(batch: AuditBatch, user: User) -> None:
            made.append(await _add_invite(batch, user, lifetime, actor))

        created = await self.accounts.create_user(
            username=username,
            password=None,
            display_name=display_name,
            email=email,
            role=role,
            actor=actor,
            then=add,
        )
        return created, made[0]

    async def renew(self, user_id: str, hours: float, *, actor: Caller | None) -> NewInvite:
        """A new link for a user who has not set a password yet; earlier links end.

        409 ``already_accepted`` when the user has a password or signs in elsewhere.
        """
        lifetime = _check_hours(hours)
        async with self.audit.atomic() as batch:
            user = await target_user(batch.session, user_id, actor, "invite")
            if user.password_hash is not None or user.auth_provider != "local":
                raise Conflict("This user can already sign in", code="already_accepted")
            await _revoke_open(batch.session, user.id)
            return await _add_invite(batch, user, lifetime, actor)

    async def revoke(self, user_id: str, *, actor: Caller | None) -> None:
        """End a user's open links (audited); 404 ``no_invite`` when there is none."""
        async with self.audit.atomic() as batch:
            user = await target_user(batch.session, user_id, actor, "revoke the invite of")
            ended = await _revoke_open(batch.session, user.id)
            if not ended:
                raise NotFound("This user has no open invite", code="no_invite")
            audit(
                batch,
                "user.invite_revoked",
                actor,
                target=user.username,
                details={"userId": user.id, "inviteIds": ended},
            )

    async def open_invites(self) -> dict[str, InviteState]:
        """The newest open invite of each user who has no password yet, by user id."""
        query = (
            select(UserInvite)
            .join(User, col(User.id) == col(UserInvite.user_id))
            .where(
                col(UserInvite.used_at).is_(None),
                col(UserInvite.revoked_at).is_(None),
                col(User.password_hash).is_(None),
            )
            .order_by(col(UserInvite.created_at))
        )
        now = utcnow()
        async with self.db.session() as session:
            rows = (await session.exec(query)).all()
        return {
            row.user_id: InviteState(as_utc(row.expires_at), as_utc(row.expires_at) <= now)
            for row in rows
        }

    async def check(self, secret: str, client: ClientInfo) -> InvitedUser:
        """Who a link is for, while it can be accepted (404 with the reason's code otherwise)."""
        await self.logins.limit_ip(client)
        async with self.db.session() as session:
            invite, user = await _usable(session, secret)
        return InvitedUser(user.username, user.display_name, as_utc(invite.expires_at))

    async def accept(self, secret: str, password: str, client: ClientInfo) -> SignedIn:
        """Set the invited user's password and sign them in; the link ends (audited)."""
        await self.logins.limit_ip(client)
        async with self.db.session() as session:
            _, user = await _usable(session, secret)
        await check_password(password, user_inputs=(user.username, user.display_name))
        password_hash = await hash_password(password)
        async with self.audit.atomic() as batch:
            # read again in the accepting transaction: of two racing accepts one wins
            invite, user = await _usable(batch.session, secret)
            now = utcnow()
            invite.used_at = now
            user.password_hash = password_hash
            user.must_change_password = False
            user.updated_at = now
            batch.session.add(invite)
            batch.session.add(user)
            batch.record(
                "user.invite_accepted",
                user_id=user.id,
                username=user.username,
                display_name=user.display_name,
                target=user.username,
                details={"inviteId": invite.id},
                ip_address=client.ip_address,
            )
        return await self.logins.complete_login(user, client, method="invite")


async def _add_invite(
    batch: AuditBatch, user: User, lifetime: timedelta, actor: Caller | None
) -> NewInvite:
    """Store a new invite for ``user`` in the batch's transaction and audit it."""
    secret = secrets.token_urlsafe(TOKEN_BYTES)
    now = utcnow()
    invite = UserInvite(
        user_id=user.id,
        token_hash=hash_invite(secret),
        created_by=actor.user_id if actor is not None else None,
        created_at=now,
        expires_at=now + lifetime,
    )
    batch.session.add(invite)
    await batch.session.flush()
    audit(
        batch,
        "user.invite_created",
        actor,
        target=user.username,
        details={"userId": user.id, "inviteId": invite.id, "expiresAt": iso(invite.expires_at)},
    )
    return NewInvite(secret, invite.expires_at)


async def _revoke_open(session: AsyncSession, user_id: str) -> list[str]:
    """Mark a user's unused, unrevoked invites revoked (not committed); their ids."""
    query = select(UserInvite).where(
        col(UserInvite.user_id) == user_id,
        col(UserInvite.used_at).is_(None),
        col(UserInvite.revoked_at).is_(None),
    )
    now = utcnow()
    ended: list[str] = []
    for invite in (await session.exec(query)).all():
        invite.revoked_at = now
        session.add(invite)
        ended.append(invite.id)
    return ended


async def _usable(session: AsyncSession, secret: str) -> tuple[UserInvite, User]:
    """The invite a secret names and its user, while it can be accepted."""
    if not secret or len(secret) > 200:
        raise NotFound("This invite link is not valid", code="invite_invalid")
    query = select(UserInvite, User).join(User, col(User.id) == col(UserInvite.user_id))
    found = (await session.exec(query.where(UserInvite.token_hash == hash_invite(secret)))).first()
    if found is None:
        raise NotFound("This invite link is not valid", code="invite_invalid")
    invite, user = found
    # a password set meanwhile (an administrator's reset) makes the link moot
    if invite.used_at is not None or user.password_hash is not None:
        raise InviteGone("This invite link was already used", code="invite_used")
    if invite.revoked_at is not None:
        raise InviteGone("This invite link was withdrawn", code="invite_revoked")
    if as_utc(invite.expires_at) <= utcnow():
        raise InviteGone("This invite link has expired", code="invite_expired")
    if user.suspended:
        raise InviteGone("This account is suspended", code="account_suspended")
    return invite, user
