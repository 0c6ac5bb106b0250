"""argon2id password hashing."""

from __future__ import annotations

import asyncio

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 1024

_hasher = PasswordHasher(time_cost=2, memory_cost=19456, parallelism=1)
_DUMMY = _hasher.hash("hostgate-timing-equaliser")


def hash_password_sync(password: str) -> str:
    """Hash a password (blocking)."""
    return _hasher.hash(password)


async def hash_password(password: str) -> str:
    """Hash a password off the event loop."""
    return await asyncio.to_thread(_hasher.hash, password)


def _verify(stored: str | None, password: str) -> bool:
    try:
        return _hasher.verify(stored or _DUMMY, password) and stored is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


async def verify_password(stored: str | None, password: str) -> bool:
    """Check a password off the event loop; a missing hash still costs the same time."""
    return await asyncio.to_thread(_verify, stored, password)
