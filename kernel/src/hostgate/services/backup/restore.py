"""Swap a checked staging area in: every row in one transaction, recordings by rename.

The rows go in through the kernel's ``services.database_swap`` (the test gateway's
reset uses it too); this module adds the restore's journal, marker and recordings.

Crash safety: before the database transaction a journal file names the restore;
the transaction itself writes the same id into ``system_values``. Recordings are
swapped only after the commit (entry by entry: the recordings directory may be
a mount point of its own, see ``swap_recordings``). At start-up ``recover``
reads the journal: if the database holds the id the commit happened and the
recordings swap is finished, otherwise the restore never happened and its
staging area is dropped. A kill at any moment therefore leaves either the old
state or the complete new one.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from ...datadir import private_open
from ...db.models.identity import LoginSession
from ...db.models.settings import SystemValue
from ...timefmt import utcnow
from ..database_swap import KEEP_PREFIX

log = logging.getLogger("hostgate.backup")

MARKER_NAME = "backup_restore_id"
JOURNAL_NAME = "backup-restore.json"


def prepare_restore(restore_id: str) -> Callable[[Connection], None]:
    """Staging step: sign everybody out and stamp the restore id (see the module docstring)."""

    def prepare(conn: Connection) -> None:
        now = utcnow()
        sessions = LoginSession.__table__  # type: ignore[attr-defined]
        conn.execute(
            update(sessions)
            .where(sessions.c.revoked_at.is_(None))
            .values(revoked_at=now, revoke_reason="backup_restored")
        )
        values = SystemValue.__table__  # type: ignore[attr-defined]
        conn.execute(delete(values).where(values.c.name == MARKER_NAME))
        conn.execute(insert(values).values(name=MARKER_NAME, value=restore_id, created_at=now))

    return prepare


async def read_marker(engine: AsyncEngine) -> str | None:
    """The id of the last restore committed to the live database."""
    values = SystemValue.__table__  # type: ignore[attr-defined]
    async with engine.connect() as conn:
        result = await conn.execute(select(values.c.value).where(values.c.name == MARKER_NAME))
        value = result.scalar_one_or_none()
    return None if value is None else str(value)


def write_journal(path: Path, record: dict[str, Any]) -> None:
    """Write the journal durably (temp file, fsync, rename)."""
    tmp = path.with_suffix(".tmp")
    with private_open(tmp, "w") as handle:
        json.dump(record, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _sync_dir(path.parent)


def _sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace(source: Path, target: Path) -> None:
    """Move ``source`` to ``target`` (a rename, or a copy when they are on two file systems)."""
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)  # a half-copied directory of an interrupted swap
    try:
        os.replace(source, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.move(source, target)


def swap_recordings(live: Path, staged: Path, previous: Path, moving: Path) -> None:
    """Put the files of ``staged`` in place of those of ``live`` (idempotent, resumable).

    The directory ``live`` itself stays (it may be a mount point of shared storage,
    ``HOSTGATE_RECORDINGS_DIR``), and so do its hidden entries (the marker). First
    every other entry moves into ``previous`` (inside ``live``: one file system),
    then the flag file ``moving`` is written, then every staged entry moves in (a
    rename, or a copy when the staging area is on another file system). A crash at
    any point is finished by running this again with the same paths.
    """
    if not staged.exists():
        return
    live.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not moving.exists():
        previous.mkdir(mode=0o700, exist_ok=True)
        for entry in os.scandir(live):
            if not entry.name.startswith(KEEP_PREFIX):
                os.replace(entry.path, previous / entry.name)
        _sync_dir(live)
        private_open(moving, "wb").close()
    for entry in os.scandir(staged):
        _replace(Path(entry.path), live / entry.name)
    _sync_dir(live)
    shutil.rmtree(previous, ignore_errors=True)
    shutil.rmtree(staged, ignore_errors=True)


def finish_journal(data_dir: Path, journal: dict[str, Any], committed: bool) -> None:
    """Complete (or drop) the restore a journal describes, then remove it."""
    directory = Path(journal["directory"])
    if committed and journal.get("recordings") and not journal.get("recordingsBucket"):
        live = Path(journal.get("recordingsDir") or data_dir / "recordings")
        swap_recordings(
            live,
            directory / "recordings",
            live / f".previous-{journal['id']}",
            directory / "recordings-moving",
        )
    (data_dir / JOURNAL_NAME).unlink(missing_ok=True)
    shutil.rmtree(directory, ignore_errors=True)
