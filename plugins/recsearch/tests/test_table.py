"""The pack's model of ``recording_search`` is the table the kernel's migrations made.

The kernel's schema comparison leaves the tables of default packs out (its models are
loaded without packs); this compares the one this pack maps, on both engines, so a
database migrated before the move keeps its index and this pack reads it as it is.
"""

from __future__ import annotations

from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from hostgate.db.engine import Database
from hostgate.db.models import metadata
from hostgate.db.models.pack_tables import SEARCH_OBJECTS
from hostgate_recsearch.models import SearchEntry


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: Any, tmp_path: Any) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}"
    return str(request.getfixturevalue("postgres_url"))


def only_the_index(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    """``recording_search`` and what belongs to it, but not the migration's full-text part."""
    table = name if type_ == "table" else getattr(getattr(obj, "table", None), "name", None)
    return table == SearchEntry.__tablename__ and name not in SEARCH_OBJECTS


def differences(sync_connection: Any) -> list[Any]:
    opts = {"compare_type": True, "include_object": only_the_index}
    context = MigrationContext.configure(sync_connection, opts=opts)
    return list(compare_metadata(context, metadata))


async def test_the_model_is_the_migrated_table(database_url: str) -> None:
    assert SearchEntry.__tablename__ in metadata.tables
    db = Database(database_url)
    try:
        await db.migrate()
        async with db.engine.connect() as conn:
            diff = await conn.run_sync(differences)
        assert diff == []
    finally:
        await db.close()
