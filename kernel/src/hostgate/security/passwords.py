"""argon2id password hashing, and the one strength rule every new password meets."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 1024
MIN_PASSWORD_SCORE = 1
"""zxcvbn's score 0 ("very weak": under a thousand guesses) is refused; the browser's
meter (zxcvbn-ts, plugins/web/ui/src/lib/password.ts) refuses the same."""
_SCORED_LENGTH = 72  # zxcvbn's own limit; what follows cannot make a password weaker

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


def too_guessable(password: str, user_inputs: Iterable[str] = ()) -> bool:
    """Whether zxcvbn rates ``password`` very weak (a common password, name or pattern).

    ``user_inputs`` (the username, the display name) count against it, as in the
    browser's meter. The dictionaries load on the first call.
    """
    from zxcvbn import zxcvbn  # ~0.2 s of dictionaries: only where a password is set

    inputs = [text for text in user_inputs if text]
    return int(zxcvbn(password[:_SCORED_LENGTH], inputs)["score"]) < MIN_PASSWORD_SCORE
