"""Identity core: who the caller is. Session tokens, login-session rows, live permissions.

Login routes (local, MFA, LDAP, OIDC, passkey) all end in ``issue_session``;
every authenticated request goes through ``authenticate``.
"""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import jwt
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from ...closereasons import CloseReason
from ...db.models.identity import ApiToken, LoginSession, Role, User
from ...db.models.settings import SystemValue
from ...errors import NotAuthenticated
from ...principals import API_TOKEN_SESSION, Caller, ClientInfo, IssuedSession
from ...timefmt import as_utc, utcnow
from .api_tokens import TOKEN_PREFIX
from .onboarding import pending_step

if TYPE_CHECKING:
    from ...contract import Account
    from ...db.engine import Database
    from ...db.readcache import ReadCache
    from ...security.secretbox import SecretBox
    from ..sessions.live_sessions import LiveSessions
    from ..settings import Settings
    from .api_tokens import ApiTokenCheck
    from .second_factors import SecondFactors

SIGNING_KEY_NAME = "token_signing_key"
TOUCH_INTERVAL = timedelta(seconds=60)
MFA_TOKEN_SECONDS = 300
ALGORITHM = "HS256"
MAX_VERIFIED_TOKENS = 20_000


@dataclass(frozen=True)
class LoginView:
    """What authentication needs of a login session, its user and role (a cache entry)."""

    login_session_id: str
    user_id: str
    revoked: bool
    expires_at: datetime
    last_used_at: datetime
    username: str
    display_name: str
    role_id: str
    role_name: str
    permissions: frozenset[str]
    must_change_password: bool = False
    mfa_enabled: bool = False
    """Two-step verification set up: TOTP, or a pack's second step (``SecondFactors.set_up``)."""


