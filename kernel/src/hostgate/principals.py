"""Who is asking and what a login produced: value types shared by every layer.

``Caller`` and ``ClientInfo`` describe the request; ``IssuedSession`` is what a
successful login hands back. Exported from ``hostgate``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .db.models.identity import LoginSession
from .timefmt import as_utc, utcnow


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

    def can(self, permission: str) -> bool:
        """True when the caller's role holds the permission."""
        return permission in self.permissions


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
