"""Connection groups: each user's own tree of folders, nested by ``parent_id``.

Moving a group under itself or one of its own sub-groups is refused; deleting a
group moves its connections and child groups to its parent (or to the top level),
so nothing is ever deleted silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from ...db.models.connections import Connection, ConnectionGroup
from ...errors import Conflict, NotFound
from .connection_input import check_name, check_sort_order

if TYPE_CHECKING:
    from ...db.engine import Database
    from ..audit.audit import AuditLog
    from ..identity.identity import Caller

MAX_DEPTH = 32


@dataclass(frozen=True)
class GroupDeleted:
    """What deleting a group moved, and where to."""

    group: ConnectionGroup
    moved_connections: int
    moved_groups: int


async def owned_group(
    session: AsyncSession, owner_id: str, group_id: str, *, what: str = "groupId"
) -> ConnectionGroup:
    """A group of ``owner_id``; NotFound when it is not one (for ids in bodies)."""
    group = await session.get(ConnectionGroup, group_id)
    if group is None or group.owner_id != owner_id:
        raise NotFound(f"{what} does not name one of the owner's connection groups")
    return group


class ConnectionGroups:
    """Create, rename, move, reorder and delete groups."""

    def __init__(self, *, db: Database, audit: AuditLog) -> None:
        self.db = db
        self.audit = audit

    async def of_owner(self, owner_id: str) -> list[ConnectionGroup]:
        """Every group of one user."""
        async with self.db.session() as session:
            query = select(ConnectionGroup).where(ConnectionGroup.owner_id == owner_id)
            return list((await session.exec(query)).all())

    async def _editable(
        self, session: AsyncSession, caller: Caller, group_id: str, permission: str
    ) -> ConnectionGroup:
        group = await session.get(ConnectionGroup, group_id)
        if group is None:
            raise NotFound("Group not found")
        if group.owner_id != caller.user_id and not caller.can(permission):
            raise NotFound("Group not found")
        return group

    async def _check_parent(
        self, session: AsyncSession, group: ConnectionGroup | None, owner_id: str, parent_id: str
    ) -> None:
        """The parent must be the owner's and must not be the group or below it."""
        parent: ConnectionGroup | None = await owned_group(
            session, owner_id, parent_id, what="parentId"
        )
        depth = 0
        while parent is not None:
            if group is not None and parent.id == group.id:
                raise Conflict("a group cannot be moved into itself or one of its sub-groups")
            depth += 1
            if depth >= MAX_DEPTH:
                raise Conflict(f"groups nest at most {MAX_DEPTH} levels deep")
            parent = (
                await session.get(ConnectionGroup, parent.parent_id) if parent.parent_id else None
            )

    async def create(
        self, caller: Caller, name: Any, parent_id: Any = None, sort_order: Any = None
    ) -> ConnectionGroup:
        """A new group of the caller's."""
        group = ConnectionGroup(owner_id=caller.user_id, name=check_name(name))
        if sort_order is not None:
            group.sort_order = check_sort_order(sort_order)
        async with self.audit.atomic() as batch:
            if parent_id is not None:
                await self._check_parent(batch.session, None, caller.user_id, str(parent_id))
                group.parent_id = str(parent_id)
            batch.session.add(group)
            batch.record(
                "group.created",
                actor=caller,
                target=group.name,
                details={"groupId": group.id, "name": group.name, "parentId": group.parent_id},
            )
        return group

    async def update(
        self, caller: Caller, group_id: str, changes: Mapping[str, Any]
    ) -> ConnectionGroup:
        """Rename (``name``), move (``parentId``, null = top level) or re-sort (``sortOrder``)."""
        async with self.audit.atomic() as batch:
            session = batch.session
            group = await self._editable(session, caller, group_id, "connections.edit_any")
            before = {
                "name": group.name,
                "parentId": group.parent_id,
                "sortOrder": group.sort_order,
            }
            if "name" in changes:
                group.name = check_name(changes["name"])
            if "sortOrder" in changes:
                group.sort_order = check_sort_order(changes["sortOrder"])
            if "parentId" in changes:
                parent_id = changes["parentId"]
                if parent_id is not None:
                    await self._check_parent(session, group, group.owner_id, str(parent_id))
                group.parent_id = parent_id
            session.add(group)
            after = {
                "name": group.name,
                "parentId": group.parent_id,
                "sortOrder": group.sort_order,
            }
            changed = {
                k: {"from": before[k], "to": after[k]} for k in after if before[k] != after[k]
            }
            if changed:
                batch.record(
                    "group.updated",
                    actor=caller,
                    target=group.name,
                    details={"groupId": group.id, "changes": changed},
                )
        return group

    async def reorder(self, caller: Caller, items: Sequence[tuple[str, int]]) -> int:
        """Set ``sortOrder`` of several groups; all must be editable, else nothing changes."""
        async with self.db.session() as session:
            groups = []
            for group_id, order in items:
                group = await self._editable(session, caller, group_id, "connections.edit_any")
                group.sort_order = check_sort_order(order)
                groups.append(group)
            for group in groups:
                session.add(group)
            await session.commit()
        return len(groups)

    async def delete(self, caller: Caller, group_id: str) -> GroupDeleted:
        """Delete a group; its connections and child groups move to its parent."""
        async with self.audit.atomic() as batch:
            session = batch.session
            group = await self._editable(session, caller, group_id, "connections.delete_any")
            parent_id = group.parent_id
            connections = (
                await session.exec(select(Connection).where(Connection.group_id == group.id))
            ).all()
            children = (
                await session.exec(
                    select(ConnectionGroup).where(col(ConnectionGroup.parent_id) == group.id)
                )
            ).all()
            for connection in connections:
                connection.group_id = parent_id
                session.add(connection)
            for child in children:
                child.parent_id = parent_id
                session.add(child)
            await session.flush()
            await session.delete(group)
            result = GroupDeleted(group, len(connections), len(children))
            batch.record(
                "group.deleted",
                actor=caller,
                target=group.name,
                details={
                    "groupId": group.id,
                    "name": group.name,
                    "movedTo": parent_id,
                    "movedConnections": result.moved_connections,
                    "movedGroups": result.moved_groups,
                },
            )
        return result
