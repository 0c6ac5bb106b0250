"""0015_action_rights: existing roles keep every action, existing connections allow them all."""

from __future__ import annotations

import json

import pytest
from alembic import command
from hostgate.db.engine import Database, alembic_config
from sqlalchemy import text

ACTION_PERMISSIONS = {
    "files.upload",
    "files.download",
    "files.delete",
    "clipboard.copy",
    "clipboard.paste",
}


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'upgraded.db'}"
    return request.getfixturevalue("postgres_url")


async def test_an_upgrade_grants_the_action_permissions_to_every_role(database_url: str) -> None:
    db = Database(database_url)
    try:
        async with db.engine.begin() as conn:
            await conn.run_sync(
                lambda sync: command.upgrade(alembic_config(sync), "0013_join_moderation")
            )
            await conn.execute(
                text(
                    "INSERT INTO roles (id, name, description, is_builtin, permissions,"
                    " created_at, updated_at) VALUES ('r1', 'auditors', '', false,"
                    " '[\"audit.view_any\"]', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
                )
            )
        await db.migrate()
        async with db.engine.connect() as conn:
            stored = (
                await conn.execute(text("SELECT permissions FROM roles WHERE id = 'r1'"))
            ).scalar()
        names = json.loads(stored)
        assert names[0] == "audit.view_any"
        assert set(names) == {"audit.view_any", *ACTION_PERMISSIONS}

        async with db.engine.begin() as conn:
            await conn.run_sync(
                lambda sync: command.downgrade(alembic_config(sync), "0013_join_moderation")
            )
            stored = (
                await conn.execute(text("SELECT permissions FROM roles WHERE id = 'r1'"))
            ).scalar()
        assert json.loads(stored) == ["audit.view_any"]
    finally:
        await db.close()
