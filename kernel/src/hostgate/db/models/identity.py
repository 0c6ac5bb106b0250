"""Users, roles, login sessions, trusted devices and login-method credentials."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Column, ForeignKey, Index, String
from sqlmodel import Field, SQLModel

from ...timefmt import utcnow
from ..types import JSONText, Sealed, UTCDateTime, new_id


class Role(SQLModel, table=True):
    """A named set of permissions; built-in roles cannot be renamed or deleted."""

    __tablename__ = "roles"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    name: str = Field(max_length=200, sa_column_kwargs={"unique": True})
    description: str = Field(default="", max_length=1000)
    is_builtin: bool = False
    permissions: list[str] = Field(default_factory=list, sa_type=JSONText)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class User(SQLModel, table=True):
    """A person who can log in."""

    __tablename__ = "users"
    __table_args__ = (Index("ix_users_provider", "auth_provider", "provider_id", unique=True),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    username: str = Field(max_length=200, sa_column_kwargs={"unique": True})
    username_key: str = Field(max_length=200, sa_column_kwargs={"unique": True})
    display_name: str = Field(default="", max_length=200)
    email: str = Field(default="", max_length=320)
    avatar_text: str = Field(default="", max_length=16)
    password_hash: str | None = Field(default=None)
    role_id: str = Field(
        sa_column=Column(String(64), ForeignKey("roles.id"), nullable=False, index=True)
    )
    auth_provider: str = Field(default="local", max_length=32)
    provider_id: str | None = Field(default=None, max_length=512)
    failed_login_count: int = 0
    locked_until: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_login_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    mfa_enabled: bool = False
    # suspended: no sign-in by any method until an administrator resumes the account
    suspended: bool = False
    # an administrator set the password: the user changes it before anything else
    must_change_password: bool = False
    mfa_secret: str | None = Field(default=None, sa_type=Sealed)
    mfa_pending_secret: str | None = Field(default=None, sa_type=Sealed)
    mfa_last_step: int | None = None
    dismissed_warnings: list[str] = Field(default_factory=list, sa_type=JSONText)
    ssh_prefs: dict[str, Any] = Field(default_factory=dict, sa_type=JSONText)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class UserInvite(SQLModel, table=True):
    """A single-use link that lets a new user set their own password.

    Only the SHA-256 of the link's secret is stored; ``used_at``/``revoked_at`` end it.
    """

    __tablename__ = "user_invites"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    user_id: str = Field(
        sa_column=Column(
            String(64), ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    token_hash: str = Field(max_length=64, sa_column_kwargs={"unique": True})
    created_by: str | None = Field(default=None, max_length=64)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)
    used_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class LoginSession(SQLModel, table=True):
    """One issued session token; revoking the row revokes the token."""

    __tablename__ = "login_sessions"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    user_id: str = Field(
        sa_column=Column(
            String(64), ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    method: str = Field(default="local", max_length=32)
    browser: str = Field(default="Unknown", max_length=64)
    os: str = Field(default="Unknown", max_length=64)
    ip_address: str = Field(default="", max_length=64)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    last_used_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    revoke_reason: str | None = Field(default=None, max_length=64)


class TrustedDevice(SQLModel, table=True):
    """A browser that may skip the TOTP step until ``expires_at``."""

    __tablename__ = "trusted_devices"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    user_id: str = Field(
        sa_column=Column(
            String(64), ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    token_hash: str = Field(max_length=128, sa_column_kwargs={"unique": True})
    browser: str = Field(default="Unknown", max_length=64)
    os: str = Field(default="Unknown", max_length=64)
    ip_address: str = Field(default="", max_length=64)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)


class AuthCredential(SQLModel, table=True):
    """A credential a login pack keeps for a user (e.g. a passkey)."""

    __tablename__ = "auth_credentials"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    user_id: str = Field(
        sa_column=Column(
            String(64), ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    kind: str = Field(max_length=32)
    name: str = Field(default="", max_length=200)
    credential_id: str = Field(max_length=1024, sa_column_kwargs={"unique": True})
    data: dict[str, Any] = Field(default_factory=dict, sa_type=JSONText)
    sign_count: int = 0
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    last_used_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class ApiToken(SQLModel, table=True):
    """A personal API token: a named, expiring bearer secret.

    It holds a subset of its owner's permissions. Only the SHA-256 of the secret is stored.
    """

    __tablename__ = "api_tokens"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    user_id: str = Field(
        sa_column=Column(
            String(64), ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    name: str = Field(max_length=100)
    token_hash: str = Field(max_length=64, sa_column_kwargs={"unique": True})
    prefix: str = Field(max_length=16)
    permissions: list[str] = Field(default_factory=list, sa_type=JSONText)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)
    last_used_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_used_ip: str = Field(default="", max_length=64)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
