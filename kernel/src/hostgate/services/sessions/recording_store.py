"""Where recordings are stored: a local directory (the default) or an S3-compatible bucket.

``Recordings`` talks to one ``RecordingStore``; ``RecordingWriter`` and
``RecordingReader`` (recording_format) see a ``SlotSink`` / ``SlotSource`` from it.

The bucket backend (``HOSTGATE_RECORDINGS_URL=s3://bucket/prefix``) uses aiobotocore
on the event loop for everything that writes (multipart uploads, in the background),
lists or deletes, and its botocore (a plain synchronous client) for ranged reads,
which ``stream_plaintext`` runs in worker threads. A recording is one object,
``<prefix>/<session id>.<format>``, with the very bytes of a local recording file:
the full encrypted slots go up as multipart parts of at least ``PART_SIZE`` bytes as
they fill (the write path only queues them); the last part (the rest and the tail
slot) goes up when the writer closes. "Flushed" for a bucket is therefore "in an
uploaded part": a crash loses what was not yet in one (under ``PART_SIZE`` plus the
tail slot), and ``settle`` (repair) completes the parts that did arrive.

An upload request that fails is tried again with backoff (``UPLOAD_ATTEMPTS``); when
the bucket still refuses, the recording keeps the parts that arrived (completed at
close, so it reads back up to there), records nothing more, and says so: the sink's
``failure``, which the session's row shows as ``stopped`` / ``storage_failed``, and
the store's ``on_failure`` (the audit entry ``recordings.storage_failed``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ...datadir import private_dir

if TYPE_CHECKING:
    from ...config import Config
    from .recording_format import SlotSink, SlotSource

log = logging.getLogger("hostgate.recordings")

MIB = 1024 * 1024
PART_SIZE = 5 * MIB
"""S3's smallest part but the last: full slots are uploaded once this much is queued."""
MAX_BACKLOG = 4 * PART_SIZE
"""Bytes one recording may have queued for upload; past it, it stops (``storage_slow``)."""
READ_WINDOW = 4 * MIB
"""Bytes one ranged GET fetches for a reader (one request per window, the next ahead)."""
FIRST_WINDOW = 128 * 1024
"""Bytes the first GET of a reader fetches (with the size, from Content-Range)."""
READ_AHEAD = 2
"""Windows a reader fetches ahead of the one it reads (three held at most)."""
_READ_AHEAD = ThreadPoolExecutor(max_workers=8, thread_name_prefix="hostgate-s3-read")
"""Where readers fetch their next window (the reading itself runs in asyncio's threads)."""
DELETE_BATCH = 1000
UPLOAD_ATTEMPTS = 6
"""Tries of one upload request (a part, the completion) before the recording gives up."""
UPLOAD_BACKOFF = 0.5
"""Seconds before the second try; doubled before each next (15.5 s of outage survived)."""

T = TypeVar("T")


class StoreUnavailable(Exception):
    """The recordings store cannot be used (a bucket that does not answer); start-up stops."""


def _reason(exc: Exception) -> str:
    """What went wrong, without the request (its URL and headers stay out of messages)."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error", {})
        return f"{error.get('Code') or '?'} {error.get('Message') or ''}".strip()
    return type(exc).__name__


class RecordingStore(ABC):
    """The storage below ``Recordings``: recordings by name (``<session id>.<format>``)."""

    kind: str
    shared: bool
    """True when every node reaches the same recordings without a shared directory."""
    on_failure: Callable[[str, str], Awaitable[None]] | None = None
    """Told (recording name, reason) when the store gives up on a recording's bytes."""

    @abstractmethod
    async def start(self) -> None:
        """Prepare the store (create the directory, open the client)."""

    async def stop(self) -> None:  # noqa: B027 - most stores hold nothing to release
        """Finish pending uploads and release the store."""

    @abstractmethod
    def describe(self) -> str:
        """Where recordings go, for messages (never a credential)."""

    @abstractmethod
    def sink(self, name: str) -> Path | SlotSink:
        """What a ``RecordingWriter`` writes to (blocking I/O on a resume: call in a thread)."""

    @abstractmethod
    def source(self, name: str) -> Path | SlotSource | None:
        """What a ``RecordingReader`` reads, None when there is no such recording."""

    @abstractmethod
    def exists(self, name: str) -> bool:
        """True when the recording is (or is being) stored, as far as is cheap to tell."""

    @abstractmethod
    async def sizes(self) -> dict[str, int]:
        """Every stored recording's stored bytes by name."""

    @abstractmethod
    async def delete(self, names: list[str]) -> int:
        """Delete recordings; the bytes freed."""

    async def settle(self, name: str) -> None:  # noqa: B027 - a file is always settled
        """After a crash: make what reached the store of a recording readable."""

    async def free_bytes(self) -> int | None:
        """Free space left for recordings, None when unbounded (a bucket)."""
        return None

    @abstractmethod
    def chunks(self, name: str, size: int) -> AsyncIterator[bytes]:
        """A stored recording's bytes in pieces (a backup), memory flat."""

    @abstractmethod
    async def upload_file(self, name: str, path: Path) -> None:
        """Store a local file as recording ``name`` (a restore)."""


