"""Recordings: encrypted files or objects (``recording_store``), keys, uploads, retention.

Each recording has its own random data key, sealed under the instance key in the
session row (``recording_key``), so key rotation and backup only re-seal database
columns; the file format is in ``recording_format``. Terminal sessions write
asciicast through ``create``; browser-recorded RDP sessions upload WebM chunks
through ``append_upload`` / ``finalize_upload``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlmodel import col, delete, select

from ...closereasons import CloseReason
from ...cluster.lease import Lease, LocalLease
from ...db.models.sessions import RecordingKeyFrame, RemoteSession
from ...errors import ApiError, Conflict, NotFound, PayloadTooLarge
from ...tasks import cancel_and_wait
from ...timefmt import utcnow
from .live_sessions import LiveSession
from .recording_format import (
    STORAGE_FAILED,
    RecordingFormatError,
    RecordingReader,
    RecordingWriter,
    new_key,
    plaintext_size,
)
from .recording_store import LocalStore, RecordingStore

if TYPE_CHECKING:
    from sqlmodel.ext.asyncio.session import AsyncSession

    from ...db.engine import Database
    from ...metrics import Metrics
    from ...security.secretbox import SecretBox
    from ..audit.audit import AuditLog
    from ..lifecycle import Lifecycle
    from ..settings import Settings
    from .live_sessions import LiveSessions

log = logging.getLogger("hostgate.recordings")

MIB = 1024 * 1024
RETENTION_INTERVAL = 3600.0
HOUSEKEEPING_INTERVAL = 60.0
UPLOAD_ABANDONED_AFTER = 1800.0
DISK_CHECK_INTERVAL = 10.0
DISK_CHECK_BYTES = 16 * MIB
ACTIVE_STATES = ("recording",)
NODE_LOST = "the gateway node holding it stopped answering"
UPLOAD_HANDED_OVER = "the recording upload continues on another gateway node"
SHUTTING_DOWN = "server shutting down"
"""The reason ``kernel.shutdown`` closes live sessions with: an upload stays resumable."""
UPLOAD_HANDOVER_SECONDS = 5.0


@dataclass
class Upload:
    """An RDP recording being uploaded chunk by chunk."""

    writer: RecordingWriter
    session_id: str
    last_activity: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class Recordings:
    """Recording files, their data keys, uploads, disk watermark and retention."""

    def __init__(
        self,
        *,
        directory: Path,
        db: Database,
        secrets: SecretBox,
        settings: Settings,
        audit: AuditLog,
        live: LiveSessions,
        metrics: Metrics,
        lifecycle: Lifecycle,
        lease: Lease | None = None,
        store: RecordingStore | None = None,
    ) -> None:
        self._directory = directory
        self.store: RecordingStore = store or LocalStore(directory)
        # several nodes: the retention runs where the lease is held (abandoned
        # uploads stay each node's own: only the node that has one can close it)
        self.lease: Lease = lease or LocalLease()
        self.db = db
        self.secrets = secrets
        self.settings = settings
        self.audit = audit
        self.live = live
        self.metrics = metrics
        self.removed: Callable[[list[str]], Awaitable[None]] | None = None
        """Set by the kernel: told the sessions whose recordings were deleted (rows stay)."""
        self._uploads: dict[str, Upload] = {}
        self._disk_low = False
        self._disk_checked = 0.0
        self._task: asyncio.Task[None] | None = None
        self.store.on_failure = self._storage_failed
        lifecycle.on_start(self.start)
        lifecycle.on_stop(self.stop)
        lifecycle.on_reload(self.reload)
        lifecycle.on_reload(self.repair)

    @property
    def directory(self) -> Path:
        """Where recording files live (``HOSTGATE_RECORDINGS_DIR``, else the data dir's)."""
        return self._directory

    def path_of(self, row: RemoteSession) -> Path | None:
        """The local file of a session's recording, or None (none, or kept in a bucket)."""
        if not row.recording_file or self.store.kind != "local":
            return None
        return self.directory / Path(row.recording_file).name

    def has_file(self, row: RemoteSession) -> bool:
        """True when the row's recording is stored (a bucket: as far as the row says)."""
        return bool(row.recording_file) and self.store.exists(str(row.recording_file))

    # -- settings -------------------------------------------------------------------

    def enabled(self) -> bool:
        """``recordings.enabled``."""
        return bool(self.settings.get("recordings.enabled"))

    def size_limit(self) -> int | None:
        """``recordings.max_size_mb`` in bytes, None for no cap."""
        megabytes = float(self.settings.get("recordings.max_size_mb") or 0)
        return int(megabytes * MIB) if megabytes > 0 else None

    # -- disk watermark ---------------------------------------------------------------

    async def disk_ok(self, *, force: bool = True) -> bool:
        """False while free disk is below ``recordings.min_free_disk_mb``.

        The first time it goes low an audit event ``recordings.disk_low`` is recorded
        (and so reaches notification rules); it re-arms once space is back.
        """
        now = time.monotonic()
        if not force and now - self._disk_checked < DISK_CHECK_INTERVAL:
            return not self._disk_low
        self._disk_checked = now
        minimum = int(float(self.settings.get("recordings.min_free_disk_mb") or 0) * MIB)
        free = await self.store.free_bytes()
        if free is None:  # a bucket has no free-disk floor
            return True
        low = free < minimum
        if low and not self._disk_low:
            self._disk_low = True
            log.warning("free disk %d bytes is below the recordings watermark", free)
            await self.audit.record(
                "recordings.disk_low",
                target="recordings",
                user_id="system",
                username="system",
                details={"freeBytes": free, "minimumBytes": minimum},
            )
        elif not low:
            self._disk_low = False
        return not low

    # -- writing ----------------------------------------------------------------------

    async def create(self, row: RemoteSession, fmt: str) -> RecordingWriter | None:
        """Start a recording for a new session row (filled in, not yet stored).

        Returns None when recordings are off or the disk is low.
        """
        if not self.enabled() or not await self.disk_ok():
            return None
        key = new_key()
        row.recording_key = self.secrets.seal(key)
        row.recording_file = f"{row.id}.{fmt}"
        row.recording_format = fmt
        row.recording_state = "recording"
        return await asyncio.to_thread(self._writer, row.recording_file, key)

    def _writer(self, name: str, key: bytes) -> RecordingWriter:
        """A writer of a recording, new or resumed (blocking: run in a thread)."""
        return RecordingWriter(self.store.sink(name), key)

    def key_of(self, row: RemoteSession) -> bytes:
        """The data key of a session's recording."""
        if not row.recording_key:
            raise NotFound("Recording not found")
        return self.secrets.open_bytes(row.recording_key)

    async def open_reader(self, row: RemoteSession) -> RecordingReader:
        """A reader of a session's recording; NotFound when there is none.

        Opened in a worker thread: a file's open and reads, or a bucket's first ranged
        GETs (the header and first slot), stay off the event loop.
        """
        if not row.recording_file or not row.recording_key:
            raise NotFound("Recording not found")
        return await asyncio.to_thread(self._open_reader, row.recording_file, self.key_of(row))

    def _open_reader(self, name: str, key: bytes) -> RecordingReader:
        """``open_reader``'s blocking part."""
        source = self.store.source(name)
        if source is None:
            raise NotFound("Recording not found")
        try:
            return RecordingReader(source, key)
        except RecordingFormatError as exc:
            if not isinstance(source, Path):
                source.close()
            raise NotFound(f"Recording cannot be read: {exc}") from None

    async def store_state(self, session_id: str, *, state: str, size: int, note: str = "") -> None:
        """Record a recording's state and plaintext size in its row."""
        async with self.db.session() as session:
            row = await session.get(RemoteSession, session_id)
            if row is None:
                return
            row.recording_state = state
            row.recording_size = size
            if note:
                row.recording_note = note
            row.updated_at = utcnow()
            session.add(row)
            await session.commit()

    async def _storage_failed(self, name: str, reason: str) -> None:
        """The store gave up on a recording: its row says ``stopped``, the audit log why.

        What reached the store stays readable; the session goes on unrecorded.
        """
        session_id = Path(name).stem
        log.warning(
            "the recording of session %s stopped: the store failed (%s)", session_id, reason
        )
        async with self.audit.atomic() as batch:
            row = await batch.session.get(RemoteSession, session_id)
            if row is not None and row.recording_state == "recording":
                row.recording_state = "stopped"
                row.recording_note = STORAGE_FAILED
                row.updated_at = utcnow()
                batch.session.add(row)
            batch.record(
                "recordings.storage_failed",
                target="recordings",
                user_id="system",
                username="system",
                details={"sessionId": session_id, "store": self.store.kind, "reason": reason},
            )

    # -- uploads (RDP WebM from the browser) -------------------------------------------

    async def append_upload(self, row: RemoteSession, body: AsyncIterator[bytes]) -> int:
        """Append one uploaded chunk (streamed); return the recording's size.

        Conflict when the session is not being recorded; PayloadTooLarge when the
        size cap is reached (what fits is kept and the recording is stopped).
        """
        if row.recording_state != "recording" or row.ended_at is not None:
            raise Conflict("This session is not being recorded", code="not_recording")
        upload = self._uploads.get(row.id)
        if upload is None:
            if not row.recording_file:
                raise Conflict("This session is not being recorded", code="not_recording")
            await self._take_over_upload(row.id)
            await self.store.settle(row.recording_file)
            writer = await asyncio.to_thread(self._writer, row.recording_file, self.key_of(row))
            upload = self._uploads.setdefault(row.id, Upload(writer=writer, session_id=row.id))
            if upload.writer is not writer:
                await asyncio.to_thread(writer.close)
            else:
                self._register_upload(row)
        async with upload.lock:
            upload.last_activity = time.monotonic()
            if not await self.disk_ok(force=False):
                await self._stop_upload(upload, "disk_low")
                raise Conflict("Recording stopped: the server's disk is low", code="disk_low")
            limit = self.size_limit()
            unchecked = 0
            async for piece in body:
                if limit is not None and upload.writer.size + len(piece) > limit:
                    upload.writer.write(piece[: max(0, limit - upload.writer.size)])
                    await self._stop_upload(upload, "size_limit")
                    raise PayloadTooLarge("Recording size limit reached; recording stopped")
                upload.writer.write(piece)
                if upload.writer.failure:
                    await self._stop_upload(upload, STORAGE_FAILED)
                    raise Conflict(
                        "Recording stopped: the recordings store failed", code=STORAGE_FAILED
                    )
                unchecked += len(piece)
                if unchecked >= DISK_CHECK_BYTES:
                    unchecked = 0
                    if not await self.disk_ok(force=False):
                        await self._stop_upload(upload, "disk_low")
                        raise Conflict(
                            "Recording stopped: the server's disk is low", code="disk_low"
                        )
            upload.writer.flush()
            size = upload.writer.size
        await self.store_state(row.id, state="recording", size=size)
        return size

    def _register_upload(self, row: RemoteSession) -> None:
        """List an open upload as a live session (kind ``upload``) of this node.

        With several nodes the registry then says which node writes the file: a node
        that dies has its uploads ended by another (``end_abandoned``), and a chunk
        that reaches another node makes this one hand the upload over first.
        """
        self.live.add(
            LiveSession(
                id=row.id,
                kind="upload",
                protocol=row.protocol,
                user_id=row.user_id,
                login_session_id=None,
                connection_id=row.connection_id or "",
                close=functools.partial(self._close_upload, row.id),
                info={"connectionName": row.connection_name or "", "username": row.username},
            )
        )

    async def _take_over_upload(self, session_id: str) -> None:
        """Several nodes: another node writes this upload; make it stop, then write here.

        The holder closes its writer (the file stays complete up to its last chunk,
        the recording stays ``recording``) and leaves the registry; this node then
        resumes the file. A holder that does not let go within UPLOAD_HANDOVER_SECONDS
        (it died and is not yet reaped) gets a 503: the browser's next chunk tries
        again, and once the node is reaped the session has ended.
        """
        if self.live.shared is None or await self.live.find(session_id) is None:
            return
        await self.live.close_where(
            UPLOAD_HANDED_OVER, reason_code=CloseReason.SHUTTING_DOWN, id=session_id
        )
        deadline = time.monotonic() + UPLOAD_HANDOVER_SECONDS
        while await self.live.find(session_id) is not None:
            if time.monotonic() > deadline:
                raise ApiError(
                    "The gateway node writing this recording does not answer; try again",
                    code="recording_held_elsewhere",
                    status=503,
                    headers={"Retry-After": "5"},
                )
            await asyncio.sleep(0.05)

    async def _close_upload(
        self, session_id: str, reason: str, reason_code: CloseReason | None
    ) -> None:
        """The live registry's closer: hand over or stop, else end the session."""
        upload = self._uploads.get(session_id)
        if reason in (UPLOAD_HANDED_OVER, SHUTTING_DOWN):
            if upload is not None:  # the file stays ``recording``: resumed where written next
                async with upload.lock:
                    self._uploads.pop(session_id, None)
                    await asyncio.to_thread(upload.writer.close)
                await self.store_state(session_id, state="recording", size=upload.writer.size)
            return
        async with self.db.session() as session:
            row = await session.get(RemoteSession, session_id)
        if row is not None:
            await self.finalize_upload(row, reason=reason)

    async def _stop_upload(self, upload: Upload, note: str) -> None:
        self._uploads.pop(upload.session_id, None)
        self.live.remove(upload.session_id)
        await asyncio.to_thread(upload.writer.close)
        await self.store_state(
            upload.session_id, state="stopped", size=upload.writer.kept_size(), note=note
        )

    async def finalize_upload(self, row: RemoteSession, *, reason: str = "finalized") -> None:
        """Close an upload: the session ends and its recording is complete."""
        upload = self._uploads.pop(row.id, None)
        self.live.remove(row.id)
        if upload is None and self.live.shared is not None:
            await self._take_over_upload(row.id)  # another node writes it: stop it first
        size = row.recording_size
        failed = False
        if upload is not None:
            async with upload.lock:
                await asyncio.to_thread(upload.writer.close)
                size = upload.writer.kept_size()
                failed = upload.writer.failure is not None
        async with self.db.session() as session:
            stored = await session.get(RemoteSession, row.id)
            if stored is None:
                return
            if failed and stored.recording_state in ("recording", "stopped"):
                stored.recording_state = "stopped"
                stored.recording_note = STORAGE_FAILED
                stored.recording_size = size
            elif stored.recording_state == "recording":
                stored.recording_state = "complete"
                stored.recording_size = size
                self.metrics.recording_written(stored.recording_format or "")
            if stored.ended_at is None:
                stored.ended_at = utcnow()
                stored.end_reason = reason
            stored.updated_at = utcnow()
            session.add(stored)
            await session.commit()

    def last_chunk_at(self, session_id: str) -> float | None:
        """When (``time.monotonic()``) the last chunk of an open upload began; None without one.

        Only this node's uploads: a chunk that reaches another node moves the upload there.
        """
        upload = self._uploads.get(session_id)
        return upload.last_activity if upload is not None else None

    async def end_incomplete(self, session_id: str, *, reason: str, note: str) -> None:
        """End an upload's session with its recording cut short (``stopped``, with ``note``).

        What was uploaded stays readable; later chunks are refused (409 ``not_recording``).
        """
        upload = self._uploads.pop(session_id, None)
        self.live.remove(session_id)
        size: int | None = None
        if upload is not None:
            async with upload.lock:
                upload.writer.close()
                size = upload.writer.size
        async with self.db.session() as session:
            stored = await session.get(RemoteSession, session_id)
            if stored is None:
                return
            if stored.recording_state == "recording":
                stored.recording_state = "stopped"
                stored.recording_note = note
                if size is not None:
                    stored.recording_size = size
                self.metrics.recording_written(stored.recording_format or "")
            if stored.ended_at is None:
                stored.ended_at = utcnow()
                stored.end_reason = reason
            stored.updated_at = utcnow()
            session.add(stored)
            await session.commit()

    def uploading(self, session_id: str) -> bool:
        """True while an upload is open for the session."""
        return session_id in self._uploads

    # -- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        """Open the store, repair rows left open by a crash, start housekeeping."""
        await self.store.start()
        await self.repair()
        self._task = asyncio.create_task(self._housekeeping(), name="recordings-housekeeping")

    async def stop(self) -> None:
        """Stop housekeeping and close open uploads (their sessions end)."""
        await cancel_and_wait(self._task)
        for upload in list(self._uploads.values()):
            self.live.remove(upload.session_id)
            await asyncio.to_thread(upload.writer.close)
            await self.store_state(upload.session_id, state="recording", size=upload.writer.size)
        self._uploads.clear()
        await self.store.stop()

    async def reload(self) -> None:
        """After a restore: drop uploads that belonged to the old database, then repair."""
        for upload in list(self._uploads.values()):
            self.live.remove(upload.session_id)
            await asyncio.to_thread(upload.writer.close)
        self._uploads.clear()
        self._disk_low = False
        await self.repair()

    async def repair(self) -> int:
        """Mark sessions left open by a crash or restart as ended; size their recordings.

        With several nodes, the sessions another node holds (or a dead node held: its
        reaper deals with those) are left alone.
        """
        now = utcnow()
        repaired = 0
        held: set[str] = set()
        if self.live.shared is not None:
            held = {str(entry.get("id")) for entry in await self.live.shared.registry.entries()}
        async with self.db.session() as session:
            query = select(RemoteSession).where(col(RemoteSession.ended_at).is_(None))
            for row in (await session.exec(query)).all():
                if self.live.get(row.id) is not None or row.id in held:
                    continue
                ended = row.updated_at if row.updated_at > row.started_at else now
                await self._close_left_open(row, ended, "server restarted")
                session.add(row)
                repaired += 1
            await session.commit()
        if repaired:
            log.info("marked %d session(s) left open as ended", repaired)
        return repaired

    async def end_abandoned(self, entries: list[dict[str, Any]]) -> int:
        """Mark the sessions of a dead gateway node ended; close their recordings readable."""
        kinds = ("terminal", "stream", "upload")  # file sessions have no row to end
        ids = [str(e.get("id")) for e in entries if e.get("kind") in kinds]
        ended = 0
        async with self.audit.atomic() as batch:
            session = batch.session
            for row_id in ids:
                row = await session.get(RemoteSession, row_id)
                if row is None or row.ended_at is not None:
                    continue
                await self._close_left_open(row, utcnow(), NODE_LOST)
                session.add(row)
                ended += 1
                batch.record(
                    "connection.session_ended",
                    user_id=row.user_id,
                    username=row.username,
                    ip_address=row.client_ip or "",
                    target=row.connection_name,
                    details={
                        "connectionId": row.connection_id,
                        "sessionId": row.id,
                        "protocol": row.protocol,
                        "reason": NODE_LOST,
                        "recordingBytes": row.recording_size or 0,
                    },
                )
        return ended

    async def _close_left_open(self, row: RemoteSession, ended: datetime, reason: str) -> None:
        """End a row nobody holds any more: its recording as far as it was written."""
        row.ended_at = ended
        row.end_reason = row.end_reason or reason
        if row.recording_state == "recording":
            name = row.recording_file
            source = None
            if name and row.recording_key:
                await self.store.settle(name)  # a bucket: complete the parts that arrived
                source = await asyncio.to_thread(self.store.source, name)
            if source is not None:
                key = self.key_of(row)
                try:
                    size = await asyncio.to_thread(plaintext_size, source, key)
                except RecordingFormatError as exc:
                    # kept for whoever wants to look at it; listed as no recording
                    row.recording_size = 0
                    row.recording_state = "damaged"
                    row.recording_note = f"{reason}; recording damaged: {exc}"
                else:
                    row.recording_size = size
                    row.recording_state = "complete"
            else:
                row.recording_state = "none"
            row.recording_note = row.recording_note or reason
        row.updated_at = utcnow()

    async def _housekeeping(self) -> None:
        last_retention = 0.0
        while True:
            try:
                await self._close_abandoned_uploads()
                due = time.monotonic() - last_retention >= RETENTION_INTERVAL
                if due and self.lease.held():
                    last_retention = time.monotonic()
                    await self.apply_retention()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("recordings housekeeping failed")
            await asyncio.sleep(HOUSEKEEPING_INTERVAL)

    async def _close_abandoned_uploads(self) -> None:
        now = time.monotonic()
        for upload in list(self._uploads.values()):
            if now - upload.last_activity < UPLOAD_ABANDONED_AFTER:
                continue
            async with self.db.session() as session:
                row = await session.get(RemoteSession, upload.session_id)
            if row is not None:
                await self.finalize_upload(row, reason="upload abandoned")

    # -- retention and storage ---------------------------------------------------------

    def _busy(self, session_id: str) -> bool:
        return session_id in self._uploads or self.live.held(session_id)

    async def apply_retention(self) -> int:
        """Apply the retention settings; return how many recordings were deleted.

        Deletes recordings older than ``recordings.retention_days`` and, oldest first,
        beyond ``recordings.retention_max_total_mb``. Session rows stay (without a file).
        """
        days = int(self.settings.get("recordings.retention_days") or 0)
        max_total = float(self.settings.get("recordings.retention_max_total_mb") or 0)
        if days <= 0 and max_total <= 0:
            return 0
        async with self.db.session() as session:
            query = (
                select(RemoteSession)
                .where(col(RemoteSession.recording_file).is_not(None))
                .order_by(col(RemoteSession.started_at))
            )
            rows = list((await session.exec(query)).all())
        candidates = [r for r in rows if not self._busy(r.id)]
        doomed: list[RemoteSession] = []
        if days > 0:
            cutoff = utcnow() - timedelta(days=days)
            doomed = [r for r in candidates if r.started_at < cutoff]
        stored = await self.store.sizes()
        if max_total > 0:
            gone = {r.id for r in doomed}
            sizes = {r.id: _stored_size(stored, r) for r in rows if r.id not in gone}
            total = sum(sizes.values())
            cap = int(max_total * MIB)
            for row in candidates:
                if total <= cap:
                    break
                if row.id in gone:
                    continue
                doomed.append(row)
                total -= sizes[row.id]
        if not doomed:
            return 0
        freed = sum(_stored_size(stored, row) for row in doomed)
        async with self.audit.atomic() as batch:
            await self._forget_files(batch.session, doomed, state="purged")
            batch.record(
                "recordings.retention_purged",
                target="recordings",
                user_id="system",
                username="system",
                details={
                    "deleted": len(doomed),
                    "freedBytes": freed,
                    "retentionDays": days,
                    "maxTotalMb": max_total,
                },
            )
        await self._tell_removed(doomed)
        # only now: a failed commit keeps the rows pointing at their files
        await self._unlink(doomed)
        return len(doomed)

    async def delete_files(self, rows: list[RemoteSession], *, state: str | None) -> int:
        """Remove the recording files of rows; with ``state`` also update the rows.

        Returns the bytes freed.
        """
        freed = await self._unlink(rows)
        if state is not None:
            async with self.db.session() as session:
                await self._forget_files(session, rows, state=state)
                await session.commit()
            await self._tell_removed(rows)
        return freed

    async def _tell_removed(self, rows: list[RemoteSession]) -> None:
        """Tell packs (``recordings_removed``) that these sessions' recordings are gone."""
        if self.removed is not None and rows:
            await self.removed([row.id for row in rows])

    async def _unlink(self, rows: list[RemoteSession]) -> int:
        """Delete the recording files (objects) of rows; the bytes freed."""
        names = [str(row.recording_file) for row in rows if row.recording_file]
        return await self.store.delete(names)

    @staticmethod
    async def _forget_files(
        session: AsyncSession, rows: list[RemoteSession], *, state: str
    ) -> None:
        """Mark the rows' recordings gone (``state``) in ``session``, not committed."""
        await session.exec(
            delete(RecordingKeyFrame).where(
                col(RecordingKeyFrame.session_id).in_([row.id for row in rows])
            )
        )
        for row in rows:
            stored = await session.get(RemoteSession, row.id)
            if stored is None:
                continue
            stored.recording_file = None
            stored.recording_key = None
            stored.recording_state = state
            stored.recording_size = 0
            stored.updated_at = utcnow()
            session.add(stored)

    async def storage_bytes(self) -> int:
        """Bytes the recordings take in their directory or bucket."""
        return sum((await self.store.sizes()).values())


def _stored_size(stored: dict[str, int], row: RemoteSession) -> int:
    return stored.get(Path(row.recording_file).name, 0) if row.recording_file else 0


async def stream_plaintext(reader: RecordingReader, start: int, end: int) -> AsyncIterator[bytes]:
    """Decrypt bytes ``start``..``end`` (inclusive) chunk by chunk, off the event loop."""
    try:
        position = start
        while position <= end:
            index = position // reader.chunk
            data = await asyncio.to_thread(reader.read_chunk, index)
            offset = position - index * reader.chunk
            piece = data[offset : min(len(data), end - index * reader.chunk + 1)]
            if not piece:
                return
            yield piece
            position += len(piece)
    finally:
        reader.close()
