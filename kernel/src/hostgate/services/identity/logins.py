"""The one login flow every method shares: ``kernel.logins``.

Local passwords, TOTP, LDAP, OIDC and passkeys all go through the same steps, so
limits, lockout, audit and session issuing behave identically:

1. ``limit_ip(client)``: the per-IP login limit (30 per 15 minutes, 429).
2. ``await check_not_locked(user, client)``: a locked account gets 429 until
   ``lockedUntil``, whatever the password.
3. the method checks the credential; on failure ``await record_failure(...)``
   and ``raise logins.invalid_credentials()``.
   After a first factor (a local or directory password, an SSO callback) the
   method calls ``after_first_factor``: an account with a second step due (TOTP,
   or a pack's ``SecondFactor`` such as a passkey, see ``second_factors``) gets an
   ``mfaToken`` instead of a session; the step's route calls ``begin_second_step``,
   then ``second_step_failed`` or ``finish_second_step``.
4. ``await complete_login(user, client, method=...)`` resets the failure count,
   issues the session and audits ``auth.login``; it returns a ``SignedIn``. A
   suspended account is refused here (403 ``account_suspended``), only after the
   credential was verified, so the answer tells a wrong password nothing.
   Answer with ``signed_in_response(signed)`` (the JSON body and the cookie).

External identities (LDAP, OIDC) become local user rows through
``await provision_external(...)``.
"""

from __future__ import annotations

import hashlib
import logging
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, delete, select
from sqlmodel.ext.asyncio.session import AsyncSession

from ...db.models.identity import Role, TrustedDevice, User
from ...errors import NotAuthenticated, PermissionDenied, RateLimited
from ...loginnames import CONTROL_CHARACTERS, check_login_name
from ...permissions import USER_ROLE
from ...principals import LoginOutcome, SecondStepDue, SignedIn
from ...security.passwords import verify_password
from ...security.ratelimit import LOGIN_PER_IP, MFA_PER_USER
from ...timefmt import as_utc, iso, utcnow
from . import mfa
from .identity import ClientInfo
from .onboarding import mfa_required, pending_error, pending_step
from .second_factors import TOTP
from .usernames import clean_external, lookup_keys, username_key

if TYPE_CHECKING:
    from ...contract import Account
    from ...db.engine import Database
    from ...security.ratelimit import RateLimiter
    from ...security.secretbox import SecretBox
    from ..audit.audit import AuditLog
    from ..settings import Settings
    from .identity import Identity
    from .second_factors import SecondFactors

log = logging.getLogger("hostgate.logins")

LOGIN_IP_BUCKET = "login_ip"
MFA_LOGIN_BUCKET = "mfa_login"
INVALID_CREDENTIALS = "Invalid username or password"
INVALID_MFA_TOKEN = "Invalid or expired MFA token"
ACCOUNT_SUSPENDED = "This account is suspended"
MFA_LIMIT_MESSAGE = "Too many MFA attempts. Please try again later."
DOOR_NEEDS_TOTP = (
    "This account's second step is one the SSH front door cannot ask for (a passkey): "
    "sign in with the hostgate browser app, or set up an authenticator app"
)
TRUSTED_DEVICE_LIFETIME = timedelta(days=30)
MAX_PHANTOMS = 10_000
USERNAME_MAX = 200


@dataclass
class _Phantom:
    """Failure bookkeeping for a username that has no account (kept in memory)."""

    count: int = 0
    locked_until: datetime | None = None


def clean_username(text: str) -> str:
    """A name from an identity provider as stored: control characters removed, trimmed, capped.

    Never for a name someone typed at a login: ``check_login_name`` refuses those.
    """
    return CONTROL_CHARACTERS.sub("", text).strip()[:USERNAME_MAX]


def device_hash(value: str) -> str:
    """How a trusted-device cookie is stored (SHA-256 hex)."""
    return hashlib.sha256(value.encode()).hexdigest()


