"""The archive format and the checks a restore runs before it replaces anything."""

from __future__ import annotations

import pytest
from hostgate.errors import ApiError
from hostgate.services.backup import Backups
from hostgate.services.backup.archive import DEFAULT_COST, Header
from hostgate.services.backup.files import safe_relative

from tests.services.backup.support import (
    KEY_A,
    KEY_B,
    column_index,
    export_to,
    populate,
    read_meta,
    restore_from,
    rewrite,
    running,
    user_named,
)


@pytest.fixture
async def archive(tmp_path, instance_config):
    async with running(instance_config("source", KEY_A)) as source:
        await populate(source.kernel)
        return await export_to(source.kernel, tmp_path / "good.geb")


async def test_new_archives_use_the_recommended_cost_and_fresh_salts(
    tmp_path, instance_config, monkeypatch
):
    async with running(instance_config("a", KEY_A)) as a:
        cheap = await export_to(a.kernel, tmp_path / "cheap.geb", include_recordings=False)
        monkeypatch.setattr(Backups, "kdf_cost", DEFAULT_COST)
        real = await export_to(a.kernel, tmp_path / "real.geb", include_recordings=False)
        first, second = Header.parse(cheap.read_bytes()), Header.parse(real.read_bytes())
        assert (second.time_cost, second.memory_kib, second.lanes) == (3, 64 * 1024, 4)
        assert first.salt != second.salt and first.nonce_prefix != second.nonce_prefix
        assert (await restore_from(a.kernel, real)).rows["roles"] >= 2


def drop_column(table, column):
    index = {}

    def meta(data):
        index["i"] = column_index(data, table, column)
        for entry in data["schema"]["tables"]:
            if entry["name"] == table:
                del entry["columns"][index["i"]]

    def rows(name, values):
        if name == table:
            for row in values:
                del row[index["i"]]
        return values

    return {"edit_meta": meta, "edit_rows": rows}


def set_value(archive, table, column, value, *, only_first=False):
    i = column_index(read_meta(archive), table, column)

    def rows(name, values):
        if name == table:
            for row in values[:1] if only_first else values:
                row[i] = value
        return values

    return {"edit_rows": rows}


def add_column(data):
    for entry in data["schema"]["tables"]:
        if entry["name"] == "users":
            entry["columns"].append(["column_from_the_future", "text"])


def add_value(name, values):
    return [[*row, "x"] for row in values] if name == "users" else values


CASES = {
    "unknown schema revision": (
        lambda a: {"edit_meta": lambda m: m["schema"].update(revision="9999_future")},
        400,
        "backup_schema_unknown",
    ),
    "unknown column": (
        lambda a: {"edit_meta": add_column, "edit_rows": add_value},
        400,
        "backup_schema_unknown",
    ),
    "required column missing": (
        lambda a: drop_column("users", "username"),
        400,
        "backup_schema_unknown",
    ),
    "rows refer to missing rows": (
        lambda a: {"edit_rows": lambda n, v: [] if n == "users" else v},
        400,
        "backup_inconsistent",
    ),
    "secret that its key cannot open": (
        lambda a: set_value(a, "connections", "password", "hg1:deadbeef:AAAA"),
        400,
        "backup_inconsistent",
    ),
    "value of the wrong type": (
        lambda a: set_value(a, "users", "failed_login_count", "many"),
        400,
        "backup_inconsistent",
    ),
    "duplicate key": (
        lambda a: {"edit_rows": lambda n, v: v + v[:1] if n == "roles" else v},
        400,
        "backup_inconsistent",
    ),
    "table part missing": (
        lambda a: {"drop_parts": ("db/users.jsonl",)},
        422,
        "backup_corrupted",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_invalid_content_is_refused_and_nothing_changes(
    tmp_path, instance_config, archive, case
):
    change, status, code = CASES[case]
    bad = rewrite(archive, tmp_path / "bad.geb", **change(archive))
    async with running(instance_config("target", KEY_B)) as target:
        await target.kernel.settings.update({"app.name": "Target"})
        (target.recordings / "target.cast").write_bytes(b"target")
        with pytest.raises(ApiError) as caught:
            await restore_from(target.kernel, bad)
        assert (caught.value.status, caught.value.code) == (status, code), caught.value.message
        assert await user_named(target.kernel, "marker-alice") is None
        assert target.kernel.settings.get("app.name") == "Target"
        assert (target.recordings / "target.cast").read_bytes() == b"target"
        assert not (target.recordings / "marker-recording.cast").exists()
        assert not list((target.kernel.config.data_dir / ".backup-staging").iterdir())


async def test_a_missing_column_with_a_default_is_filled_in(tmp_path, instance_config, archive):
    older = rewrite(archive, tmp_path / "older.geb", **drop_column("users", "avatar_text"))
    async with running(instance_config("target", KEY_B)) as target:
        await restore_from(target.kernel, older)
        alice = await user_named(target.kernel, "marker-alice")
        assert alice is not None and alice.avatar_text == ""


@pytest.fixture
def pg_url(new_database):
    return new_database("postgresql")


async def test_postgresql_limits_are_checked_before_the_swap(
    tmp_path, instance_config, archive, pg_url
):
    long_name = rewrite(
        archive,
        tmp_path / "long.geb",
        **set_value(archive, "users", "display_name", "x" * 300, only_first=True),
    )
    async with running(instance_config("pg", KEY_B, pg_url)) as target:
        await target.kernel.settings.update({"app.name": "Target"})
        with pytest.raises(ApiError) as caught:
            await restore_from(target.kernel, long_name)
        assert caught.value.code == "backup_inconsistent"
        assert "users.display_name" in caught.value.message
        assert target.kernel.settings.get("app.name") == "Target"
    async with running(instance_config("lite", KEY_B)) as target:
        await restore_from(target.kernel, long_name)  # SQLite stores it as it is


def test_recording_names_must_be_plain_relative_paths():
    for good in ("a.cast", "2026/05/x-1_y.webm", "f" * 200):
        assert safe_relative(good), good
    for bad in (
        "",
        "../x",
        "a/../../x",
        "/etc/passwd",
        ".hidden",
        "a//b",
        "a\\b",
        "f" * 201,
        "/".join("d" * 9),
    ):
        assert not safe_relative(bad), bad
