"""Passkeys at rest: rows of the kernel's ``auth_credentials`` table with ``kind = "passkey"``."""

from __future__ import annotations

from typing import Any

from hostgate import AuthCredential, Conflict, User, iso, utcnow
from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, func, select
from sqlmodel.ext.asyncio.session import AsyncSession

from .ceremonies import NewPasskey, StoredPasskey

KIND = "passkey"


def public_view(row: AuthCredential) -> dict[str, Any]:
    """The listing shape: no key material."""
    return {
        "id": row.id,
        "name": row.name,
        "createdAt": iso(row.created_at),
        "lastUsedAt": iso(row.last_used_at) if row.last_used_at else None,
    }


def stored(row: AuthCredential) -> StoredPasskey:
    """What verification needs from a row."""
    data = row.data or {}
    return StoredPasskey(
        credential_id=row.credential_id,
        public_key=str(data.get("publicKey", "")),
        sign_count=int(row.sign_count),
        transports=tuple(str(t) for t in data.get("transports") or ()),
    )


class PasskeyStore:
    """Reads and writes passkey rows through the kernel's database."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def for_user(self, user_id: str) -> list[AuthCredential]:
        """A user's passkeys, oldest first."""
        query = (
            select(AuthCredential)
            .where(AuthCredential.user_id == user_id, AuthCredential.kind == KIND)
            .order_by(col(AuthCredential.created_at))
        )
        async with self.kernel.db.session() as session:
            return list((await session.exec(query)).all())

    async def count(self, user_id: str) -> int:
        """How many passkeys a user has."""
        query = select(func.count()).where(
            AuthCredential.user_id == user_id, AuthCredential.kind == KIND
        )
        async with self.kernel.db.session() as session:
            return int((await session.exec(query)).one())

    async def get(self, passkey_id: str, user_id: str) -> AuthCredential | None:
        """One of the user's passkeys by its hostgate id."""
        async with self.kernel.db.session() as session:
            row = await session.get(AuthCredential, passkey_id)
        if row is None or row.kind != KIND or row.user_id != user_id:
            return None
        return row

    async def by_credential_id(self, credential_id: str) -> AuthCredential | None:
        """The passkey an assertion names."""
        query = select(AuthCredential).where(
            AuthCredential.credential_id == credential_id, AuthCredential.kind == KIND
        )
        async with self.kernel.db.session() as session:
            return (await session.exec(query)).first()

    async def add(
        self, session: AsyncSession, user_id: str, name: str, passkey: NewPasskey
    ) -> AuthCredential:
        """Add a verified registration to ``session``; 409 when it is already registered.

        The caller commits (together with its audit entry, in ``kernel.audit.atomic()``).
        """
        row = AuthCredential(
            user_id=user_id,
            kind=KIND,
            name=name,
            credential_id=passkey.credential_id,
            data=passkey.data,
            sign_count=passkey.sign_count,
        )
        session.add(row)
        try:
            await session.flush()
        except IntegrityError:
            raise Conflict("This passkey is already registered", code="passkey_exists") from None
        return row

    async def rename(self, session: AsyncSession, row: AuthCredential, name: str) -> None:
        """Give a passkey a new name in ``session`` (the caller commits)."""
        await session.exec(
            update(AuthCredential).where(col(AuthCredential.id) == row.id).values(name=name)
        )

    async def delete(self, session: AsyncSession, row: AuthCredential) -> None:
        """Remove a passkey in ``session`` (the caller commits)."""
        current = await session.get(AuthCredential, row.id)
        if current is not None:
            await session.delete(current)

    async def record_use(self, row: AuthCredential, new_count: int) -> bool:
        """Advance the sign counter only if nobody else used the passkey meanwhile."""
        async with self.kernel.db.session() as session:
            result = await session.exec(
                update(AuthCredential)
                .where(
                    col(AuthCredential.id) == row.id,
                    col(AuthCredential.sign_count) == row.sign_count,
                )
                .values(sign_count=new_count, last_used_at=utcnow())
            )
            await session.commit()
        return bool(result.rowcount == 1)  # type: ignore[attr-defined]

    async def user(self, user_id: str) -> User | None:
        """The user a passkey belongs to."""
        async with self.kernel.db.session() as session:
            return await session.get(User, user_id)
