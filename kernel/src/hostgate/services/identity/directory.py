"""``kernel.directory``: the users and roles, read-only, for feature packs that name them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlmodel import col, select

from ...contract import Account, RoleSummary
from ...db.models.identity import Role, User

if TYPE_CHECKING:
    from ...db.engine import Database


class Directory:
    """Lists of users and roles (a notification rule's recipients...)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def users(self) -> list[Account]:
        """Every user account, by login name."""
        async with self.db.session() as session:
            users = (await session.exec(select(User).order_by(col(User.username_key)))).all()
        return list(users)

    async def roles(self) -> list[RoleSummary]:
        """Every role, by name."""
        async with self.db.session() as session:
            roles = (await session.exec(select(Role).order_by(col(Role.name)))).all()
        return [RoleSummary(id=role.id, name=role.name) for role in roles]
