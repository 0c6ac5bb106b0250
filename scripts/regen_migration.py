"""Regenerate the initial migration from the models (pre-release only).

Until the first release there is one migration, 0001_initial, generated from
``hostgate.db.models``. Run this after changing any table:

    .venv/bin/python scripts/regen_migration.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from alembic import command
from hostgate.db.engine import MIGRATIONS_DIR, alembic_config

versions = MIGRATIONS_DIR / "versions"
for old in versions.glob("*.py"):
    old.unlink()
with tempfile.TemporaryDirectory() as tmp:
    cfg = alembic_config()
    cfg.set_main_option("file_template", "%%(rev)s")
    cfg.set_main_option("sqlalchemy.url", f"sqlite:///{Path(tmp) / 'empty.db'}")
    command.revision(cfg, message="initial schema", autogenerate=True, rev_id="0001_initial")
print("wrote", *sorted(p.name for p in versions.glob("*.py")))
