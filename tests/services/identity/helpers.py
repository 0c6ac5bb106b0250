"""Helpers for the identity tests: HTTP login, DB pokes, audit reads (imported by the tests)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pyotp
from hostgate.db.models.audit import AuditEntry
from hostgate.db.models.identity import LoginSession, User
from hostgate.timefmt import utcnow
from sqlmodel import col, select

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
API = "/api/v1"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def login(client: Any, username: str, password: str, **kwargs: Any) -> Any:
    return await client.post(
        f"{API}/auth/login", json={"username": username, "password": password}, **kwargs
    )


async def login_token(client: Any, username: str, password: str) -> str:
    response = await login(client, username, password)
    assert response.status_code == 200, await response.get_json()
    return (await response.get_json())["token"]


async def audit_entries(kernel: Any, event_type: str | None = None) -> list[AuditEntry]:
    query = select(AuditEntry).order_by(col(AuditEntry.seq))
    if event_type:
        query = query.where(AuditEntry.event_type == event_type)
    async with kernel.db.session() as session:
        return list((await session.exec(query)).all())


async def get_user(kernel: Any, user_id: str) -> User:
    async with kernel.db.session() as session:
        user = await session.get(User, user_id)
    assert user is not None
    return user


async def age_sessions(kernel: Any, user_id: str, *, minutes: float = 0, expire: bool = False):
    """Move a user's login sessions back in time (idle) or past their expiry."""
    async with kernel.db.session() as session:
        query = select(LoginSession).where(LoginSession.user_id == user_id)
        rows = (await session.exec(query)).all()
        for row in rows:
            if minutes:
                row.last_used_at = utcnow() - timedelta(minutes=minutes)
            if expire:
                row.expires_at = utcnow() - timedelta(seconds=1)
            session.add(row)
        await session.commit()


async def enable_mfa(client: Any, token: str) -> pyotp.TOTP:
    """Set up and verify TOTP over HTTP; returns the authenticator."""
    response = await client.post(f"{API}/profile/mfa/setup", headers=bearer(token))
    assert response.status_code == 200
    secret = (await response.get_json())["secret"]
    totp = pyotp.TOTP(secret)
    response = await client.post(
        f"{API}/profile/mfa/verify", headers=bearer(token), json={"token": totp.now()}
    )
    assert response.status_code == 200, await response.get_json()
    return totp


def next_code(totp: pyotp.TOTP, steps: int = 1) -> str:
    """The code of a later 30-second step (accepted within the drift window)."""
    import time

    return totp.at(time.time() + 30 * steps)
