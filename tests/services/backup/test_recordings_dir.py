"""HOSTGATE_RECORDINGS_DIR: backups carry the recordings of the configured directory and a
restore puts them back there, entry by entry, keeping the directory itself and its marker
(it may be a mount point of shared storage, on another file system than the data dir)."""

from __future__ import annotations

import errno
import os

import pytest
from hostgate.cluster.shared import RECORDINGS_MARKER
from hostgate.services.backup import restore as restore_module
from hostgate.services.backup.restore import swap_recordings

from tests.services.backup.support import (
    KEY_A,
    KEY_B,
    check_restored,
    export_to,
    populate,
    restore_from,
    running,
)


async def test_restore_into_a_recordings_directory_apart_from_the_data_dir(
    tmp_path, instance_config
):
    archive = tmp_path / "backup.geb"
    source = instance_config("a", KEY_A).with_overrides(recordings_dir=tmp_path / "shared-a")
    async with running(source) as a:
        markers = await populate(a.kernel)
        assert (tmp_path / "shared-a" / "marker-recording.cast").exists()
        assert not (source.data_dir / "recordings").exists()
        sizes = await a.kernel.backups.size()
        assert sizes["recordingCount"] == 2
        await export_to(a.kernel, archive)
    shared = tmp_path / "shared-b"
    target = instance_config("b", KEY_B).with_overrides(recordings_dir=shared)
    async with running(target) as b:
        (shared / "only-in-b.cast").write_bytes(b"old")
        (shared / RECORDINGS_MARKER).write_text('{"databaseId": "d", "token": "t"}\n')
        inode = shared.stat().st_ino
        result = await restore_from(b.kernel, archive)
        assert result.recordings_restored == 2
        await check_restored(b.kernel, markers)
        assert not (shared / "only-in-b.cast").exists()
        # the directory is the same one (a mount point stays), its marker is kept
        assert shared.stat().st_ino == inode
        assert (shared / RECORDINGS_MARKER).read_text() == '{"databaseId": "d", "token": "t"}\n'
        assert sorted(p.name for p in shared.iterdir()) == sorted(
            [RECORDINGS_MARKER, "marker-recording.cast", "nested"]
        )
        assert not (target.data_dir / "recordings").exists()


def test_a_swap_across_file_systems_copies_and_resumes_after_a_crash(tmp_path, monkeypatch):
    live, staged = tmp_path / "live", tmp_path / "staging" / "recordings"
    (live / "old-dir").mkdir(parents=True)
    (live / "old.cast").write_bytes(b"old")
    (live / RECORDINGS_MARKER).write_text("marker")
    (staged / "nested").mkdir(parents=True)
    (staged / "new.cast").write_bytes(b"new" * 1000)
    (staged / "nested" / "second.webm").write_bytes(b"webm")
    previous, moving = live / ".previous-r1", tmp_path / "staging" / "recordings-moving"
    real_replace = os.replace
    calls = {"copies": 0}

    def replace(source, target):  # the staging area is on another file system
        if str(source).startswith(str(staged)):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real_replace(source, target)

    real_move = restore_module.shutil.move

    def move(source, target):
        calls["copies"] += 1
        if calls["copies"] == 2:
            raise KeyboardInterrupt("the process dies half way")
        return real_move(source, target)

    monkeypatch.setattr(restore_module.os, "replace", replace)
    monkeypatch.setattr(restore_module.shutil, "move", move)
    with pytest.raises(KeyboardInterrupt):
        swap_recordings(live, staged, previous, moving)
    assert moving.exists() and not (live / "old.cast").exists()
    # started again (recovery at start-up): finishes, the old entries are gone
    swap_recordings(live, staged, previous, moving)
    assert calls["copies"] >= 3
    assert (live / "new.cast").read_bytes() == b"new" * 1000
    assert (live / "nested" / "second.webm").read_bytes() == b"webm"
    assert (live / RECORDINGS_MARKER).read_text() == "marker"
    assert sorted(p.name for p in live.iterdir()) == [RECORDINGS_MARKER, "nested", "new.cast"]
    assert not staged.exists()


def test_the_swap_keeps_a_live_file_until_the_restore_committed(tmp_path):
    """Nothing staged (a restore without recordings): the live directory is left alone."""
    live = tmp_path / "live"
    live.mkdir()
    (live / "kept.cast").write_bytes(b"x")
    swap_recordings(live, tmp_path / "absent", live / ".previous-r2", tmp_path / "flag")
    assert [p.name for p in live.iterdir()] == ["kept.cast"]
