"""Personal API tokens: named, expiring bearer secrets for scripts and CI.

A token is ``hgt_`` followed by 43 URL-safe characters (256 random bits). Only its
SHA-256 is stored: a secret this long needs no slow hash, and the lookup is one indexed
read. A token holds a subset of its owner's permissions, chosen when it is made; what
it may do is that subset intersected with the role's permissions *now*, so a permission
the owner loses is gone from every token at once. A token never stands in for a person
where a login is required (password, MFA, passkeys, login sessions, making tokens): the
routes declare that with the ``interactive`` guard.

``ApiTokenCheck`` answers "who is this token" for ``Identity``; ``ApiTokens`` makes,
lists and revokes them.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlmodel import col, select

from ...db.models.identity import ApiToken, Role, User
from ...errors import InvalidInput, NotAuthenticated, NotFound, PermissionDenied
from ...principals import API_TOKEN_SESSION, Caller, ClientInfo
from ...timefmt import as_utc, utcnow
from .onboarding import pending_step

if TYPE_CHECKING:
    from ...db.engine import Database
    from ...db.readcache import ReadCache
    from ..audit.audit import AuditLog
    from ..settings import Settings
    from .identity import Identity
    from .second_factors import SecondFactors

TOKEN_PREFIX = "hgt_"
SHOWN_PREFIX = 12
"""Characters of a token kept in clear (``hgt_`` and 8 more) so a person can tell tokens apart."""
USE_RECORD_INTERVAL = timedelta(seconds=60)
MAX_LIFETIME_DAYS = 366
MAX_TOKENS_PER_USER = 50


def hash_token(token: str) -> str:
    """The stored form of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def session_key(token_id: str) -> str:
    """The login-session key of sockets and live sessions opened with a token."""
    return f"{API_TOKEN_SESSION}{token_id}"


@dataclass(frozen=True)
class TokenView:
    """A token with what authentication needs of its owner (a read-cache entry)."""

    token_id: str
    name: str
    user_id: str
    username: str
    display_name: str
    role_id: str
    role_name: str
    granted: frozenset[str]
    role_permissions: frozenset[str]
    expires_at: datetime
    revoked: bool
    last_used_at: datetime | None
    last_used_ip: str
    pending: str | None = None

    @property
    def permissions(self) -> frozenset[str]:
        """What the token may do now: its grant, cut down to the owner's current role."""
        return self.granted & self.role_permissions

    def problem(self, now: datetime) -> NotAuthenticated | None:
        """Why the token no longer authenticates, or None."""
        if self.revoked:
            return NotAuthenticated("This API token has been revoked", code="api_token_revoked")
        if self.expires_at <= now:
            return NotAuthenticated("This API token has expired", code="api_token_expired")
        return None

    def caller(self, client: ClientInfo) -> Caller:
        """The caller a request made with this token acts as."""
        return Caller(
            user_id=self.user_id,
            username=self.username,
            display_name=self.display_name,
            role_id=self.role_id,
            role_name=self.role_name,
            permissions=self.permissions,
            login_session_id=session_key(self.token_id),
            ip_address=client.ip_address,
            user_agent=client.user_agent,
            pending=self.pending,
        )


class ApiTokenCheck:
    """Resolves presented tokens and token-opened sockets to callers."""

    def __init__(
        self, *, db: Database, readcache: ReadCache, settings: Settings, factors: SecondFactors
    ) -> None:
        self.db = db
        self.factors = factors
        self.readcache = readcache
        self.settings = settings

    async def _view(
        self, *, token_hash: str | None = None, token_id: str | None = None
    ) -> TokenView | None:
        async def load() -> TokenView | None:
            query = (
                select(ApiToken, User, Role)
                .join(User, col(User.id) == col(ApiToken.user_id))
                .outerjoin(Role, col(Role.id) == col(User.role_id))
            )
            if token_hash is not None:
                query = query.where(col(ApiToken.token_hash) == token_hash)
            else:
                query = query.where(col(ApiToken.id) == token_id)
            async with self.db.session() as session:
                found = (await session.exec(query)).first()
            if found is None:
                return None
            token, user, role = found
            return TokenView(
                token_id=token.id,
                name=token.name,
                user_id=user.id,
                username=user.username,
                display_name=user.display_name,
                role_id=user.role_id,
                role_name=role.name if role else "",
                granted=frozenset(token.permissions),
                role_permissions=frozenset(role.permissions) if role else frozenset(),
                expires_at=as_utc(token.expires_at),
                revoked=token.revoked_at is not None,
                last_used_at=as_utc(token.last_used_at) if token.last_used_at else None,
                last_used_ip=token.last_used_ip,
                # a token of a user with a step to take waits for it like their sessions
                pending=pending_step(
                    self.settings,
                    must_change_password=bool(user.must_change_password),
                    mfa_enabled=await self.factors.set_up(
                        user,
                        totp=bool(user.mfa_enabled and user.mfa_secret),
                        role_name=role.name if role else "",
                    ),
                    role_name=role.name if role else "",
                ),
            )

        key = ("api_token", token_hash) if token_hash is not None else ("api_token_id", token_id)
        return await self.readcache.get(key, load)

    async def authenticate(self, token: str, client: ClientInfo, *, touch: bool = True) -> Caller:
        """The caller a presented token acts as; 401 when unknown, revoked or expired."""
        view = await self._view(token_hash=hash_token(token))
        if view is None:
            raise NotAuthenticated("Unknown API token", code="invalid_token")
        now = utcnow()
        problem = view.problem(now)
        if problem is not None:
            raise problem
        if touch and (
            view.last_used_at is None
            or now - view.last_used_at >= USE_RECORD_INTERVAL
            or view.last_used_ip != client.ip_address
        ):
            await self._record_use(view.token_id, now, client.ip_address)
        return view.caller(client)

    async def _record_use(self, token_id: str, now: datetime, ip_address: str) -> None:
        async with self.db.session() as session:
            row = await session.get(ApiToken, token_id)
            if row is None or row.revoked_at is not None:
                return
            row.last_used_at = now
            row.last_used_ip = ip_address[:64]
            session.add(row)
            await session.commit()

    async def is_live(self, key: str) -> bool:
        """True while the token behind a socket's login-session key still authenticates."""
        view = await self._view(token_id=key.removeprefix(API_TOKEN_SESSION))
        return view is not None and view.problem(utcnow()) is None

    async def socket_caller(self, key: str, client: ClientInfo) -> Caller | None:
        """The caller of a socket opened with a token (permissions as of now); None if gone."""
        view = await self._view(token_id=key.removeprefix(API_TOKEN_SESSION))
        return None if view is None else view.caller(client)