class LocalStore(RecordingStore):
    """Recording files in a directory (``HOSTGATE_RECORDINGS_DIR`` or the data dir's)."""

    kind = "local"
    shared = False

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def describe(self) -> str:
        """The directory."""
        return str(self.directory)

    async def start(self) -> None:
        """Create the directory (0700)."""
        private_dir(self.directory)

    def path(self, name: str) -> Path:
        """The file of a recording."""
        return self.directory / Path(name).name

    def sink(self, name: str) -> Path:
        """The file path (the writer opens it)."""
        return self.path(name)

    def source(self, name: str) -> Path | None:
        """The file path when it exists."""
        path = self.path(name)
        return path if path.exists() else None

    def exists(self, name: str) -> bool:
        """The file exists."""
        return self.path(name).exists()

    async def upload_file(self, name: str, path: Path) -> None:
        """A copy of a local file as the recording ``name`` (owner-only, as every file here)."""
        target = self.path(name)

        def copy() -> None:
            shutil.copyfile(path, target)
            target.chmod(0o600)

        await asyncio.to_thread(copy)

    async def sizes(self) -> dict[str, int]:
        """Every regular file's size (dot entries such as the several-nodes marker skipped)."""

        def scan() -> dict[str, int]:
            found: dict[str, int] = {}
            if not self.directory.exists():
                return found
            with os.scandir(self.directory) as entries:
                for entry in entries:
                    with contextlib.suppress(OSError):
                        if entry.is_file() and not entry.name.startswith("."):
                            found[entry.name] = entry.stat().st_size
            return found

        return await asyncio.to_thread(scan)

    async def delete(self, names: list[str]) -> int:
        """Unlink the files."""

        def unlink() -> int:
            freed = 0
            for name in names:
                path = self.path(name)
                with contextlib.suppress(FileNotFoundError):
                    freed += path.stat().st_size
                    path.unlink()
            return freed

        return await asyncio.to_thread(unlink)

    async def free_bytes(self) -> int | None:
        """Free disk where the directory is."""
        private_dir(self.directory)
        return shutil.disk_usage(self.directory).free

    async def chunks(self, name: str, size: int) -> AsyncIterator[bytes]:
        """The file in 1 MiB reads, off the event loop."""
        handle = await asyncio.to_thread(open, self.path(name), "rb")
        try:
            while chunk := await asyncio.to_thread(handle.read, MIB):
                yield chunk
        finally:
            handle.close()


@dataclass(frozen=True)
class S3Location:
    """``s3://bucket/prefix`` split."""

    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> S3Location:
        """From ``HOSTGATE_RECORDINGS_URL`` (checked by the config loader)."""
        bucket, _, prefix = url.removeprefix("s3://").partition("/")
        prefix = prefix.strip("/")
        return cls(bucket, f"{prefix}/" if prefix else "")


