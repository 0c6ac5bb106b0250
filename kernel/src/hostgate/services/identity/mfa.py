"""TOTP (RFC 6238) with pyotp: secrets, QR codes, and codes that cannot be replayed."""

from __future__ import annotations

import base64
import hmac
import io
import time
from typing import TYPE_CHECKING

import pyotp
from sqlalchemy import or_, update
from sqlmodel import col

from ...db.models.identity import User

if TYPE_CHECKING:
    from ...db.engine import Database

DIGITS = 6
INTERVAL = 30
DRIFT_STEPS = 1
"""Codes of the previous and the next 30-second step are accepted too (clock drift)."""


def new_secret() -> str:
    """A fresh base32 secret (160 bits)."""
    return pyotp.random_base32()


def provisioning_uri(secret: str, username: str, issuer: str) -> str:
    """The ``otpauth://`` URI authenticator apps read from the QR code."""
    return pyotp.TOTP(secret, digits=DIGITS, interval=INTERVAL).provisioning_uri(
        name=username, issuer_name=issuer
    )


def qr_data_url(text: str) -> str:
    """A PNG QR code of ``text`` as a ``data:image/png;base64,...`` URL."""
    import qrcode  # only TOTP enrolment draws one: not imported at start
    from qrcode.image.pure import PyPNGImage

    image = qrcode.make(text, image_factory=PyPNGImage, box_size=6, border=2)
    buffer = io.BytesIO()
    image.save(buffer)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def matching_step(secret: str, code: str, now: float | None = None) -> int | None:
    """The time step whose code equals ``code`` (current step first), or None."""
    cleaned = "".join(code.split())
    if len(cleaned) != DIGITS or not cleaned.isdigit():
        return None
    totp = pyotp.TOTP(secret, digits=DIGITS, interval=INTERVAL)
    step = int((time.time() if now is None else now) // INTERVAL)
    candidates = [step] + [step + d for k in range(1, DRIFT_STEPS + 1) for d in (-k, k)]
    for candidate in candidates:
        if hmac.compare_digest(totp.generate_otp(candidate), cleaned):
            return candidate
    return None


async def accept_code(db: Database, user_id: str, secret: str, code: str) -> bool:
    """True when ``code`` is valid for ``secret`` and its step was never used before.

    The step is recorded in ``users.mfa_last_step`` with a conditional update, so
    the same code (or an older one) is refused even when two requests race.
    """
    step = matching_step(secret, code)
    if step is None:
        return False
    statement = (
        update(User)
        .where(
            col(User.id) == user_id,
            or_(col(User.mfa_last_step).is_(None), col(User.mfa_last_step) < step),
        )
        .values(mfa_last_step=step)
    )
    async with db.session() as session:
        result = await session.exec(statement)
        await session.commit()
    return bool(result.rowcount == 1)
