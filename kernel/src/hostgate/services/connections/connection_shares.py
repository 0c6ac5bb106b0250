"""Sharing a connection with users and roles, and ending access when a share goes.

``PUT /connections/:id/shares`` replaces the whole list (all valid or nothing);
``shared`` on the connection itself shares it with everyone. Whoever loses
access has their live sessions on the connection closed at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from ...closereasons import CloseReason
from ...db.models.connections import Connection, ConnectionShare
from ...db.models.identity import Role, User
from ...errors import ApiError, InvalidInput, PermissionDenied
from ..identity.usernames import lookup_keys
from ..sessions.live_sessions import NO_LONGER_SHARED

if TYPE_CHECKING:
    from ...db.engine import Database
    from ..audit.audit import AuditBatch, AuditLog
    from ..identity.identity import Caller
    from ..sessions.live_sessions import LiveSessions
    from .connections import Connections

EDIT_ANY = "connections.edit_any"
SHARE = "connections.share"
SHARE_TYPES = ("user", "role")
MAX_SHARES = 500


@dataclass(frozen=True)
class ShareView:
    """One share as the API shows it."""

    share_type: str
    target_id: str
    target_name: str
    created_at: datetime


class ConnectionShares:
    """Who a connection is shared with."""

    def __init__(
        self, connections: Connections, *, db: Database, audit: AuditLog, live: LiveSessions
    ) -> None:
        self.connections = connections
        self.db = db
        self.audit_log = audit
        self.live = live

    async def get(self, caller: Caller, connection_id: str) -> list[ShareView]:
        """Who a connection is shared with (owner or ``edit_any`` only)."""
        connection, access = await self.connections.load(caller, connection_id)
        if not (access.owner or caller.can(EDIT_ANY)):
            raise PermissionDenied("Only the owner (or connections.edit_any) may see the shares")
        return await self.views(connection.id)

    async def views(self, connection_id: str) -> list[ShareView]:
        """The shares of a connection (no access check)."""
        async with self.db.session() as session:
            rows = (
                await session.exec(
                    select(ConnectionShare).where(ConnectionShare.connection_id == connection_id)
                )
            ).all()
            views = []
            for row in rows:
                target = await session.get(
                    User if row.share_type == "user" else Role, row.target_id
                )
                name = ""
                if isinstance(target, User):
                    name = target.username
                elif isinstance(target, Role):
                    name = target.name
                views.append(ShareView(row.share_type, row.target_id, name, row.created_at))
        return sorted(views, key=lambda v: (v.share_type, v.target_name.casefold(), v.target_id))

    async def _resolve_target(self, session: AsyncSession, share_type: str, target: str) -> str:
        if share_type == "user":
            user = await session.get(User, target)
            if user is None:
                user = (
                    await session.exec(
                        select(User).where(col(User.username_key).in_(lookup_keys(target)))
                    )
                ).first()
            if user is None:
                raise InvalidInput(f"no user {target!r} to share with")
            return user.id
        role = await session.get(Role, target)
        if role is None:
            role = (await session.exec(select(Role).where(Role.name == target))).first()
        if role is None:
            raise InvalidInput(f"no role {target!r} to share with")
        return role.id

    async def replace(
        self, caller: Caller, connection_id: str, items: Sequence[tuple[str, str]]
    ) -> list[ShareView]:
        """Replace the shares (``[(shareType, targetId or name)]``); all valid or nothing."""
        connection, access = await self.connections.load(caller, connection_id)
        if not caller.can(SHARE):
            raise PermissionDenied(f"Insufficient permissions: sharing requires {SHARE}")
        if not access.share:
            raise PermissionDenied(
                "Only the owner (or connections.edit_any) may share a connection"
            )
        if len(items) > MAX_SHARES:
            raise InvalidInput(f"at most {MAX_SHARES} shares per connection")
        async with self.audit_log.atomic() as batch:
            session = batch.session
            wanted: list[tuple[str, str]] = []
            for share_type, target in items:
                if share_type not in SHARE_TYPES:
                    raise InvalidInput('shareType must be "user" or "role"')
                target_id = await self._resolve_target(session, share_type, target)
                if share_type == "user" and target_id == connection.owner_id:
                    raise InvalidInput("a connection cannot be shared with its owner")
                if (share_type, target_id) not in wanted:
                    wanted.append((share_type, target_id))
            existing = (
                await session.exec(
                    select(ConnectionShare).where(ConnectionShare.connection_id == connection.id)
                )
            ).all()
            have = {(row.share_type, row.target_id): row for row in existing}
            removed = [key for key in have if key not in wanted]
            added = [key for key in wanted if key not in have]
            for key in removed:
                await session.delete(have[key])
            for share_type, target_id in added:
                session.add(
                    ConnectionShare(
                        connection_id=connection.id, share_type=share_type, target_id=target_id
                    )
                )
            if added or removed:
                self.audit(
                    batch,
                    caller,
                    connection,
                    added=[{"shareType": t, "targetId": i} for t, i in added],
                    removed=[{"shareType": t, "targetId": i} for t, i in removed],
                )
        if removed:
            await self.close_lost_access(connection)
        return await self.views(connection.id)

    def audit(
        self, batch: AuditBatch, caller: Caller, connection: Connection, **details: Any
    ) -> None:
        """Add a ``connection.shared`` event to ``batch`` (stored with the sharing change)."""
        batch.record(
            "connection.shared",
            actor=caller,
            target=f"{connection.protocol}://{connection.host}:{connection.port}",
            details={"connectionId": connection.id, "name": connection.name, **details},
        )

    async def close_lost_access(self, connection: Connection) -> None:
        """End live sessions of users who can no longer see the connection (every node's).

        When the other nodes cannot be listed (Redis down), this node's are checked and
        theirs end at their next periodic access check.
        """
        try:
            sessions = await self.live.everywhere()
        except ApiError:
            sessions = self.live.all()
        for live in sessions:
            if live.connection_id != connection.id:
                continue
            async with self.db.session() as session:
                user = await session.get(User, live.user_id)
                still = user is not None and await self.connections.is_visible(
                    session, user.id, user.role_id, connection
                )
            if not still:
                await self.live.close_where(
                    NO_LONGER_SHARED, reason_code=CloseReason.NOT_SHARED, id=live.id
                )
