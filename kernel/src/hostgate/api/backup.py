"""``/backup``: size, encrypted export (streamed) and all-or-nothing import (SPEC §4.8)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint, Response, request
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from ..datadir import private_open
from ..errors import InvalidInput, NotFound, PayloadTooLarge, RateLimited
from ..guards import app_kernel, current_caller, requires
from ..openapi import answers
from ..requestbody import streamed_body
from ..security.ratelimit import PASSWORD_CHECK_PER_USER
from ..services.backup import BadPassword
from ..timefmt import utcnow

blueprint = Blueprint("backup", __name__)

PASSWORD_HEADER = "X-Backup-Password"
WRITE_BATCH = 1024 * 1024
LIMIT_BUCKET = "backup_password"
RESTORED_MESSAGE = (
    "Backup restored. Every login session was signed out: log in again with an account "
    "from the backup."
)


class ExportBody(BaseModel):
    """``POST /backup/export``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    password: str = Field(min_length=8, max_length=1024)
    includeRecordings: bool = False  # noqa: N815 - the spec's field name


class BackupSize(TypedDict):
    """Bytes a backup would hold."""

    dbSize: int
    recordingsSize: int
    recordingCount: int


class ExportLink(TypedDict):
    """A one-time link to the download, for a browser (a plain link streams to disk)."""

    url: str
    expiresIn: int


class Restored(TypedDict):
    """The backup was restored."""

    ok: bool
    message: str
    recordingsRestored: int


@blueprint.get("/backup/size")
@requires("settings.backup")
@tag(["backup"])
@answers(BackupSize)
async def backup_size() -> dict[str, Any]:
    """Bytes a backup would hold: the database and the recordings."""
    result: dict[str, Any] = await app_kernel().backups.size()
    return result


def export_response(password: str, include_recordings: bool) -> Response:
    """The archive as a streamed download, audited as ``backup.exported``."""
    kernel = app_kernel()
    filename = f"hostgate-backup-{utcnow():%Y-%m-%d}.geb"
    stream = kernel.backups.export(password, include_recordings=include_recordings)
    response = Response(
        stream,
        mimetype="application/octet-stream",
        headers={
            "Content-Disposition": f'attachment; filename="{filename}"',
            "Cache-Control": "no-store",
        },
    )
    response.timeout = None
    return response


async def audit_export(include_recordings: bool, via: str) -> None:
    """``backup.exported`` (never with the password)."""
    await app_kernel().audit.record(
        "backup.exported",
        actor=current_caller(),
        target=f"hostgate-backup-{utcnow():%Y-%m-%d}.geb",
        details={"includeRecordings": include_recordings, "via": via},
    )


@blueprint.post("/backup/export")
@requires("settings.backup")
@validate_request(ExportBody)
@tag(["backup"])
@answers(None, media_type="application/octet-stream")
async def export_backup(data: ExportBody) -> Response:
    """Download an encrypted archive (``.geb``), built while it streams."""
    await audit_export(data.includeRecordings, "post")
    return export_response(data.password, data.includeRecordings)


@blueprint.post("/backup/export-link")
@requires("settings.backup")
@validate_request(ExportBody)
@tag(["backup"])
@answers(ExportLink)
async def export_link(data: ExportBody) -> ExportLink:
    """A one-time link (30 s) that downloads the archive ``POST /backup/export`` would send.

    For browsers, whose plain links stream a download to disk with its progress where a
    script's POST would have to hold it in memory. The link works once, for the same
    user and login session; the password waits sealed with the instance key, never in
    the link.
    """
    kernel = app_kernel()
    caller = current_caller()
    sealed = kernel.secrets.seal(
        json.dumps({"password": data.password, "includeRecordings": data.includeRecordings})
    )
    ticket = await kernel.download_tickets.issue(
        caller.user_id, caller.login_session_id or "", sealed
    )
    return {
        "url": f"/api/v1/backup/export/{ticket}",
        "expiresIn": int(kernel.download_tickets.ttl),
    }


