"""Backup tests: a pack-style secret setting and the recsearch pack (a pack's own table
travels) are loaded, PostgreSQL databases on demand."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hostgate.config import Config
from hostgate.services.backup import Backups
from hostgate_recsearch import plugin as recsearch

from tests.services.backup.support import CHEAP, SecretSettings, make_config
from testsupport.postgres import create_database


@pytest.fixture
def plugins() -> list[object]:
    return [SecretSettings(), recsearch]


@pytest.fixture(autouse=True)
def cheap_key_derivation(monkeypatch: pytest.MonkeyPatch) -> None:
    """New archives use a cheap argon2 cost so the tests stay fast (the format is the same;
    ``test_archive`` checks the real default)."""
    monkeypatch.setattr(Backups, "kdf_cost", CHEAP)


@pytest.fixture
def new_database(request: pytest.FixtureRequest) -> Callable[[str], str | None]:
    """``new_database("sqlite" | "postgresql")``: None (SQLite in the data dir) or a fresh URL.

    Call it before the test's event loop runs anything (from a sync fixture).
    """

    def make(kind: str) -> str | None:
        if kind == "sqlite":
            return None
        return create_database(request.getfixturevalue("postgres_server"), prefix="hg_bk_")

    return make


@pytest.fixture
def instance_config(tmp_path: Path, template_db: Path) -> Callable[..., Config]:
    """``instance_config(name, key, url=None)``: a config under ``tmp_path/name``."""

    def make(name: str, key: str, url: str | None = None) -> Config:
        return make_config(tmp_path, name, key, url, template_db)

    return make