class Identity:
    """Issues and checks session tokens; resolves callers."""

    def __init__(
        self,
        *,
        db: Database,
        secrets: SecretBox,
        settings: Settings,
        readcache: ReadCache,
        live: LiveSessions,
        api_tokens: ApiTokenCheck,
        factors: SecondFactors,
    ) -> None:
        self.db = db
        self.factors = factors
        self.api_tokens = api_tokens
        self.secrets = secrets
        self.settings = settings
        self.readcache = readcache
        self.live = live
        self._signing_key: str | None = None
        # session tokens whose signature was already checked: verifying an HMAC
        # through PyJWT is a tenth of a small request; expiry is still checked each time
        self._verified: dict[str, dict[str, Any]] = {}
        # the last Caller of each login session, reused while its cached view (the
        # same object: any commit reloads it) and the client are the same
        self._callers: dict[str, tuple[LoginView, ClientInfo, Caller]] = {}

    async def start(self) -> None:
        """Load (or create) the token-signing key, sealed in the database."""
        async with self.db.session() as session:
            row = await session.get(SystemValue, SIGNING_KEY_NAME)
            if row is None:
                key = secrets.token_hex(32)
                session.add(SystemValue(name=SIGNING_KEY_NAME, value=self.secrets.seal(key)))
                await session.commit()
                self._signing_key = key
            else:
                self._signing_key = self.secrets.open(row.value)
        self._verified.clear()

    async def rotate_signing_key(self) -> int:
        """A new signing key; every existing session is revoked. Returns sessions revoked."""
        key = secrets.token_hex(32)
        now = utcnow()
        revoked = 0
        async with self.db.session() as session:
            row = await session.get(SystemValue, SIGNING_KEY_NAME)
            sealed = self.secrets.seal(key)
            if row is None:
                session.add(SystemValue(name=SIGNING_KEY_NAME, value=sealed))
            else:
                row.value = sealed
                session.add(row)
            live = select(LoginSession).where(LoginSession.revoked_at.is_(None))  # type: ignore[union-attr]
            for login in (await session.exec(live)).all():
                login.revoked_at = now
                login.revoke_reason = "key_rotated"
                session.add(login)
                revoked += 1
            await session.commit()
        self._signing_key = key
        self._verified.clear()
        return revoked

    @property
    def signing_key(self) -> str:
        """The HMAC key for tokens."""
        if self._signing_key is None:
            raise RuntimeError("identity not started")
        return self._signing_key

    def session_lifetime(self) -> timedelta:
        """From ``security.session_lifetime_days``."""
        return timedelta(days=float(self.settings.get("security.session_lifetime_days")))

    async def issue_session(
        self,
        user: Account,
        client: ClientInfo,
        *,
        method: str = "local",
        session: AsyncSession | None = None,
    ) -> IssuedSession:
        """Create a login-session row and the JWT bound to it.

        With ``session`` the row is only added to it (the caller commits, together
        with its audit entry); otherwise it is committed here.
        """
        now = utcnow()
        expires = now + self.session_lifetime()
        row = LoginSession(
            user_id=user.id,
            method=method,
            browser=client.browser,
            os=client.os,
            ip_address=client.ip_address,
            created_at=now,
            last_used_at=now,
            expires_at=expires,
        )
        if session is None:
            async with self.db.session() as own:
                await _store_login(own, row, user.id)
                await own.commit()
        else:
            await _store_login(session, row, user.id)
        claims = {
            "sub": user.id,
            "sid": row.id,
            "typ": "session",
            "iat": int(now.timestamp()),
            "exp": int(expires.timestamp()),
            "jti": uuid.uuid4().hex,
        }
        token = jwt.encode(claims, self.signing_key, algorithm=ALGORITHM)
        return IssuedSession(token=token, session=row)

    def issue_mfa_token(self, user_id: str, methods: Sequence[str] = ("totp",)) -> str:
        """A 5-minute token good only for the second step, by one of ``methods``."""
        now = utcnow()
        claims = {
            "sub": user_id,
            "mth": list(methods),
            "typ": "mfa",
            "iat": int(now.timestamp()),
            "exp": int(now.timestamp()) + MFA_TOKEN_SECONDS,
            "jti": uuid.uuid4().hex,
        }
        return jwt.encode(claims, self.signing_key, algorithm=ALGORITHM)

    def decode(self, token: str, expected_type: str) -> dict[str, Any]:
        """Verify signature, expiry and token type; raise NotAuthenticated otherwise."""
        claims = self._verified.get(token)
        if claims is None:
            claims = self._verify(token)
            if claims.get("typ") == "session":
                if len(self._verified) >= MAX_VERIFIED_TOKENS:
                    self._verified.clear()
                self._verified[token] = claims
        elif int(claims["exp"]) <= time.time():
            raise NotAuthenticated("Token expired", code="token_expired")
        if claims.get("typ") != expected_type:
            raise NotAuthenticated("Invalid token", code="invalid_token")
        return claims

    def _verify(self, token: str) -> dict[str, Any]:
        try:
            return jwt.decode(  # type: ignore[no-any-return]
                token,
                self.signing_key,
                algorithms=[ALGORITHM],
                options={"require": ["exp", "sub", "typ"]},
            )
        except jwt.ExpiredSignatureError:
            raise NotAuthenticated("Token expired", code="token_expired") from None
        except jwt.PyJWTError:
            raise NotAuthenticated("Invalid token", code="invalid_token") from None

    async def role_permissions(self, role_id: str) -> tuple[str, frozenset[str]]:
        """``(role name, permissions)`` of a role, read live."""
        async with self.db.session() as session:
            role = await session.get(Role, role_id)
        if role is None:
            return "", frozenset()
        return role.name, frozenset(role.permissions)

    async def _login_view(self, login_session_id: str) -> LoginView | None:
        """A login session with its user and role, served from the read cache."""

        async def load() -> LoginView | None:
            query = (
                select(LoginSession, User, Role)
                .join(User, col(User.id) == col(LoginSession.user_id))
                .outerjoin(Role, col(Role.id) == col(User.role_id))
                .where(col(LoginSession.id) == login_session_id)
            )
            async with self.db.session() as session:
                found = (await session.exec(query)).first()
            if found is None:
                return None
            login, user, role = found
            return LoginView(
                login_session_id=login.id,
                user_id=user.id,
                revoked=login.revoked_at is not None,
                expires_at=as_utc(login.expires_at),
                last_used_at=as_utc(login.last_used_at),
                username=user.username,
                display_name=user.display_name,
                role_id=user.role_id,
                role_name=role.name if role else "",
                permissions=frozenset(role.permissions) if role else frozenset(),
                must_change_password=bool(user.must_change_password),
                mfa_enabled=await self.factors.set_up(
                    user,
                    totp=bool(user.mfa_enabled and user.mfa_secret),
                    role_name=role.name if role else "",
                ),
            )

        return await self.readcache.get(("login", login_session_id), load)

    async def authenticate(self, token: str, client: ClientInfo, *, touch: bool = True) -> Caller:
        """Resolve a session token (or a personal API token) to a Caller.

        Revocation, lifetime and idle timeout are enforced.
        """
        if token.startswith(TOKEN_PREFIX):
            return await self.api_tokens.authenticate(token, client, touch=touch)
        claims = self.decode(token, "session")
        now = utcnow()
        view = await self._login_view(str(claims.get("sid") or ""))
        if view is None or view.user_id != claims["sub"]:
            raise NotAuthenticated("Session has been revoked", code="session_revoked")
        problem = self._not_live(view, now)
        if problem is not None:
            if problem.code == "session_idle_timeout":
                async with self.db.session() as session:
                    await self.mark_session_revoked(
                        session, view.login_session_id, user_id=view.user_id, reason="idle_timeout"
                    )
                    await session.commit()
            raise problem
        if touch and now - view.last_used_at >= TOUCH_INTERVAL:
            await self._touch(view.login_session_id, now)
        pending = pending_step(
            self.settings,
            must_change_password=view.must_change_password,
            mfa_enabled=view.mfa_enabled,
            role_name=view.role_name,
        )
        known = self._callers.get(view.login_session_id)
        # a pack may have put something in a Caller's extra: such a Caller is not reused
        if (
            known is not None
            and known[0] is view
            and not known[2].extra
            and known[2].pending == pending
        ):
            same = known[1]
            if same is client or (
                same.ip_address == client.ip_address and same.user_agent == client.user_agent
            ):
                return known[2]
        caller = Caller(
            user_id=view.user_id,
            username=view.username,
            display_name=view.display_name,
            role_id=view.role_id,
            role_name=view.role_name,
            permissions=view.permissions,
            login_session_id=view.login_session_id,
            ip_address=client.ip_address,
            user_agent=client.user_agent,
            pending=pending,
        )
        if len(self._callers) >= MAX_VERIFIED_TOKENS:
            self._callers.clear()
        self._callers[view.login_session_id] = (view, client, caller)
        return caller

    def _not_live(self, view: LoginView, now: datetime) -> NotAuthenticated | None:
        """Why a login session no longer authenticates (revoked, expired, idle), or None."""
        if view.revoked:
            return NotAuthenticated("Session has been revoked", code="session_revoked")
        if view.expires_at <= now:
            return NotAuthenticated("Session expired", code="session_expired")
        idle = int(self.settings.get("security.idle_timeout_minutes") or 0)
        if idle > 0 and now - view.last_used_at > timedelta(minutes=idle):
            return NotAuthenticated(
                "Session expired due to inactivity", code="session_idle_timeout"
            )
        return None

    async def _touch(self, login_session_id: str, now: datetime) -> None:
        """Record activity on a login session that is still live."""
        async with self.db.session() as session:
            login = await session.get(LoginSession, login_session_id)
            if login is None or login.revoked_at is not None:
                return
            login.last_used_at = now
            session.add(login)
            await session.commit()

    async def check_login_session(self, login_session_id: str) -> bool:
        """True while a login session is live: not revoked, expired or idle too long.

        For sockets redeeming a ticket; it does not count as activity.
        """
        if login_session_id.startswith(API_TOKEN_SESSION):
            return await self.api_tokens.is_live(login_session_id)
        view = await self._login_view(login_session_id)
        return view is not None and self._not_live(view, utcnow()) is None

    async def caller_for_user(
        self, user_id: str, login_session_id: str | None, client: ClientInfo
    ) -> Caller | None:
        """A Caller for a user id (WebSocket handlers after a ticket); None if gone."""
        if login_session_id is not None and login_session_id.startswith(API_TOKEN_SESSION):
            caller = await self.api_tokens.socket_caller(login_session_id, client)
            return caller if caller is not None and caller.user_id == user_id else None
        async with self.db.session() as session:
            user = await session.get(User, user_id)
            if user is None:
                return None
            role = await session.get(Role, user.role_id)
        return Caller(
            user_id=user.id,
            username=user.username,
            display_name=user.display_name,
            role_id=user.role_id,
            role_name=role.name if role else "",
            permissions=frozenset(role.permissions) if role else frozenset(),
            login_session_id=login_session_id,
            ip_address=client.ip_address,
            user_agent=client.user_agent,
        )

    async def revoke_sessions(self, user_id: str, *, reason: str, keep: str | None = None) -> int:
        """Revoke every live login session of a user except ``keep``; return how many.

        Open sockets of the revoked sessions are closed as well.
        """
        async with self.db.session() as session:
            revoked = await self.mark_sessions_revoked(session, user_id, reason=reason, keep=keep)
            await session.commit()
        await self.close_sessions(revoked, reason)
        return len(revoked)

    async def revoke_session(self, login_session_id: str, *, user_id: str, reason: str) -> bool:
        """Revoke one login session of a user and close its sockets; False if not theirs."""
        async with self.db.session() as session:
            if not await self.mark_session_revoked(
                session, login_session_id, user_id=user_id, reason=reason
            ):
                return False
            await session.commit()
        await self.close_sessions([login_session_id], reason)
        return True

    @staticmethod
    async def mark_sessions_revoked(
        session: AsyncSession, user_id: str, *, reason: str, keep: str | None = None
    ) -> list[str]:
        """Mark every live login session of a user but ``keep`` revoked in ``session``.

        Not committed (e.g. inside ``kernel.audit.atomic()``, with the entry that
        records it); returns the ids, whose sockets ``close_sessions`` closes after
        the commit.
        """
        now = utcnow()
        revoked: list[str] = []
        query = select(LoginSession).where(
            LoginSession.user_id == user_id,
            LoginSession.revoked_at.is_(None),  # type: ignore[union-attr]
        )
        for login in (await session.exec(query)).all():
            if login.id == keep:
                continue
            login.revoked_at = now
            login.revoke_reason = reason
            session.add(login)
            revoked.append(login.id)
        return revoked

    @staticmethod
    async def mark_tokens_revoked(session: AsyncSession, user_id: str) -> list[str]:
        """Mark every live API token of a user revoked in ``session`` (not committed).

        What ends a compromised account (an admin's password reset, a role with no
        permissions left) ends its tokens too. Returns the tokens' ids, whose sockets
        ``close_sessions`` closes after the commit (``session_key`` of each).
        """
        now = utcnow()
        query = select(ApiToken).where(
            col(ApiToken.user_id) == user_id,
            col(ApiToken.revoked_at).is_(None),
            col(ApiToken.expires_at) > now,
        )
        ids: list[str] = []
        for token in (await session.exec(query)).all():
            token.revoked_at = now
            session.add(token)
            ids.append(token.id)
        return ids

    @staticmethod
    async def mark_session_revoked(
        session: AsyncSession, login_session_id: str, *, user_id: str, reason: str
    ) -> bool:
        """Mark one login session of a user revoked in ``session``; False if not theirs.

        Not committed (see ``mark_sessions_revoked``); an already revoked session of
        theirs counts too.
        """
        login = await session.get(LoginSession, login_session_id)
        if login is None or login.user_id != user_id:
            return False
        if login.revoked_at is None:
            login.revoked_at = utcnow()
            login.revoke_reason = reason
            session.add(login)
        return True

    async def close_sessions(self, login_session_ids: Iterable[str], reason: str) -> None:
        """Close the open sockets of revoked login sessions (after their revoke committed)."""
        for login_id in login_session_ids:
            await self.live.close_where(
                reason, reason_code=CloseReason.REVOKED, login_session_id=login_id
            )


async def _store_login(session: AsyncSession, row: LoginSession, user_id: str) -> None:
    """Add a new login session and stamp the user's ``lastLoginAt`` with its start."""
    session.add(row)
    db_user = await session.get(User, user_id)
    if db_user is not None:
        db_user.last_login_at = row.created_at
        session.add(db_user)