@blueprint.get("/backup/export/<ticket>")
@requires("settings.backup")
@tag(["backup"])
@answers(None, media_type="application/octet-stream", errors=(404,))
async def export_by_link(ticket: str) -> Response:
    """The download of a link from ``POST /backup/export-link`` (once; 404 after)."""
    kernel = app_kernel()
    caller = current_caller()
    redeemed = await kernel.download_tickets.redeem(ticket)
    if (
        redeemed is None
        or redeemed.user_id != caller.user_id
        or redeemed.login_session_id != (caller.login_session_id or "")
    ):
        raise NotFound(
            "This backup link was used already or has expired: start the backup again",
            code="download_expired",
        )
    asked = json.loads(kernel.secrets.open(redeemed.payload))
    include = bool(asked["includeRecordings"])
    await audit_export(include, "link")
    return export_response(str(asked["password"]), include)


def header_text(value: str) -> str:
    """A header value as the client meant it: UTF-8 when its bytes are UTF-8, else Latin-1.

    Servers decode header bytes as Latin-1; a password with characters beyond Latin-1
    can only arrive as UTF-8 bytes.
    """
    raw = value.encode("latin-1", errors="replace")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return value


async def _receive(target: Path, limit: int) -> int:
    """Stream the request body into ``target``; 413 past ``limit``."""
    body = streamed_body()
    received = 0
    pending = bytearray()
    with private_open(target, "wb") as handle:
        async for chunk in body:
            received += len(chunk)
            if received > limit:
                raise PayloadTooLarge(f"The backup is larger than {limit} bytes")
            pending += chunk
            if len(pending) >= WRITE_BATCH:
                await asyncio.to_thread(handle.write, bytes(pending))
                pending.clear()
        if pending:
            await asyncio.to_thread(handle.write, bytes(pending))
    return received


@blueprint.post("/backup/import")
@requires("settings.backup")
@tag(["backup"])
@answers(
    Restored,
    errors=(400, 409, 413, 422, 429),
    request_media_type="application/octet-stream",
    request_headers=(PASSWORD_HEADER,),
)
async def import_backup() -> dict[str, Any]:
    """Restore an archive sent as the raw body; replaces all data (nothing on failure)."""
    kernel = app_kernel()
    caller = current_caller()
    backups = kernel.backups
    password = header_text(request.headers.get(PASSWORD_HEADER, ""))
    if not password:
        raise InvalidInput(f"Send the backup password in the {PASSWORD_HEADER} header")
    wait = await kernel.limits.retry_after(LIMIT_BUCKET, caller.user_id, PASSWORD_CHECK_PER_USER)
    if wait:
        raise RateLimited("Too many wrong backup passwords; try again later", retry_after=wait)
    declared = request.content_length
    if declared is not None and declared > backups.max_import_bytes:
        raise PayloadTooLarge(f"The backup is larger than {backups.max_import_bytes} bytes")
    async with backups.import_slot() as slot:
        if declared is not None:
            free = (await asyncio.to_thread(shutil.disk_usage, slot)).free
            if declared * 2 > free:
                raise PayloadTooLarge(
                    "Not enough free disk space in the data directory to stage this backup",
                    code="insufficient_storage",
                )
        upload = slot / "upload.geb"
        received = await _receive(upload, backups.max_import_bytes)
        if received == 0:
            raise InvalidInput("Send the backup file as the request body")
        try:
            result = await backups.restore(upload, password, slot)
        except BadPassword:
            with contextlib.suppress(RateLimited):
                await kernel.limits.hit(LIMIT_BUCKET, caller.user_id, PASSWORD_CHECK_PER_USER, "")
            raise
    await kernel.audit.record(
        "backup.imported",
        actor=caller,
        target=result.exported_at,
        details={
            "recordingsRestored": result.recordings_restored,
            "rows": sum(result.rows.values()),
            "sourceVersion": result.source_version,
        },
    )
    return {
        "ok": True,
        "message": RESTORED_MESSAGE,
        "recordingsRestored": result.recordings_restored,
    }
