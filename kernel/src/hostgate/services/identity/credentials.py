"""Credentials that login packs keep for users (passkeys, ...): the ``auth_credentials`` table.

Packs never write SQL: they read and change their credentials through
``kernel.credentials``. Changes take the open ``kernel.audit.atomic()`` batch,
so a credential and its audit entry are stored together or not at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, func, select
from typing_extensions import Unpack

from ...contract import DuplicateCredential, StoredCredential
from ...db.models.identity import AuthCredential, User
from ...timefmt import utcnow

if TYPE_CHECKING:
    from ...contract import AuditBatchAPI, NewCredential
    from ...db.engine import Database


def _snapshot(row: AuthCredential) -> StoredCredential:
    return StoredCredential(
        id=row.id,
        user_id=row.user_id,
        kind=row.kind,
        name=row.name,
        credential_id=row.credential_id,
        data=dict(row.data or {}),
        sign_count=int(row.sign_count),
        created_at=row.created_at,
        last_used_at=row.last_used_at,
    )


class Credentials:
    """The credential store: every query on ``auth_credentials`` lives here."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def for_user(self, user_id: str, kind: str) -> list[StoredCredential]:
        """A user's credentials of one kind, oldest first."""
        query = (
            select(AuthCredential)
            .where(AuthCredential.user_id == user_id, AuthCredential.kind == kind)
            .order_by(col(AuthCredential.created_at))
        )
        async with self.db.session() as session:
            return [_snapshot(row) for row in (await session.exec(query)).all()]

    async def count(self, user_id: str, kind: str) -> int:
        """How many credentials of one kind a user has."""
        query = select(func.count()).where(
            AuthCredential.user_id == user_id, AuthCredential.kind == kind
        )
        async with self.db.session() as session:
            return int((await session.exec(query)).one())

    async def get(self, id: str, *, user_id: str, kind: str) -> StoredCredential | None:
        """One of a user's credentials by its hostgate id (None if not theirs or not ``kind``)."""
        async with self.db.session() as session:
            row = await session.get(AuthCredential, id)
        if row is None or row.kind != kind or row.user_id != user_id:
            return None
        return _snapshot(row)

    async def find(self, kind: str, credential_id: str) -> StoredCredential | None:
        """The credential of ``kind`` with this authenticator-chosen id."""
        query = select(AuthCredential).where(
            AuthCredential.credential_id == credential_id, AuthCredential.kind == kind
        )
        async with self.db.session() as session:
            row = (await session.exec(query)).first()
        return _snapshot(row) if row is not None else None

    async def add(
        self, batch: AuditBatchAPI, **credential: Unpack[NewCredential]
    ) -> StoredCredential:
        """Add a credential in ``batch`` (stored by its commit); DuplicateCredential if known."""
        row = AuthCredential(
            user_id=credential["user_id"],
            kind=credential["kind"],
            name=credential["name"],
            credential_id=credential["credential_id"],
            data=dict(credential["data"]),
            sign_count=credential.get("sign_count", 0),
        )
        batch.session.add(row)
        try:
            await batch.session.flush()
        except IntegrityError:
            raise DuplicateCredential(credential["credential_id"]) from None
        return _snapshot(row)

    async def rename(self, batch: AuditBatchAPI, credential: StoredCredential, name: str) -> None:
        """Give a credential a new name in ``batch``."""
        await batch.session.exec(
            update(AuthCredential).where(col(AuthCredential.id) == credential.id).values(name=name)
        )

    async def delete(self, batch: AuditBatchAPI, credential: StoredCredential) -> None:
        """Remove a credential in ``batch``."""
        current = await batch.session.get(AuthCredential, credential.id)
        if current is not None:
            await batch.session.delete(current)

    async def record_use(self, credential: StoredCredential, sign_count: int) -> bool:
        """Store a new sign counter and the use time, only if nobody used it meanwhile.

        False when the stored counter is no longer ``credential.sign_count``
        (a concurrent login with the same credential won).
        """
        async with self.db.session() as session:
            result = await session.exec(
                update(AuthCredential)
                .where(
                    col(AuthCredential.id) == credential.id,
                    col(AuthCredential.sign_count) == credential.sign_count,
                )
                .values(sign_count=sign_count, last_used_at=utcnow())
            )
            await session.commit()
        return bool(result.rowcount == 1)  # type: ignore[attr-defined]

    async def owner(self, credential: StoredCredential) -> User | None:
        """The account a credential belongs to."""
        async with self.db.session() as session:
            return await session.get(User, credential.user_id)
