"""Invitations to join a live terminal, kept in ``session_invitations``.

The owner of a running terminal invites a user as an observer or a participant. The
invitation is a database row, so every node sees it and it outlives a restart of
the node that made it. It is used once: the invited user's join takes it (a
conditional update, so two joins at once cannot both use it), and the watch it
opened stays allowed while the invitation is not revoked. Unused, it expires after
``minutes`` (30 by default); the owner revokes it (or removes the user), which also
ends a watch it opened. Each change nudges the invited user's ``/ws/events`` sockets
(topic ``session-invitations``): the app fetches ``GET /sessions/invitations`` and
offers "Join".
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from sqlalchemy import or_, update
from sqlmodel import col, select

from ...db.models.invitations import SessionInvitation
from ...errors import InvalidInput, NotFound
from ...timefmt import as_utc, utcnow

if TYPE_CHECKING:
    from ...db.engine import Database
    from ..events import UserEvents

TOPIC = "session-invitations"
"""The ``/ws/events`` topic an invited user (and the owner) is nudged with."""
DEFAULT_MINUTES = 30
MAX_MINUTES = 24 * 60


def is_open(row: SessionInvitation) -> bool:
    """Whether the invitation can still be used (not used, revoked or expired)."""
    return row.used_at is None and row.revoked_at is None and as_utc(row.expires_at) > utcnow()


class SessionInvitations:
    """Make, use, revoke and list the owners' invitations (``kernel.live_view.invitations``)."""

    def __init__(self, db: Database, events: UserEvents) -> None:
        self.db = db
        self.events = events

    async def create(
        self,
        *,
        session_id: str,
        owner_id: str,
        owner_username: str,
        user_id: str,
        username: str,
        mode: str,
        connection_name: str,
        protocol: str,
        minutes: int = DEFAULT_MINUTES,
    ) -> SessionInvitation:
        """A new invitation; an open one of the same user to the same session is replaced."""
        if not 1 <= minutes <= MAX_MINUTES:
            raise InvalidInput(f"minutes must be 1 to {MAX_MINUTES}")
        now = utcnow()
        row = SessionInvitation(
            session_id=session_id,
            owner_id=owner_id,
            owner_username=owner_username,
            user_id=user_id,
            username=username,
            mode=mode,
            connection_name=connection_name[:200],
            protocol=protocol[:32],
            created_at=now,
            expires_at=now + timedelta(minutes=minutes),
        )
        async with self.db.session() as session:
            await session.exec(
                update(SessionInvitation)
                .where(
                    col(SessionInvitation.session_id) == session_id,
                    col(SessionInvitation.user_id) == user_id,
                    col(SessionInvitation.used_at).is_(None),
                    col(SessionInvitation.revoked_at).is_(None),
                )
                .values(revoked_at=now)
            )
            session.add(row)
            await session.commit()
            await session.refresh(row)
        self._nudge(row)
        return row

    async def standing(self, session_id: str, user_id: str) -> SessionInvitation | None:
        """The newest open invitation of ``user_id`` to ``session_id``, or None."""
        async with self.db.session() as session:
            rows = (
                await session.exec(
                    select(SessionInvitation)
                    .where(
                        col(SessionInvitation.session_id) == session_id,
                        col(SessionInvitation.user_id) == user_id,
                        col(SessionInvitation.used_at).is_(None),
                        col(SessionInvitation.revoked_at).is_(None),
                    )
                    .order_by(col(SessionInvitation.created_at).desc())
                )
            ).all()
        return next((row for row in rows if is_open(row)), None)

    async def use(self, row: SessionInvitation) -> bool:
        """Take the invitation for a join; False when it was used, revoked or expired first."""
        now = utcnow()
        async with self.db.session() as session:
            result = await session.exec(
                update(SessionInvitation)
                .where(
                    col(SessionInvitation.id) == row.id,
                    col(SessionInvitation.used_at).is_(None),
                    col(SessionInvitation.revoked_at).is_(None),
                    col(SessionInvitation.expires_at) > now,
                )
                .values(used_at=now)
            )
            await session.commit()
        taken = bool(result.rowcount == 1)
        if taken:
            self._nudge(row)
        return taken

    async def revoked(self, invitation_id: str) -> bool:
        """Whether the invitation was revoked (or is gone): a watch it opened must end."""
        async with self.db.session() as session:
            row = await session.get(SessionInvitation, invitation_id)
        return row is None or row.revoked_at is not None

    async def get(self, invitation_id: str) -> SessionInvitation | None:
        """One invitation by id."""
        async with self.db.session() as session:
            return await session.get(SessionInvitation, invitation_id)

    async def revoke(self, invitation: SessionInvitation) -> bool:
        """Revoke one invitation (used or not); False when it already was."""
        return await self._revoke(invitation)

    async def revoke_for(self, session_id: str, user_id: str) -> list[SessionInvitation]:
        """Revoke every invitation of ``user_id`` to ``session_id``; those revoked."""
        async with self.db.session() as session:
            rows = (
                await session.exec(
                    select(SessionInvitation).where(
                        col(SessionInvitation.session_id) == session_id,
                        col(SessionInvitation.user_id) == user_id,
                        col(SessionInvitation.revoked_at).is_(None),
                    )
                )
            ).all()
        revoked = []
        for row in rows:
            if await self._revoke(row):
                revoked.append(row)
        return revoked

    async def _revoke(self, row: SessionInvitation) -> bool:
        async with self.db.session() as session:
            result = await session.exec(
                update(SessionInvitation)
                .where(
                    col(SessionInvitation.id) == row.id,
                    col(SessionInvitation.revoked_at).is_(None),
                )
                .values(revoked_at=utcnow())
            )
            await session.commit()
        revoked = bool(result.rowcount == 1)
        if revoked:
            self._nudge(row)
        return revoked

    async def listing(self, user_id: str) -> list[SessionInvitation]:
        """The open invitations made to ``user_id`` or by them, oldest first."""
        async with self.db.session() as session:
            rows = (
                await session.exec(
                    select(SessionInvitation)
                    .where(
                        or_(
                            col(SessionInvitation.user_id) == user_id,
                            col(SessionInvitation.owner_id) == user_id,
                        ),
                        col(SessionInvitation.used_at).is_(None),
                        col(SessionInvitation.revoked_at).is_(None),
                        col(SessionInvitation.expires_at) > utcnow(),
                    )
                    .order_by(col(SessionInvitation.created_at))
                )
            ).all()
        return list(rows)

    async def owned(self, owner_id: str, invitation_id: str) -> SessionInvitation:
        """The owner's invitation (404 for anyone else's, as for one that does not exist)."""
        row = await self.get(invitation_id)
        if row is None or row.owner_id != owner_id:
            raise NotFound("Invitation not found")
        return row

    def _nudge(self, row: SessionInvitation) -> None:
        self.events.notify(TOPIC, users=[row.user_id, row.owner_id])
