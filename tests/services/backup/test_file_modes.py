"""Backups on disk are private: the CLI's archive, the staged import, restored recordings."""

from __future__ import annotations

import stat

from tests.services.backup.support import KEY_A, PASSWORD, export_to, populate, running
from tests.services.backup.test_api import post_import
from testsupport.filemodes import assert_private, loose_umask  # noqa: F401


async def test_an_imported_backup_leaves_only_private_files(
    loose_umask,  # noqa: F811
    tmp_path,
    instance_config,
    client,
    admin,
    kernel,
):
    source = instance_config("source", KEY_A)
    async with running(source) as instance:
        await populate(instance.kernel)
        archive = await export_to(instance.kernel, tmp_path / "archive.geb")
    status, body = await post_import(client, admin, archive.read_bytes())
    assert status == 200, body
    assert body["recordingsRestored"] == 2
    found = assert_private(kernel.config.data_dir)
    assert "recordings/marker-recording.cast" in found
    assert "recordings/nested/second.webm" in found


def test_the_cli_export_is_written_0600(tmp_path, instance_config, run_cli, loose_umask):  # noqa: F811
    source = instance_config("source", KEY_A)
    archive = tmp_path / "instance.geb"
    code, _, err = run_cli(
        "--data-dir",
        str(source.data_dir),
        "backup",
        "export",
        str(archive),
        env={"HOSTGATE_ENCRYPTION_KEY": KEY_A, "HOSTGATE_BACKUP_PASSWORD": PASSWORD},
    )
    assert code == 0, err
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    assert_private(source.data_dir)