@dataclass(frozen=True)
class NewToken:
    """A token just made: its row and the secret, shown this once."""

    token: ApiToken
    secret: str


class ApiTokens:
    """Making, listing and revoking personal API tokens."""

    def __init__(self, *, audit: AuditLog, db: Database, identity: Identity) -> None:
        self.audit = audit
        self.db = db
        self.identity = identity

    async def create(
        self, caller: Caller, name: str, days: int, permissions: Iterable[str] | None
    ) -> NewToken:
        """A new token of the caller's; ``permissions`` defaults to all the caller holds."""
        name = name.strip()
        if not name:
            raise InvalidInput("A token needs a name")
        if not 1 <= days <= MAX_LIFETIME_DAYS:
            raise InvalidInput(f"A token lives 1 to {MAX_LIFETIME_DAYS} days")
        wanted = set(caller.permissions if permissions is None else permissions)
        missing = sorted(wanted - caller.permissions)
        if missing:
            raise PermissionDenied(
                f"A token can only hold permissions you hold: {', '.join(missing)}",
                code="permission_not_held",
            )
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        now = utcnow()
        async with self.audit.atomic() as batch:
            owned = await batch.session.exec(
                select(ApiToken.id).where(
                    col(ApiToken.user_id) == caller.user_id,
                    col(ApiToken.revoked_at).is_(None),
                    col(ApiToken.expires_at) > now,
                )
            )
            if len(owned.all()) >= MAX_TOKENS_PER_USER:
                raise InvalidInput(
                    f"You have {MAX_TOKENS_PER_USER} live tokens; revoke one first",
                    code="too_many_tokens",
                )
            token = ApiToken(
                user_id=caller.user_id,
                name=name[:100],
                token_hash=hash_token(secret),
                prefix=secret[:SHOWN_PREFIX],
                permissions=sorted(wanted),
                created_at=now,
                expires_at=now + timedelta(days=days),
            )
            batch.session.add(token)
            batch.record(
                "auth.api_token_created",
                actor=caller,
                target=caller.username,
                details={"tokenId": token.id, "name": token.name, "expiresInDays": days},
            )
        return NewToken(token=token, secret=secret)

    async def owned(self, user_id: str) -> list[ApiToken]:
        """A user's tokens, live and past, newest first."""
        async with self.db.session() as session:
            rows = await session.exec(
                select(ApiToken)
                .where(col(ApiToken.user_id) == user_id)
                .order_by(col(ApiToken.created_at).desc())
            )
            return list(rows.all())

    async def everyone(self, user_id: str | None = None) -> list[tuple[ApiToken, User]]:
        """Every user's tokens (or one user's) with their owner, newest first."""
        query = select(ApiToken, User).join(User, col(User.id) == col(ApiToken.user_id))
        if user_id is not None:
            query = query.where(col(ApiToken.user_id) == user_id)
        async with self.db.session() as session:
            rows = await session.exec(query.order_by(col(ApiToken.created_at).desc()))
            return [(token, user) for token, user in rows.all()]

    async def revoke(self, caller: Caller, token_id: str, *, any_owner: bool) -> None:
        """Revoke a token (the caller's own, or anyone's with ``any_owner``); its sockets close."""
        async with self.audit.atomic() as batch:
            token = await batch.session.get(ApiToken, token_id)
            if token is None or (not any_owner and token.user_id != caller.user_id):
                raise NotFound("No such API token", code="api_token_not_found")
            if token.revoked_at is None:
                token.revoked_at = utcnow()
                batch.session.add(token)
            owner = await batch.session.get(User, token.user_id)
            batch.record(
                "auth.api_token_revoked",
                actor=caller,
                target=owner.username if owner else token.user_id,
                details={"tokenId": token.id, "name": token.name, "ownerId": token.user_id},
            )
        await self.identity.close_sessions([session_key(token_id)], "API token revoked")