class Logins:
    """Login steps shared by every login method."""

    def __init__(
        self,
        *,
        db: Database,
        secrets: SecretBox,
        settings: Settings,
        audit: AuditLog,
        identity: Identity,
        limits: RateLimiter,
        factors: SecondFactors,
    ) -> None:
        self.db = db
        self.factors = factors
        self.secrets = secrets
        self.settings = settings
        self.audit = audit
        self.identity = identity
        self.limits = limits
        self._phantoms: OrderedDict[str, _Phantom] = OrderedDict()
        self._used_mfa_tokens: dict[str, float] = {}

    # -- limits and lockout -------------------------------------------------

    async def limit_ip(self, client: ClientInfo) -> None:
        """Count one login attempt for the client IP; 429 + Retry-After past 30 / 15 min."""
        await self.limits.hit(
            LOGIN_IP_BUCKET,
            client.ip_address or "-",
            LOGIN_PER_IP,
            "Too many login attempts. Please try again later.",
        )

    @staticmethod
    def invalid_credentials() -> NotAuthenticated:
        """The one error for a wrong password or an unknown username (raise it)."""
        return NotAuthenticated(INVALID_CREDENTIALS, code="invalid_credentials")

    def _lockout_settings(self) -> tuple[int, timedelta]:
        attempts = int(self.settings.get("security.max_login_attempts"))
        minutes = float(self.settings.get("security.lockout_duration_minutes"))
        return attempts, timedelta(minutes=minutes)

    def forget_phantoms(self) -> None:
        """Forget the failed attempts and lockouts of unknown usernames (a test gateway's reset)."""
        self._phantoms.clear()

    def _phantom(self, username: str) -> _Phantom:
        key = clean_username(username).lower()
        phantom = self._phantoms.pop(key, None) or _Phantom()
        self._phantoms[key] = phantom
        while len(self._phantoms) > MAX_PHANTOMS:
            self._phantoms.popitem(last=False)
        return phantom

    async def check_not_locked(
        self, user: Account | None, client: ClientInfo, *, username: str | None = None
    ) -> None:
        """Raise 429 (Retry-After until ``lockedUntil``) when the account is locked.

        For an unknown username pass ``user=None`` and ``username``: unknown names
        lock exactly like real accounts, so lockout reveals nothing.
        """
        now = utcnow()
        if user is not None:
            locked_until = as_utc(user.locked_until) if user.locked_until else None
            name = user.username
        else:
            if not username:
                return
            phantom = self._phantoms.get(clean_username(username).lower())
            locked_until = phantom.locked_until if phantom else None
            name = clean_username(username)
        if locked_until is None or locked_until <= now:
            return
        await self.audit.record(
            "auth.locked_account_attempt",
            user_id=user.id if user else None,
            username=name,
            display_name=user.display_name if user else "",
            target=name,
            details={"lockedUntil": iso(locked_until)},
            ip_address=client.ip_address,
        )
        raise RateLimited(
            f"Account locked until {iso(locked_until)}",
            retry_after=math.ceil((locked_until - now).total_seconds()),
            code="account_locked",
        )

    async def record_failure(
        self,
        user: Account | None,
        username: str,
        client: ClientInfo,
        *,
        reason: str,
        provider: str = "local",
    ) -> bool:
        """Count a failed login; lock at ``security.max_login_attempts``. True when it locked.

        Audits ``auth.login_failed`` (and ``auth.account_locked`` when the account
        locks) in the commit that stores the count. Unknown usernames (``user=None``)
        are counted in memory the same way.
        """
        attempts, duration = self._lockout_settings()
        now = utcnow()
        locked_until: datetime | None = None
        # the failure count and any lock commit with their audit entries
        async with self.audit.atomic() as batch:
            if user is not None:
                count, locked_until = await self._count_failure(
                    batch.session, user.id, now, attempts, duration
                )
                name, display = user.username, user.display_name
            elif not clean_username(username):
                # No name to hold a count against (e.g. a forged SSO callback): this attempt only.
                count, name, display = 1, "", ""
            else:
                phantom = self._phantom(username)
                if phantom.locked_until is not None and phantom.locked_until <= now:
                    phantom.count, phantom.locked_until = 0, None
                phantom.count += 1
                count = phantom.count
                if count >= attempts and phantom.locked_until is None:
                    phantom.locked_until = locked_until = now + duration
                name, display = clean_username(username), ""
            common: dict[str, Any] = {
                "user_id": user.id if user else None,
                "username": name,
                "display_name": display,
                "target": name,
                "ip_address": client.ip_address,
            }
            batch.record(
                "auth.login_failed",
                details={"reason": reason, "provider": provider, "failedCount": count},
                **common,
            )
            if locked_until is not None:
                batch.record(
                    "auth.account_locked",
                    details={
                        "reason": "too_many_failed_logins",
                        "failedCount": count,
                        "lockedUntil": iso(locked_until),
                        "userExists": user is not None,
                    },
                    **common,
                )
        return locked_until is not None

    @staticmethod
    async def _count_failure(
        session: AsyncSession, user_id: str, now: datetime, attempts: int, duration: timedelta
    ) -> tuple[int, datetime | None]:
        """Increment in ``session`` (not committed); ``(count, locked_until if this locked)``."""
        expired = (
            update(User)
            .where(col(User.id) == user_id, col(User.locked_until) <= now)
            .values(failed_login_count=0, locked_until=None)
        )
        await session.exec(expired)
        increment = (
            update(User)
            .where(col(User.id) == user_id)
            .values(failed_login_count=User.failed_login_count + 1)
        )
        await session.exec(increment)
        row = (
            await session.exec(
                select(User.failed_login_count, User.locked_until).where(User.id == user_id)
            )
        ).first()
        count = int(row[0]) if row else 0
        locked_until = None
        if row is not None and count >= attempts and row[1] is None:
            locked_until = now + duration
            await session.exec(
                update(User).where(col(User.id) == user_id).values(locked_until=locked_until)
            )
        return count, locked_until

    async def reset_failures(self, user_id: str) -> None:
        """Forget failed logins and any lock (successful login, admin unlock)."""
        async with self.db.session() as session:
            await session.exec(_reset_failures(user_id))
            await session.commit()

    # -- success --------------------------------------------------------------

    async def complete_login(
        self,
        user: Account,
        client: ClientInfo,
        *,
        method: str,
        details: dict[str, Any] | None = None,
        door: bool = False,
    ) -> SignedIn:
        """Reset failures, issue the session, audit ``auth.login``; who signed in with what.

        The three are stored together or not at all: a login whose audit entry cannot
        be written gets no session and leaves the failure count as it was. Answer the
        request with ``signed_in_response``. A ``door`` (the SSH front door) cannot walk
        a person through a step to take first (``onboarding``): such an account is
        refused there with 403 and a pointer to the browser app.
        """
        self._phantoms.pop(user.username.lower(), None)
        role_name, _ = await self.identity.role_permissions(user.role_id)
        async with self.audit.atomic() as batch:
            # read in the login's own transaction: a suspension committed a moment ago counts
            await self.check_not_suspended(user, session=batch.session)
            if door:
                await self._check_no_pending_step(user.id, role_name, batch.session)
            await batch.session.exec(_reset_failures(user.id))
            issued = await self.identity.issue_session(
                user, client, method=method, session=batch.session
            )
            batch.record(
                "auth.login",
                user_id=user.id,
                username=user.username,
                display_name=user.display_name,
                target=user.username,
                details={"method": method, **(details or {})},
                ip_address=client.ip_address,
            )
        return SignedIn(issued, user.id, user.username, role_name)

    async def _check_no_pending_step(
        self, user_id: str, role_name: str, session: AsyncSession
    ) -> None:
        """Raise the door's 403 when the user has a step to take in the browser first."""
        row = await session.get(User, user_id)
        if row is None:
            return
        step = pending_step(
            self.settings,
            must_change_password=bool(row.must_change_password),
            mfa_enabled=await self.factors.set_up(
                row, totp=bool(row.mfa_enabled and row.mfa_secret), role_name=role_name
            ),
            role_name=role_name,
        )
        if step is not None:
            raise pending_error(step, door=True)

    async def check_not_suspended(self, user: Account, *, session: AsyncSession) -> None:
        """Raise 403 ``account_suspended`` when an administrator suspended the account."""
        query = select(User.suspended).where(col(User.id) == user.id)
        if (await session.exec(query)).first():
            raise PermissionDenied(ACCOUNT_SUSPENDED, code="account_suspended")

    # -- users ----------------------------------------------------------------

    async def get_user(self, user_id: str) -> User | None:
        """A user by id (None when there is no such user)."""
        async with self.db.session() as session:
            return await session.get(User, user_id)

    async def find_user(self, username: str, *, provider: str | None = "local") -> User | None:
        """A user by username (case-insensitive); ``provider`` None matches any.

        A name with control characters is refused (``check_login_name``).
        """
        if not check_login_name(username).strip():
            return None
        query = select(User).where(col(User.username_key).in_(lookup_keys(username)))
        if provider is not None:
            query = query.where(User.auth_provider == provider)
        async with self.db.session() as session:
            return (await session.exec(query)).first()

    async def provision_external(
        self,
        provider: str,
        provider_id: str,
        username: str,
        display_name: str,
        email: str,
        role_name: str | None = None,
    ) -> User:
        """The local user for an external identity, created on first login.

        Matched on ``(provider, provider_id)``. An existing user gets display name
        and email refreshed (the role is never re-synced). A new user gets a unique
        username (``_<provider>`` and a number appended on a clash), the role
        ``role_name`` (default ``user``) and no password.
        """
        display_name = clean_username(display_name)
        email = clean_username(email)[:320]
        for _ in range(3):
            existing = await self.find_external(provider, provider_id)
            if existing is not None:
                return await self._refresh_external(existing, display_name, email)
            try:
                return await self._create_external(
                    provider, provider_id, username, display_name, email, role_name
                )
            except IntegrityError:
                continue
        existing = await self.find_external(provider, provider_id)
        if existing is None:
            raise PermissionDenied("Could not create a local account for this login")
        return existing

    async def find_external(self, provider: str, provider_id: str) -> User | None:
        """The user linked to an external identity (``provider``, ``provider_id``)."""
        query = select(User).where(User.auth_provider == provider, User.provider_id == provider_id)
        async with self.db.session() as session:
            return (await session.exec(query)).first()

    async def _refresh_external(self, user: User, display_name: str, email: str) -> User:
        changed = False
        if display_name and display_name != user.display_name:
            user.display_name, changed = display_name, True
        if email != user.email:
            user.email, changed = email, True
        if changed:
            user.updated_at = utcnow()
            async with self.db.session() as session:
                session.add(user)
                await session.commit()
        return user

    async def _create_external(
        self,
        provider: str,
        provider_id: str,
        username: str,
        display_name: str,
        email: str,
        role_name: str | None,
    ) -> User:
        # invisible and direction characters go; a name mixing scripts is not used
        base = clean_external(clean_username(username)) or clean_external(
            f"{provider}_{provider_id}"[:USERNAME_MAX]
        )
        base = base or f"{provider}_user"
        async with self.audit.atomic() as batch:
            session = batch.session
            role = (
                await session.exec(select(Role).where(Role.name == (role_name or USER_ROLE)))
            ).first()
            if role is None:
                role = (await session.exec(select(Role).where(Role.name == USER_ROLE))).one()
            taken = set(
                (
                    await session.exec(
                        select(User.username_key).where(
                            col(User.username_key).startswith(username_key(base))
                        )
                    )
                ).all()
            )
            chosen = base
            suffix = f"_{provider}"
            number = 1
            while username_key(chosen) in taken or chosen.lower() in taken:
                tail = suffix if number == 1 else f"{suffix}{number}"
                chosen = base[: USERNAME_MAX - len(tail)] + tail
                number += 1
            user = User(
                username=chosen,
                username_key=username_key(chosen),
                display_name=display_name or chosen,
                email=email,
                role_id=role.id,
                auth_provider=provider,
                provider_id=provider_id,
            )
            session.add(user)
            await session.flush()  # a concurrent first login raises IntegrityError here
            batch.record(
                "user.created",
                user_id=user.id,
                username=user.username,
                display_name=user.display_name,
                target=user.username,
                details={
                    "provider": provider,
                    "after": {
                        "username": user.username,
                        "displayName": user.display_name,
                        "email": user.email,
                        "role": role.name,
                    },
                },
            )
        return user

    # -- local password and TOTP ---------------------------------------------

    async def login_local(
        self,
        username: str,
        password: str,
        client: ClientInfo,
        device: str | None,
        *,
        details: dict[str, Any] | None = None,
        door: bool = False,
    ) -> LoginOutcome:
        """The local password step; a session, or an MFA challenge when a second step is due.

        A second step is due for an account with TOTP on, and for one in a role that
        requires two-step verification that holds a pack's step (a passkey); the
        challenge offers every step the account holds.

        ``details`` go into the ``auth.login`` entry (the SSH front door's ``via``);
        ``door`` as for ``complete_login``.
        """
        check_login_name(username)
        await self.limit_ip(client)
        if not self.settings.get("auth.local_enabled"):
            raise PermissionDenied("Local authentication is disabled", code="local_login_disabled")
        user = await self.find_user(username)
        await self.check_not_locked(user, client, username=username)
        ok = await verify_password(user.password_hash if user else None, password)
        if user is None or not ok:
            reason = "invalid_password" if user else "unknown_user"
            await self.record_failure(user, username, client, reason=reason)
            raise self.invalid_credentials()
        return await self.after_first_factor(
            user, client, method="local", details=details, device=device, door=door
        )

    async def after_first_factor(
        self,
        user: Account,
        client: ClientInfo,
        *,
        method: str,
        details: dict[str, Any] | None = None,
        device: str | None = None,
        door: bool = False,
    ) -> LoginOutcome:
        """A first factor checked out (a password, a directory bind, an SSO callback).

        The same decision for every method: a session when no second step is due; a
        ``challenge`` (the ``mfaToken``) when the account holds TOTP, or holds a pack's
        step (a passkey) in a role that requires two-step verification. A trusted
        ``device`` cookie skips the step. ``door``: the SSH front door, which asks for a
        TOTP code only (an account holding just a passkey is refused there with 403
        ``second_step_unavailable``). A suspended account gets 403 before any step.
        ``method`` and ``details`` go into the ``auth.login`` entry.
        """
        row = user if isinstance(user, User) else await self.get_user(user.id)
        if row is None:  # deleted since the credential was checked
            raise self.invalid_credentials()
        if row.suspended:  # before the second step: no code is asked of a suspended account
            raise PermissionDenied(ACCOUNT_SUSPENDED, code="account_suspended")
        methods = await self.second_step_methods(row)
        if methods:
            if device and await self.device_trusted(user.id, device):
                signed = await self.complete_login(
                    user,
                    client,
                    method=method,
                    details={**(details or {}), "mfa": True, "trustedDevice": True},
                    door=door,
                )
                return LoginOutcome(signed_in=signed)
            if door:
                if TOTP not in methods:
                    raise PermissionDenied(DOOR_NEEDS_TOTP, code="second_step_unavailable")
                methods = [TOTP]  # the door asks for a code and nothing else
            await self.reset_failures(user.id)
            return LoginOutcome(challenge=self.mfa_challenge(user, methods))
        return LoginOutcome(
            signed_in=await self.complete_login(
                user, client, method=method, details=details, door=door
            )
        )

    async def second_step_methods(self, user: User) -> list[str]:
        """The second steps asked of ``user`` after a password (empty: none is due)."""
        totp = bool(user.mfa_enabled and user.mfa_secret)
        if not totp:
            role_name, _ = await self.identity.role_permissions(user.role_id)
            if not mfa_required(self.settings, role_name):
                return []
        return await self.factors.held(user, totp=totp)

    async def second_factors(self, user: Account) -> list[str]:
        """Every second step ``user`` holds: ``totp`` when TOTP is on, then the packs'."""
        row = await self.get_user(user.id)
        if row is None:
            return []
        return await self.factors.held(row, totp=bool(row.mfa_enabled and row.mfa_secret))

    def mfa_challenge(self, user: Account, methods: Sequence[str] = (TOTP,)) -> SecondStepDue:
        """The second step's token after a correct first factor, naming the steps offered."""
        offered = tuple(methods)
        return SecondStepDue(self.identity.issue_mfa_token(user.id, offered), offered)

    def _mfa_claims(self, mfa_token: str) -> dict[str, Any]:
        try:
            claims = self.identity.decode(mfa_token, "mfa")
        except NotAuthenticated:
            raise NotAuthenticated(INVALID_MFA_TOKEN, code="invalid_mfa_token") from None
        if claims.get("jti") in self._used_mfa_tokens:
            raise NotAuthenticated(INVALID_MFA_TOKEN, code="invalid_mfa_token")
        return claims

    async def mfa_user(self, mfa_token: str) -> User:
        """The user an unused, unexpired ``mfaToken`` names (401 otherwise)."""
        claims = self._mfa_claims(mfa_token)
        async with self.db.session() as session:
            user = await session.get(User, claims["sub"])
        if user is None:
            raise NotAuthenticated(INVALID_MFA_TOKEN, code="invalid_mfa_token")
        return user

    def consume_mfa_token(self, mfa_token: str) -> None:
        """Mark an ``mfaToken`` used (call on success); a second use gets 401."""
        claims = self._mfa_claims(mfa_token)
        now = time.time()
        for jti in [j for j, exp in self._used_mfa_tokens.items() if exp < now]:
            self._used_mfa_tokens.pop(jti, None)
        self._used_mfa_tokens[str(claims.get("jti"))] = float(claims["exp"])

    async def begin_second_step(
        self, mfa_token: str, client: ClientInfo, *, method: str, attempt: bool = True
    ) -> User:
        """The user an ``mfaToken`` names, for an attempt at its second step ``method``.

        401 ``invalid_mfa_token`` when the token is unknown, expired, used or did not
        offer ``method``; counts one attempt (5 per 5 minutes per user, then 429); 429
        ``account_locked`` while the account is locked. ``attempt=False`` counts nothing
        (preparing the step, such as issuing a passkey challenge).
        """
        claims = self._mfa_claims(mfa_token)
        if method not in claims.get("mth", [TOTP]):
            raise NotAuthenticated(INVALID_MFA_TOKEN, code="invalid_mfa_token")
        if attempt:
            await self.limits.hit(
                MFA_LOGIN_BUCKET, str(claims["sub"]), MFA_PER_USER, MFA_LIMIT_MESSAGE
            )
        user = await self.mfa_user(mfa_token)
        await self.check_not_locked(user, client)
        return user

    async def second_step_failed(
        self, user: Account, client: ClientInfo, *, method: str, reason: str
    ) -> None:
        """Audit a wrong answer to the second step (``auth.login_failed``); raise your 401 after."""
        await self.audit.record(
            "auth.login_failed",
            user_id=user.id,
            username=user.username,
            display_name=user.display_name,
            target=user.username,
            details={"reason": reason, "provider": user.auth_provider, "secondFactor": method},
            ip_address=client.ip_address,
        )

    async def finish_second_step(
        self,
        mfa_token: str,
        user: Account,
        client: ClientInfo,
        *,
        method: str,
        details: dict[str, Any] | None = None,
        door: bool = False,
    ) -> SignedIn:
        """A right answer: the token is used up, the attempt count reset, the session issued.

        ``auth.login`` records the first factor's ``method`` (the account's provider:
        ``local``, ``ldap``, ``oidc``), ``mfa: true`` and ``secondFactor``.
        """
        self.consume_mfa_token(mfa_token)
        await self.limits.reset(MFA_LOGIN_BUCKET, user.id)
        provider = user.auth_provider
        first = {} if provider == "local" else {"provider": provider}
        return await self.complete_login(
            user,
            client,
            method=provider,
            details={**first, "mfa": True, "secondFactor": method, **(details or {})},
            door=door,
        )

    async def login_mfa(
        self,
        mfa_token: str,
        code: str,
        client: ClientInfo,
        *,
        details: dict[str, Any] | None = None,
        door: bool = False,
    ) -> SignedIn:
        """The TOTP step: 5 attempts per 5 minutes per user; the token is single use."""
        user = await self.begin_second_step(mfa_token, client, method=TOTP)
        secret = self.secrets.open_optional(user.mfa_secret) if user.mfa_enabled else None
        if not secret or not await mfa.accept_code(self.db, user.id, secret, code):
            await self.second_step_failed(user, client, method=TOTP, reason="invalid_mfa_code")
            raise NotAuthenticated("Invalid verification code", code="invalid_code")
        return await self.finish_second_step(
            mfa_token, user, client, method=TOTP, details=details, door=door
        )

    # -- trusted devices -------------------------------------------------------

    async def trust_device(self, user_id: str, client: ClientInfo) -> tuple[str, timedelta]:
        """A new trusted-device cookie value for a user, valid 30 days."""
        value = secrets.token_urlsafe(48)
        now = utcnow()
        async with self.db.session() as session:
            await session.exec(delete(TrustedDevice).where(col(TrustedDevice.expires_at) <= now))
            session.add(
                TrustedDevice(
                    user_id=user_id,
                    token_hash=device_hash(value),
                    browser=client.browser,
                    os=client.os,
                    ip_address=client.ip_address,
                    created_at=now,
                    expires_at=now + TRUSTED_DEVICE_LIFETIME,
                )
            )
            await session.commit()
        return value, TRUSTED_DEVICE_LIFETIME

    async def device_trusted(self, user_id: str, value: str) -> bool:
        """True when the cookie names an unexpired trusted device of this user."""
        query = select(TrustedDevice).where(
            TrustedDevice.token_hash == device_hash(value), TrustedDevice.user_id == user_id
        )
        async with self.db.session() as session:
            row = (await session.exec(query)).first()
        return row is not None and as_utc(row.expires_at) > utcnow()

    async def forget_devices(self, user_id: str) -> None:
        """Drop every trusted device of a user (MFA disabled, password reset)."""
        async with self.db.session() as session:
            await session.exec(delete(TrustedDevice).where(col(TrustedDevice.user_id) == user_id))
            await session.commit()


def _reset_failures(user_id: str) -> Any:
    """The statement that forgets a user's failed logins and lock."""
    return (
        update(User).where(col(User.id) == user_id).values(failed_login_count=0, locked_until=None)
    )
