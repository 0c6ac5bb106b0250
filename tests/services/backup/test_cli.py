"""``hostgate backup export|verify|import`` through the real command line."""

from __future__ import annotations

import pytest
from hostgate.cli import main
from hostgate.db.models.audit import AuditEntry
from sqlmodel import select

from tests.services.backup.support import (
    KEY_A,
    KEY_B,
    PASSWORD,
    check_restored,
    export_to,
    populate,
    running,
)


def cli(run_cli, data_dir, key, *args, password=PASSWORD):
    env = {"HOSTGATE_ENCRYPTION_KEY": key, "HOSTGATE_BACKUP_PASSWORD": password or ""}
    return run_cli("--data-dir", str(data_dir), "backup", *args, env=env)


async def test_export_verify_and_import_from_the_shell(tmp_path, instance_config, run_cli):
    source = instance_config("source", KEY_A)
    async with running(source) as a:
        markers = await populate(a.kernel)
    archive = tmp_path / "out" / "instance.geb"
    archive.parent.mkdir()
    password_file = tmp_path / "password.txt"
    password_file.write_text(PASSWORD + "\n")

    code, out, err = cli(
        run_cli,
        source.data_dir,
        KEY_A,
        "export",
        str(archive),
        "--include-recordings",
        "--password-file",
        str(password_file),
        password=None,
    )
    assert code == 0, err
    assert f"wrote {archive}" in out
    assert "exporting" in err and "100%" in err
    assert archive.exists() and not list(archive.parent.glob("*.part"))

    code, out, err = cli(run_cli, tmp_path, KEY_B, "verify", str(archive))
    assert code == 0, err
    assert "OK" in out and "recordings     2" in out and "secrets" in out

    target = instance_config("target", KEY_B)
    async with running(target) as b:
        await b.kernel.settings.update({"app.name": "Target"})
    code, out, err = cli(run_cli, target.data_dir, KEY_B, "import", str(archive))
    assert code == 0, err
    assert "restored" in out and "signed out" in out
    assert "reading" in err and "restoring" in err
    async with running(target) as b:
        await check_restored(b.kernel, markers)
        async with b.kernel.db.session() as session:
            query = select(AuditEntry).where(AuditEntry.event_type == "backup.imported")
            entry = (await session.exec(query)).one()
        assert entry.username == "cli" and entry.details["recordingsRestored"] == 2


@pytest.fixture
def small_archive(tmp_path, instance_config):
    """An instance (``tmp_path/a``) and an archive of it, made before the test's loop runs."""
    import asyncio

    config = instance_config("a", KEY_A)

    async def build():
        async with running(config) as a:
            await populate(a.kernel, recording_size=10)
            await export_to(a.kernel, tmp_path / "small.geb")

    asyncio.run(build())
    return config, tmp_path / "small.geb"


def run_main(monkeypatch, config, *args, password=PASSWORD):
    monkeypatch.setenv("HOSTGATE_ENCRYPTION_KEY", config.encryption_key)
    if password is None:
        monkeypatch.delenv("HOSTGATE_BACKUP_PASSWORD", raising=False)
    else:
        monkeypatch.setenv("HOSTGATE_BACKUP_PASSWORD", password)
    return main(["--data-dir", str(config.data_dir), "backup", *args])


def test_refusals_change_nothing(small_archive, tmp_path, monkeypatch, capsys):
    config, archive = small_archive
    assert run_main(monkeypatch, config, "verify", str(archive), password="wrong password") == 1
    assert "Invalid backup password or corrupted backup file" in capsys.readouterr().err
    damaged = tmp_path / "damaged.geb"
    raw = bytearray(archive.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    damaged.write_bytes(bytes(raw))
    assert run_main(monkeypatch, config, "import", str(damaged)) == 1
    assert "Corrupted backup file" in capsys.readouterr().err
    assert run_main(monkeypatch, config, "export", str(tmp_path / "x.geb"), password="short") == 1
    assert "at least 8 characters" in capsys.readouterr().err
    assert not (tmp_path / "x.geb").exists()
    assert run_main(monkeypatch, config, "export", str(tmp_path / "y.geb"), password=None) == 1
    assert "--password-file" in capsys.readouterr().err
    assert run_main(monkeypatch, config, "import", str(tmp_path / "missing.geb")) == 1
    assert "does not exist" in capsys.readouterr().err
    assert run_main(monkeypatch, config, "verify", str(archive)) == 0
    assert "OK" in capsys.readouterr().out