class S3Store(RecordingStore):
    """Recordings as objects in an S3-compatible bucket, reached by every node."""

    kind = "s3"
    shared = True

    def __init__(self, config: Config) -> None:
        self.location = S3Location.parse(config.recordings_url)
        self._options: dict[str, Any] = {"service_name": "s3"}
        if config.s3_endpoint_url:
            self._options["endpoint_url"] = config.s3_endpoint_url
        if config.s3_region:
            self._options["region_name"] = config.s3_region
        if config.s3_access_key_id:
            self._options["aws_access_key_id"] = config.s3_access_key_id
            self._options["aws_secret_access_key"] = config.s3_secret_access_key
        self._stack = contextlib.AsyncExitStack()
        self.client: Any = None
        self._sync: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._closing: dict[str, asyncio.Future[None]] = {}
        self._reports: set[asyncio.Future[None]] = set()

    def describe(self) -> str:
        """The bucket and prefix (the endpoint and credentials stay out of messages)."""
        return f"s3://{self.location.bucket}/{self.location.prefix}"

    def key(self, name: str) -> str:
        """The object key of a recording."""
        return self.location.prefix + Path(name).name

    async def start(self) -> None:
        """Open the clients and check the bucket answers."""
        if self.client is not None:  # a restore's recovery may have started it already
            return
        from aiobotocore.session import get_session  # the optional s3 extra
        from botocore.config import Config as BotoConfig
        from botocore.exceptions import BotoCoreError, ClientError
        from botocore.session import get_session as get_sync_session

        self.loop = asyncio.get_running_loop()
        # no SHA-256 payload signature and no CRC32 of every part and window: each
        # 64 KiB slot carries its own AES-GCM tag, checked on every read, which a
        # checksum would only repeat (botocore would hash whole parts on the loop)
        boto = BotoConfig(
            retries={"max_attempts": 3, "mode": "standard"},
            s3={"payload_signing_enabled": False},
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        self.client = await self._stack.enter_async_context(
            get_session().create_client(config=boto, **self._options)
        )
        self._sync = get_sync_session().create_client(config=boto, **self._options)
        try:
            await self.client.head_bucket(Bucket=self.location.bucket)
        except (BotoCoreError, ClientError) as exc:
            await self.stop()
            self.client = None
            raise StoreUnavailable(
                f"The recordings bucket {self.describe()} (HOSTGATE_RECORDINGS_URL) cannot be "
                f"used: {_reason(exc)}. It must exist and the credentials must reach it."
            ) from None

    async def stop(self) -> None:
        """Wait for closing writers' uploads, then close the clients."""
        pending = [future for future in self._closing.values() if not future.done()]
        pending += list(self._reports)
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        await self._stack.aclose()
        if self._sync is not None:
            self._sync.close()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the store's loop from a worker thread and wait for it."""
        assert self.loop is not None
        if _on_loop(self.loop):
            coro.close()
            raise RuntimeError("a blocking bucket call on the event loop: call it in a thread")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def sink(self, name: str) -> S3Sink:
        """A new upload; resuming a stored recording copies it (blocking: call in a thread)."""
        return S3Sink(self, self.key(name))

    def source(self, name: str) -> S3Source | None:
        """Ranged GETs of the object (None when it does not exist)."""
        try:
            return S3Source(self, self.key(name))
        except FileNotFoundError:
            return None

    def exists(self, name: str) -> bool:
        """True: the row says so (a HEAD per listed session would cost a request each)."""
        return True

    async def head(self, key: str) -> int | None:
        """An object's size, None when absent."""
        from botocore.exceptions import ClientError

        try:
            answer = await self.client.head_object(Bucket=self.location.bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        return int(answer["ContentLength"])

    async def sizes(self) -> dict[str, int]:
        """Every object under the prefix."""
        found: dict[str, int] = {}
        paginator = self.client.get_paginator("list_objects_v2")
        async for page in paginator.paginate(
            Bucket=self.location.bucket, Prefix=self.location.prefix
        ):
            for item in page.get("Contents", []):
                name = item["Key"][len(self.location.prefix) :]
                if name and "/" not in name:
                    found[name] = int(item["Size"])
        return found

    async def delete(self, names: list[str]) -> int:
        """Delete the objects (and abort their unfinished uploads)."""
        freed = 0
        sizes = await self.sizes()
        for start in range(0, len(names), DELETE_BATCH):
            batch = names[start : start + DELETE_BATCH]
            freed += sum(sizes.get(Path(n).name, 0) for n in batch)
            await self.client.delete_objects(
                Bucket=self.location.bucket,
                Delete={"Objects": [{"Key": self.key(n)} for n in batch], "Quiet": True},
            )
        if names:  # one listing of the prefix's unfinished uploads, not one per name
            doomed = {self.key(n) for n in names}
            for upload in await self._uploads(self.location.prefix, exact=False):
                if upload["Key"] in doomed:
                    await self._abort(upload["Key"], upload["UploadId"])
        return freed

    async def empty(self) -> int:
        """Delete every recording under the prefix and abort every unfinished upload.

        A test gateway's reset (``hostgate.testreset``); the bytes freed.
        """
        freed = await self.delete(list(await self.sizes()))
        for upload in await self._uploads(self.location.prefix, exact=False):
            await self._abort(upload["Key"], upload["UploadId"])
        return freed

    async def _uploads(self, key: str, *, exact: bool = True) -> list[dict[str, Any]]:
        """Unfinished uploads of ``key`` (or under the prefix ``key`` when not ``exact``)."""
        found: list[dict[str, Any]] = []
        paginator = self.client.get_paginator("list_multipart_uploads")
        async for page in paginator.paginate(Bucket=self.location.bucket, Prefix=key):
            found += [u for u in page.get("Uploads", []) if not exact or u["Key"] == key]
        return found

    async def _abort(self, key: str, upload_id: str) -> None:
        with contextlib.suppress(Exception):
            await self.client.abort_multipart_upload(
                Bucket=self.location.bucket, Key=key, UploadId=upload_id
            )

    async def settle(self, name: str) -> None:
        """Complete the newest unfinished upload of a recording from the parts that arrived.

        A writer closing on this node is waited for first. The other unfinished uploads
        (and one without parts) are aborted.
        """
        key = self.key(name)
        closing = self._closing.get(key)
        if closing is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(closing)
        uploads = sorted(await self._uploads(key), key=lambda u: u["Initiated"], reverse=True)
        for position, upload in enumerate(uploads):
            parts: list[dict[str, Any]] = []
            if position == 0:
                answer = await self.client.list_parts(
                    Bucket=self.location.bucket, Key=key, UploadId=upload["UploadId"]
                )
                parts = [
                    {"PartNumber": p["PartNumber"], "ETag": p["ETag"]}
                    for p in answer.get("Parts", [])
                ]
            if not parts:
                await self._abort(key, upload["UploadId"])
                continue
            await self.client.complete_multipart_upload(
                Bucket=self.location.bucket,
                Key=key,
                UploadId=upload["UploadId"],
                MultipartUpload={"Parts": parts},
            )
            log.info("completed an unfinished recording upload (%d parts)", len(parts))

    async def chunks(self, name: str, size: int) -> AsyncIterator[bytes]:
        """Ranged GETs of ``READ_WINDOW`` bytes."""
        key = self.key(name)
        for start in range(0, size, READ_WINDOW):
            yield await self.get_range(key, start, min(size, start + READ_WINDOW))

    async def upload_file(self, name: str, path: Path) -> None:
        """A local file as the object of ``name``: one PUT, or parts of ``PART_SIZE``."""
        bucket, key = self.location.bucket, self.key(name)
        size = path.stat().st_size
        handle = await asyncio.to_thread(open, path, "rb")
        try:
            if size <= PART_SIZE:
                body = await asyncio.to_thread(handle.read)
                await self.client.put_object(Bucket=bucket, Key=key, Body=body)
                return
            upload_id = (await self.client.create_multipart_upload(Bucket=bucket, Key=key))[
                "UploadId"
            ]
            parts: list[dict[str, Any]] = []
            try:
                while body := await asyncio.to_thread(handle.read, PART_SIZE):
                    answer = await self.client.upload_part(
                        Bucket=bucket,
                        Key=key,
                        UploadId=upload_id,
                        PartNumber=len(parts) + 1,
                        Body=body,
                    )
                    parts.append({"PartNumber": len(parts) + 1, "ETag": answer["ETag"]})
                await self.client.complete_multipart_upload(
                    Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
                )
            except BaseException:
                await self._abort(key, upload_id)
                raise
        finally:
            handle.close()

    async def get_range(self, key: str, start: int, stop: int) -> bytes:
        """Bytes ``start`` .. ``stop`` (exclusive) of an object."""
        answer = await self.client.get_object(
            Bucket=self.location.bucket, Key=key, Range=f"bytes={start}-{stop - 1}"
        )
        async with answer["Body"] as body:
            return bytes(await body.read())

    def track_failure(self, coro: Awaitable[None]) -> None:
        """Run a failure report in the background; ``stop`` waits for it."""
        report = asyncio.ensure_future(coro)
        self._reports.add(report)
        report.add_done_callback(self._reports.discard)

    def track_close(self, key: str, future: asyncio.Future[None]) -> None:
        """A writer closing in the background: ``settle`` and ``stop`` wait for it."""
        self._closing[key] = future
        future.add_done_callback(lambda _: self._closing.pop(key, None))


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class S3Source:
    """Ranged GETs of one object, ``READ_WINDOW`` bytes each, ``READ_AHEAD`` fetched ahead.

    Three windows at most are held (the one read and the ones coming), so memory
    stays flat whatever the object's size; reading ahead overlaps the requests' round
    trips with the decryption of the window before.
    """

    def __init__(self, store: S3Store, key: str) -> None:
        from botocore.exceptions import ClientError

        self._store = store
        self._key = key
        self._window_start = 0
        self._window = b""
        self._ahead: deque[tuple[int, Future[tuple[bytes, int]]]] = deque()
        try:
            # small: the header and first slot (Recordings.open_reader runs in a thread)
            self._window, self._size = self._get(0, FIRST_WINDOW)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code in ("404", "NoSuchKey", "NotFound", "InvalidRange"):
                raise FileNotFoundError(key) from None
            raise

    def _get(self, start: int, length: int = READ_WINDOW) -> tuple[bytes, int]:
        """Bytes from ``start`` and the object's size (from Content-Range)."""
        if self._store.loop is not None and _on_loop(self._store.loop):
            raise RuntimeError("a blocking bucket read on the event loop: read in a thread")
        answer = self._store._sync.get_object(
            Bucket=self._store.location.bucket,
            Key=self._key,
            Range=f"bytes={start}-{start + length - 1}",
        )
        with contextlib.closing(answer["Body"]) as body:
            data = body.read()
        total = str(answer.get("ContentRange", "")).rpartition("/")[2]
        return data, int(total) if total.isdigit() else len(data)

    def size(self) -> int:
        """The object's size."""
        return self._size

    def _window_at(self, start: int) -> None:
        end = self._window_start + len(self._window)
        if self._ahead and self._ahead[0][0] == end and self._window_start <= start <= end:
            # slots straddle windows: keep the rest of this one, add the one fetched ahead
            data = self._window[start - self._window_start :] + self._ahead.popleft()[1].result()[0]
        else:
            self._cancel_ahead()
            data = self._get(start)[0]
        self._window, self._window_start = data, start
        following = self._ahead[-1][0] + READ_WINDOW if self._ahead else start + len(data)
        while len(self._ahead) < READ_AHEAD and following < self._size:
            self._ahead.append((following, _READ_AHEAD.submit(self._get, following)))
            following += READ_WINDOW

    def _cancel_ahead(self) -> None:
        while self._ahead:
            self._ahead.popleft()[1].cancel()

    def read(self, offset: int, length: int) -> bytes:
        """Bytes from the held window, moving the window to ``offset`` when needed."""
        end = min(offset + length, self._size)
        if offset < self._window_start or end > self._window_start + len(self._window):
            if length > READ_WINDOW:
                return self._get(offset, end - offset)[0]
            self._window_at(offset)
        start = offset - self._window_start
        return self._window[start : start + (end - offset)]

    def close(self) -> None:
        """Drop the windows."""
        self._window = b""
        self._cancel_ahead()


class S3Sink:
    """A recording written as a multipart upload; the event loop uploads in the background.

    ``write`` (on the loop or in a thread) only queues: full slots collect in a part
    buffer, and each ``PART_SIZE`` of them is handed to the upload task. The tail slot
    stays in memory until ``close``, which uploads the rest as the last part and
    completes the upload (in a thread it waits; on the loop it finishes in the
    background and ``S3Store.settle`` waits for it). A resumed recording is first
    copied into the new upload server-side (UploadPartCopy), its last piece and tail
    slot downloaded.
    """

    def __init__(self, store: S3Store, key: str) -> None:
        self._store = store
        self._key = key
        self._buffer = bytearray()
        self._tail = b""
        self._stored = 0  # bytes in uploaded or queued parts plus the buffer
        self._queue: deque[tuple[bytes | None, str]] = deque()  # (part, source)
        self._queued_bytes = 0
        self._parts: list[dict[str, Any]] = []
        self._upload_id: str | None = None
        self._task: asyncio.Future[None] | None = None
        self._closing = False
        self.error: BaseException | None = None
        self.failure: str | None = None
        self.retries = 0
        """Upload requests tried again so far."""
        self._kept = 0
        self._completed = False
        self.overflowed = False
        self._resume_header = b""
        self._resume_tail_at = 0
        self._copies: list[tuple[int, int]] = []
        existing = store.run(store.head(key))
        if existing:
            self._prepare_resume(existing)
            self._tail = self._resume_tail

    # -- resume -------------------------------------------------------------------

    def _prepare_resume(self, size: int) -> None:
        """Plan a resume of a stored object of ``size`` bytes (header, slots, tail)."""
        from .recording_format import HEADER_SIZE, SLOT_OVERHEAD, _parse_header

        header = self._store.run(self._store.get_range(self._key, 0, HEADER_SIZE))
        slot = _parse_header(header) + SLOT_OVERHEAD
        prefix = HEADER_SIZE + (size - HEADER_SIZE) // slot * slot
        self._resume_header = header
        self._resume_size = size
        self._resume_tail_at = prefix
        self._resume_tail = b""
        if size > prefix:
            self._resume_tail = self._store.run(self._store.get_range(self._key, prefix, size))
        pieces = prefix // PART_SIZE
        if pieces == 0:
            self._buffer += self._store.run(self._store.get_range(self._key, 0, prefix))
        else:
            bounds = [i * PART_SIZE for i in range(pieces)] + [prefix]
            self._copies = list(zip(bounds, bounds[1:], strict=False))
        self._stored = prefix

    def stored_size(self) -> int:
        """The resumed object's size (0 for a new recording)."""
        return getattr(self, "_resume_size", 0)

    def read(self, offset: int, length: int) -> bytes:
        """The resumed object's header, tail slot, or any range of it."""
        if offset == 0 and length <= len(self._resume_header):
            return self._resume_header[:length]
        if offset >= self._resume_tail_at and self._resume_tail:
            start = offset - self._resume_tail_at
            return self._resume_tail[start : start + length]
        return self._store.run(self._store.get_range(self._key, offset, offset + length))

    def truncate(self, size: int) -> None:
        """Drop a damaged tail slot of the resumed object."""
        if size <= self._resume_tail_at:
            self._resume_tail = self._tail = b""

    # -- writing ------------------------------------------------------------------

    def write(self, offset: int, data: bytes, *, full: bool) -> None:
        """Queue a full slot (or the header), or hold the tail slot."""
        if self.overflowed or self.error is not None:
            return
        if not full:
            self._tail = data
            return
        self._tail = b""
        if offset != self._stored:
            raise ValueError("full slots are appended in order")
        self._buffer += data
        self._stored += len(data)
        if len(self._buffer) >= PART_SIZE:
            self._enqueue(bytes(self._buffer))
            self._buffer.clear()

    def _enqueue(self, part: bytes | None, action: str = "part") -> None:
        if part is not None and self._queued_bytes + len(part) > MAX_BACKLOG:
            # the bucket is slower than the session: drop rather than grow (bounded memory)
            if not self.overflowed:
                log.warning("recording upload falls behind; the recording stops here")
                self.failure = self.failure or "the bucket is slower than the session"
                self._report(self.failure)
            self.overflowed = True
            self._tail = b""
            return
        self._queue.append((part, action))
        self._queued_bytes += len(part or b"")
        loop = self._store.loop
        assert loop is not None
        if _on_loop(loop):
            self._kick()
        else:
            loop.call_soon_threadsafe(self._kick)

    def _kick(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._pump())

    async def _call(self, request: Callable[..., Awaitable[Any]], **arguments: Any) -> Any:
        """One upload request, tried again with backoff while the bucket fails it."""
        delay = UPLOAD_BACKOFF
        for attempt in range(1, UPLOAD_ATTEMPTS):
            try:
                return await request(Bucket=self._store.location.bucket, Key=self._key, **arguments)
            except Exception as exc:
                self.retries += 1
                log.info(
                    "recording upload of %s failed (%s, try %d), trying again in %.1f s",
                    Path(self._key).name,
                    _reason(exc),
                    attempt,
                    delay,
                )
            await asyncio.sleep(delay)
            delay *= 2
        return await request(Bucket=self._store.location.bucket, Key=self._key, **arguments)

    async def _pump(self) -> None:
        client = self._store.client
        bucket = self._store.location.bucket
        while self._queue:
            part, action = self._queue[0]
            try:
                if action == "complete" and self._upload_id is None and not self._copies:
                    if self.error is None:  # never reached a part: one plain PUT
                        await self._call(client.put_object, Body=part or b"")
                        self._kept, self._completed = len(part or b""), True
                else:
                    if self._upload_id is None:
                        answer = await self._call(client.create_multipart_upload)
                        self._upload_id = answer["UploadId"]
                        for start, stop in self._copies:
                            number = len(self._parts) + 1
                            copied = await self._call(
                                client.upload_part_copy,
                                UploadId=self._upload_id,
                                PartNumber=number,
                                CopySource={"Bucket": bucket, "Key": self._key},
                                CopySourceRange=f"bytes={start}-{stop - 1}",
                            )
                            etag = copied["CopyPartResult"]["ETag"]
                            self._parts.append({"PartNumber": number, "ETag": etag})
                            self._kept += stop - start
                    if part:
                        number = len(self._parts) + 1
                        answer = await self._call(
                            client.upload_part,
                            UploadId=self._upload_id,
                            PartNumber=number,
                            Body=part,
                        )
                        self._parts.append({"PartNumber": number, "ETag": answer["ETag"]})
                        self._kept += len(part)
                    if action == "complete" and self._parts:
                        await self._call(
                            client.complete_multipart_upload,
                            UploadId=self._upload_id,
                            MultipartUpload={"Parts": self._parts},
                        )
                        self._completed = True
                    elif action == "complete":  # failed before any part: nothing to keep
                        await self._store._abort(self._key, self._upload_id)
            except Exception as exc:
                self._queue.clear()
                self._queued_bytes = 0
                self._give_up(exc)
                return
            self._queue.popleft()
            self._queued_bytes -= len(part or b"")

    def _give_up(self, exc: Exception) -> None:
        """The bucket kept failing: record nothing more, say why (log, ``on_failure``)."""
        first = self.error is None
        self.error = exc
        self.failure = _reason(exc)
        self._tail = b""
        self._buffer.clear()
        log.warning(
            "recording upload of %s failed after %d tries (%s): the recording stops here",
            Path(self._key).name,
            UPLOAD_ATTEMPTS,
            self.failure,
        )
        if first:
            self._report(self.failure)

    def _report(self, reason: str) -> None:
        """Tell the store's ``on_failure`` (on its loop) that this recording lost bytes."""
        callback, loop = self._store.on_failure, self._store.loop
        if callback is None or loop is None:
            return
        name = Path(self._key).name
        if _on_loop(loop):
            self._store.track_failure(callback(name, reason))
        else:
            loop.call_soon_threadsafe(lambda: self._store.track_failure(callback(name, reason)))

    def kept_size(self) -> int:
        """Bytes of the completed object (the parts that arrived after a failure)."""
        return self._kept if self._completed else 0

    def flush(self) -> None:
        """Nothing below a part: full slots already go up as ``PART_SIZE`` parts fill."""

    def close(self) -> None:
        """Upload the rest (the last part, any size) and complete the upload."""
        if self._closing:
            return
        self._closing = True
        # after an overflow or a failure only the parts before it are kept: later
        # slots would not follow on from them
        last = b"" if self.overflowed or self.error else bytes(self._buffer) + self._tail
        self._buffer.clear()
        self._queue.append((last, "complete"))
        loop = self._store.loop
        assert loop is not None
        if _on_loop(loop):
            self._kick()
            assert self._task is not None
            self._store.track_close(self._key, self._task)
            return

        async def finish() -> None:
            self._kick()
            assert self._task is not None
            self._store.track_close(self._key, self._task)
            await asyncio.shield(self._task)

        # a failed upload was logged by the pump; the session's close goes on regardless
        asyncio.run_coroutine_threadsafe(finish(), loop).result()

    def discard(self) -> None:
        """Abort the upload; nothing of it stays."""
        self._closing = True
        self._queue.clear()
        store = self._store
        upload_id = self._upload_id

        async def abort() -> None:
            if upload_id is not None:
                await store._abort(self._key, upload_id)

        loop = store.loop
        assert loop is not None
        if _on_loop(loop):
            asyncio.ensure_future(abort())
        else:
            asyncio.run_coroutine_threadsafe(abort(), loop).result()


def store_for(config: Config) -> RecordingStore:
    """The store the configuration names: a bucket (``recordings_url``) or the directory."""
    if config.recordings_url:
        return S3Store(config)
    return LocalStore(config.resolved_recordings_dir)
