"""Re-encrypt every sealed column under a new key, in one transaction."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import select, update

from ..db.models import metadata
from ..db.models.settings import SettingValue, SystemValue
from ..db.types import Sealed
from ..security.secretbox import (
    SecretBox,
    envelope_key_id,
    generate_key,
    parse_key,
    write_key_file,
)

if TYPE_CHECKING:
    from ..config import Config
    from ..db.engine import Database
    from ..security.secretbox import SecretBox


@dataclass(frozen=True)
class RotationResult:
    """What a rotation did."""

    count: int
    key_id: str
    key_hex: str
    key_file: Path | None


def sealed_columns() -> list[tuple[str, str, list[str]]]:
    """``(table, column, primary key columns)`` for every Sealed column."""
    found = []
    for table in metadata.sorted_tables:
        pk = [c.name for c in table.primary_key.columns]
        for column in table.columns:
            if isinstance(column.type, Sealed):
                found.append((table.name, column.name, pk))
    return found


class KeyRotation:
    """Re-seals every stored secret under a new instance key (hostgate keys rotate)."""

    def __init__(
        self,
        *,
        config: Config,
        db: Database,
        secrets: SecretBox,
    ) -> None:
        self.config = config
        self.db = db
        self.secrets = secrets

    async def rotate_encryption_key(self, new_key_hex: str | None) -> RotationResult:
        """Re-seal every envelope (columns, secret settings, system values) under a new key."""
        key_hex = new_key_hex or generate_key()
        new_box = SecretBox(parse_key(key_hex))
        old = self.secrets
        count = 0

        def reseal(value: str) -> str:
            return new_box.seal(old.open_bytes(value))

        async with self.db.engine.begin() as conn:
            for table_name, column_name, pk in sealed_columns():
                table = metadata.tables[table_name]
                column = table.c[column_name]
                rows = (await conn.execute(select(*[table.c[p] for p in pk], column))).all()
                for row in rows:
                    value = row[-1]
                    if not value:
                        continue
                    where = [table.c[p] == row[i] for i, p in enumerate(pk)]
                    await conn.execute(
                        update(table).where(*where).values({column_name: reseal(value)})
                    )
                    count += 1
            state_tables = (
                (SettingValue.__table__, "key", "value"),  # type: ignore[attr-defined]
                (SystemValue.__table__, "name", "value"),  # type: ignore[attr-defined]
            )
            for table, key_col, value_col in state_tables:
                rows = (await conn.execute(select(table.c[key_col], table.c[value_col]))).all()
                for state_row in rows:
                    name, value = state_row[0], state_row[1]
                    if isinstance(value, str) and envelope_key_id(value) == old.key_id:
                        statement = update(table).where(table.c[key_col] == name)
                        await conn.execute(statement.values({value_col: reseal(value)}))
                        count += 1
        key_file = None
        if self.config.encryption_key is None:
            key_file = self.config.data_dir / "encryption.key"
            write_key_file(key_file, key_hex)
        return RotationResult(
            count=count, key_id=new_box.key_id, key_hex=key_hex, key_file=key_file
        )
