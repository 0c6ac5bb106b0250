"""Who is asking and what a login produced: value types shared by every layer.

``Caller`` and ``ClientInfo`` describe the request; ``IssuedSession`` is what a
successful login hands back. Exported from ``hostgate``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .db.models.identity import LoginSession
from .timefmt import as_utc, utcnow

API_TOKEN_SESSION = "apitoken:"
"""How a caller authenticated by a personal API token names its "login session":
``apitoken:<token id>``. Tickets, live sessions and socket closing use it as they use a
login session id, so revoking the token closes what it opened."""


@dataclass(frozen=True)
class ClientInfo:
    """Where a request came from."""

    ip_address: str = ""
    user_agent: str = ""
    browser: str = "Unknown"
    os: str = "Unknown"


@dataclass(frozen=True)
class Caller:
    """The authenticated caller of one request; permissions are read live each time."""

    user_id: str
    username: str
    display_name: str
    role_id: str
    role_name: str
    permissions: frozenset[str]
    login_session_id: str | None
    ip_address: str = ""
    user_agent: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    pending: str | None = None
    """A step the user must take before anything else: ``password_change`` or
    ``mfa_enrollment`` (until then the API answers 403 with that step's code), or None."""

    def can(self, permission: str) -> bool:
        """True when the caller's role holds the permission."""
        return permission in self.permissions

    @property
    def api_token_id(self) -> str | None:
        """The personal API token this caller authenticated with, or None (a login)."""
        key = self.login_session_id
        if key is not None and key.startswith(API_TOKEN_SESSION):
            return key[len(API_TOKEN_SESSION) :]
        return None


@dataclass(frozen=True)
class IssuedSession:
    """A fresh session token and its row."""

    token: str
    session: LoginSession

    @property
    def max_age(self) -> int:
        """Seconds until the session expires (the cookie's ``Max-Age``)."""
        return max(0, int((as_utc(self.session.expires_at) - utcnow()).total_seconds()))


@dataclass(frozen=True)
class SignedIn:
    """A completed login (``logins.complete_login``): the session and who holds it."""

    issued: IssuedSession
    user_id: str
    username: str
    role: str


@dataclass(frozen=True)
class SecondStepDue:
    """A correct first factor for an account with a second step due: the step's token.

    ``token`` is the ``mfaToken`` (5 minutes, single use); ``methods`` the steps the
    account may answer with (``totp`` first when it has it).
    """

    token: str
    methods: tuple[str, ...] = ("totp",)

    @property
    def method(self) -> str:
        """The method offered first."""
        return self.methods[0]


@dataclass(frozen=True)
class LoginOutcome:
    """What a first factor produced (``logins.after_first_factor``): a session, or a step due.

    Exactly one of ``signed_in`` and ``challenge`` is set.
    """

    signed_in: SignedIn | None = None
    challenge: SecondStepDue | None = None
