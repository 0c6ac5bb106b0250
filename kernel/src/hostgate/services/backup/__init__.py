"""Encrypted backup and restore: ``kernel.backups`` (the format is in docs/backup.md)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import shutil
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, TypeVar

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from ...closereasons import CloseReason
from ...datadir import DIR_MODE, private_dir, private_open
from ...db.models import metadata
from ...errors import Conflict, InvalidInput
from ..database_swap import swap_database
from .archive import DEFAULT_COST, MIN_PASSWORD, BadPassword, CorruptArchive, KdfCost, NotAnArchive
from .exporter import export_archive
from .files import RECORDINGS_DIR, recordings_summary
from .restore import (
    JOURNAL_NAME,
    finish_journal,
    prepare_restore,
    read_marker,
    write_journal,
)
from .staging import Cancelled, Progress, StagedArchive, stage_archive

if TYPE_CHECKING:
    from ...db.engine import Database
    from ...security.secretbox import SecretBox
    from ..lifecycle import Lifecycle
    from ..sessions.live_sessions import LiveSessions
    from ..sessions.recording_store import RecordingStore

__all__ = [
    "BadPassword",
    "Backups",
    "CorruptArchive",
    "KdfCost",
    "NotAnArchive",
    "Progress",
    "RestoreResult",
    "StagedArchive",
    "check_password",
    "stage_archive",
]

log = logging.getLogger("hostgate.backup")

STAGING_DIR = ".backup-staging"
LOCK_NAME = ".backup.lock"
T = TypeVar("T")


@dataclass(frozen=True)
class RestoreResult:
    """What a restore brought back."""

    recordings_restored: int
    rows: dict[str, int] = field(default_factory=dict)
    exported_at: str = ""
    source_version: str = ""
    secrets: int = 0


def check_password(password: str) -> None:
    """Backup passwords have at least ``MIN_PASSWORD`` characters."""
    if len(password) < MIN_PASSWORD:
        raise InvalidInput(f"The backup password must be at least {MIN_PASSWORD} characters")


async def _in_thread(cancel: threading.Event, work: Callable[[], T]) -> T:
    """Run ``work`` in a thread; if the caller is cancelled, stop it and wait for it to end."""
    task = asyncio.ensure_future(asyncio.to_thread(work))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        cancel.set()
        with contextlib.suppress(BaseException):
            await task
        raise


class Backups:
    """Export, restore and crash recovery for one instance."""

    max_import_bytes = 64 * 1024**3
    """Largest archive ``POST /backup/import`` accepts."""

    kdf_cost: KdfCost = DEFAULT_COST
    """argon2id cost of new archives (a restore uses whatever the archive's header says)."""

    def __init__(
        self,
        *,
        data_dir: Path,
        recordings_dir: Path | None = None,
        recording_store: RecordingStore | None = None,
        db: Database,
        secrets: SecretBox,
        live: LiveSessions,
        reload_state: Callable[[], Awaitable[None]],
        lifecycle: Lifecycle,
    ) -> None:
        self._data_dir = data_dir
        self._recordings_dir = recordings_dir or data_dir / RECORDINGS_DIR
        # a bucket (HOSTGATE_RECORDINGS_URL): exports read the recordings from it
        self._bucket = recording_store if recording_store and recording_store.shared else None
        self.db = db
        self.secrets = secrets
        self.live = live
        # re-reads every in-memory copy of database state after a restore
        self.reload_state = reload_state
        self._busy = asyncio.Lock()
        self._commit_task: asyncio.Future[RestoreResult] | None = None
        lifecycle.on_start(self.recover)

    @property
    def data_dir(self) -> Path:
        """The instance's data directory."""
        return self._data_dir

    @property
    def recordings_dir(self) -> Path:
        """Where recording files live (``HOSTGATE_RECORDINGS_DIR``, else the data dir's)."""
        return self._recordings_dir

    @property
    def staging_root(self) -> Path:
        """Where uploads and restores are staged (a restore moves recordings from here)."""
        return self.data_dir / STAGING_DIR

    async def size(self) -> dict[str, int]:
        """``{dbSize, recordingsSize, recordingCount}`` in bytes."""
        if self._bucket is not None:
            sizes = await self._bucket.sizes()
            count, total = len(sizes), sum(sizes.values())
        else:
            count, total = await asyncio.to_thread(recordings_summary, self.recordings_dir)
        return {
            "dbSize": await self._database_size(),
            "recordingsSize": total,
            "recordingCount": count,
        }

    async def _database_size(self) -> int:
        engine = self.db.engine
        if engine.dialect.name == "sqlite":
            path = engine.url.database
            return os.path.getsize(path) if path and os.path.exists(path) else 0
        # PostgreSQL: the on-disk size of our tables' rows, an estimate of what a backup holds.
        names = [table.name for table in metadata.sorted_tables]
        query = text(
            "SELECT COALESCE(SUM(pg_table_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname = ANY(:names)"
        )
        async with engine.connect() as conn:
            return int((await conn.execute(query, {"names": names})).scalar_one())

    def export(self, password: str, *, include_recordings: bool) -> AsyncIterator[bytes]:
        """The archive's bytes, produced while they are read (see ``export_archive``)."""
        check_password(password)
        return export_archive(
            self.db.engine,
            self.secrets,
            self.recordings_dir,
            password,
            include_recordings=include_recordings,
            cost=self.kdf_cost,
            bucket=self._bucket,
        )

    @contextlib.asynccontextmanager
    async def import_slot(self) -> AsyncIterator[Path]:
        """A fresh staging directory, held exclusively (409 while another restore runs)."""
        if self._busy.locked():
            raise Conflict("Another backup import is in progress")
        async with self._busy:
            lock = self._try_lock()
            if lock is None:
                raise Conflict("Another backup import is in progress")
            directory = self.staging_root / uuid.uuid4().hex
            try:
                private_dir(self.staging_root)
                directory.mkdir(mode=DIR_MODE)
                yield directory
            finally:
                # A caller that went away does not cut a swap short: wait for it.
                if self._commit_task is not None and not self._commit_task.done():
                    with contextlib.suppress(BaseException):
                        await asyncio.shield(self._commit_task)
                self._commit_task = None
                if not self._journal_path.exists():
                    await asyncio.to_thread(shutil.rmtree, directory, True)
                lock.close()

    async def restore(
        self, archive: Path, password: str, slot: Path, *, progress: Progress | None = None
    ) -> RestoreResult:
        """Check all of ``archive`` in ``slot``, then replace the live data with it.

        Raises BadPassword (422), CorruptArchive (422), NotAnArchive or InvalidInput
        (400) with nothing changed. Once checked, the swap completes even if the
        caller goes away. Every login session is revoked.
        """
        cancel = threading.Event()

        def work() -> StagedArchive:
            return stage_archive(
                archive,
                password,
                slot,
                live=self.secrets,
                write_recordings=True,
                target_dialect=self.db.dialect,
                prepare=prepare_restore(slot.name),
                progress=progress,
                cancel=cancel,
            )

        try:
            staged = await _in_thread(cancel, work)
        except Cancelled:
            raise InvalidInput("The import was cancelled") from None
        self._commit_task = asyncio.ensure_future(self._commit(staged, slot.name, progress))
        return await asyncio.shield(self._commit_task)

    @property
    def _journal_path(self) -> Path:
        return self.data_dir / JOURNAL_NAME

    async def _commit(
        self, staged: StagedArchive, restore_id: str, progress: Progress | None
    ) -> RestoreResult:
        journal = {
            "id": restore_id,
            "directory": str(staged.directory),
            "recordings": staged.recordings is not None,
            "recordingsDir": str(self.recordings_dir),
            # a bucket: the staged recordings are uploaded, the directory left alone
            "recordingsBucket": self._bucket is not None,
        }
        await asyncio.to_thread(write_journal, self._journal_path, journal)
        # Open terminals and file sessions belong to the data being replaced (every node's).
        await self.live.close_everywhere(
            "the instance is being restored from a backup", CloseReason.RESTORING
        )
        total = sum(staged.rows.values())
        try:
            await swap_database(self.db.engine, staged.database, total, progress)
        except Exception as exc:
            if await read_marker(self.db.engine) != restore_id:
                await asyncio.to_thread(finish_journal, self.data_dir, journal, False)
                if isinstance(exc, DBAPIError):
                    detail = str(exc.orig).splitlines()[0][:300]
                    raise InvalidInput(
                        f"The backup could not be restored into this database ({detail}); "
                        "nothing was changed",
                        code="backup_restore_failed",
                    ) from None
                raise
            log.warning("restore %s: error after the commit (%s); completing it", restore_id, exc)
        if self._bucket is not None and staged.recordings is not None:
            await self._restore_to_bucket(staged.directory)
        await asyncio.to_thread(finish_journal, self.data_dir, journal, True)
        await self._reload()
        log.info("backup restored (%s rows, %s recordings)", total, staged.recordings_count)
        return RestoreResult(
            recordings_restored=staged.recordings_count,
            rows=dict(staged.rows),
            exported_at=str(staged.meta.get("exportedAt", "")),
            source_version=str(staged.meta.get("version", "")),
            secrets=staged.secrets,
        )

    async def _restore_to_bucket(self, directory: Path) -> None:
        """Make the bucket hold the archive's recordings: upload them, delete the others.

        Run after the database commit (and again by ``recover`` when a crash cut it
        short: uploading a file twice is harmless).
        """
        assert self._bucket is not None
        staged = directory / RECORDINGS_DIR
        files = sorted(p for p in staged.iterdir() if p.is_file()) if staged.is_dir() else []
        for path in files:
            await self._bucket.upload_file(path.name, path)
        keep = {path.name for path in files}
        await self._bucket.delete([name for name in await self._bucket.sizes() if name not in keep])

    async def _reload(self) -> None:
        """Make in-memory state follow the restored database."""
        await self.reload_state()

    def _try_lock(self) -> IO[str] | None:
        """The data dir's restore lock (across processes), or None when someone holds it."""
        private_dir(self.data_dir)
        handle = private_open(self.data_dir / LOCK_NAME, "a")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return None
        return handle

    async def recover(self) -> None:
        """Finish or drop a restore interrupted by a crash; remove stale staging areas."""
        lock = self._try_lock()
        if lock is None:
            return
        try:
            if self._journal_path.exists():
                try:
                    journal = json.loads(self._journal_path.read_text())
                    restore_id = str(journal["id"])
                except (ValueError, KeyError, TypeError):
                    log.error("unreadable restore journal %s: removed", self._journal_path)
                    self._journal_path.unlink()
                else:
                    committed = await read_marker(self.db.engine) == restore_id
                    to_bucket = journal.get("recordingsBucket") and journal.get("recordings")
                    if committed and to_bucket and self._bucket is not None:
                        await self._bucket.start()
                        await self._restore_to_bucket(Path(journal["directory"]))
                    await asyncio.to_thread(finish_journal, self.data_dir, journal, committed)
                    log.warning(
                        "an interrupted backup restore was %s",
                        "completed" if committed else "rolled back (the old data stays)",
                    )
            if self.staging_root.exists():
                await asyncio.to_thread(shutil.rmtree, self.staging_root, True)
        finally:
            lock.close()
