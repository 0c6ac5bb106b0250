"""``/file-sessions``: file-transfer session history, events and exports (SPEC 4.3)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import BaseModel
from quart import Blueprint, Response, request
from quart_schema import tag
from typing_extensions import TypedDict

from ..db.models.files import FileEvent, FileSession
from ..errors import InvalidInput
from ..guards import app_kernel, authenticated, current_caller
from ..openapi import answers
from ..pagination import PageQuery, Pagination, page_from
from ..services.sessions.file_sessions import FileSessionLog
from ..timefmt import iso

blueprint = Blueprint("file_sessions", __name__)

EXPORT_TYPES = {"json": "application/json", "csv": "text/csv; charset=utf-8"}


class FileSessionRecord(TypedDict):
    """A file-transfer session."""

    id: str
    userId: str | None
    protocol: str
    startedAt: str
    endedAt: str | None
    connectionName: str | None
    username: str | None
    eventCount: int


class FileSessionPage(Pagination):
    """One page of file-transfer sessions, newest first."""

    sessions: list[FileSessionRecord]


class FileEventRecord(TypedDict):
    """One file event."""

    id: str
    timestamp: str
    action: str
    path: str
    detail: str


class FileEvents(TypedDict):
    """The events of one session, in order."""

    events: list[FileEventRecord]


class ExportQuery(BaseModel):
    """``?format=``."""

    format: Literal["json", "csv", "JSON", "CSV"] = "json"


CSV_HEADER = (
    "session_id",
    "connection",
    "username",
    "protocol",
    "session_started",
    "session_ended",
    "timestamp",
    "action",
    "path",
    "detail",
)


def session_json(row: FileSession) -> FileSessionRecord:
    """The spec's file-transfer-session list entry."""
    return {
        "id": row.id,
        "userId": row.user_id,
        "protocol": row.protocol,
        "startedAt": iso(row.started_at),
        "endedAt": iso(row.ended_at),
        "connectionName": row.connection_name,
        "username": row.username,
        "eventCount": row.event_count,
    }


def event_json(row: FileEvent) -> FileEventRecord:
    """The spec's file event."""
    return {
        "id": row.id,
        "timestamp": iso(row.timestamp),
        "action": row.action,
        "path": row.path,
        "detail": row.detail,
    }


def csv_cell(value: str) -> str:
    """Neutralise spreadsheet formulas in a CSV cell (remote file names are untrusted)."""
    if value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def export_filename(row: FileSession, extension: str) -> str:
    """``file-activity_<connection>_<YYYYmmddHHMMSS>.<ext>`` (safe characters only)."""
    name = re.sub(r"[^A-Za-z0-9]+", "_", row.connection_name).strip("_") or "connection"
    return f"file-activity_{name[:60]}_{row.started_at:%Y%m%d%H%M%S}.{extension}"


async def export_json(log: FileSessionLog, row: FileSession) -> AsyncIterator[bytes]:
    """The session and its events as one JSON document, streamed."""
    head = {
        "id": row.id,
        "connectionName": row.connection_name,
        "username": row.username,
        "protocol": row.protocol,
        "startedAt": iso(row.started_at),
        "endedAt": iso(row.ended_at),
    }
    yield b'{"session":' + json.dumps(head, ensure_ascii=False).encode() + b',"events":['
    first = True
    async for event in log.events(row.id):
        prefix = b"" if first else b","
        first = False
        yield prefix + json.dumps(event_json(event), ensure_ascii=False).encode()
    yield b"]}"


async def export_csv(log: FileSessionLog, row: FileSession) -> AsyncIterator[bytes]:
    """The events as RFC 4180 CSV with the session's columns repeated on each row."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n")
    writer.writerow(CSV_HEADER)
    yield buffer.getvalue().encode()
    fixed = [
        row.id,
        csv_cell(row.connection_name),
        csv_cell(row.username),
        row.protocol,
        iso(row.started_at) or "",
        iso(row.ended_at) or "",
    ]
    async for event in log.events(row.id):
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(
            [
                *fixed,
                iso(event.timestamp) or "",
                event.action,
                csv_cell(event.path),
                csv_cell(event.detail),
            ]
        )
        yield buffer.getvalue().encode()


@blueprint.get("/file-sessions")
@authenticated
@tag(["sessions"])
@answers(FileSessionPage, query=PageQuery)
async def list_file_sessions() -> dict[str, Any]:
    """File-transfer sessions, newest first; every user's with ``sessions.view_any``."""
    page = page_from(request.args)
    sessions = await app_kernel().file_sessions.page(current_caller(), page)
    return {"sessions": [session_json(row) for row in sessions], **page.echo()}


@blueprint.get("/file-sessions/<session_id>/events")
@authenticated
@tag(["sessions"])
@answers(FileEvents)
async def file_session_events(session_id: str) -> dict[str, Any]:
    """The events of one file-transfer session, in order."""
    log = app_kernel().file_sessions
    row = await log.visible(current_caller(), session_id)
    return {"events": [event_json(event) async for event in log.events(row.id)]}


@blueprint.get("/file-sessions/<session_id>/export")
@authenticated
@tag(["sessions"])
@answers(None, media_type=("application/json", "text/csv"), query=ExportQuery)
async def export_file_session(session_id: str) -> Response:
    """Download one session's events as ``json`` (default) or ``csv``."""
    kind = request.args.get("format", "json").lower() or "json"
    if kind not in EXPORT_TYPES:
        raise InvalidInput("format must be json or csv")
    log = app_kernel().file_sessions
    row = await log.visible(current_caller(), session_id)
    body = export_csv(log, row) if kind == "csv" else export_json(log, row)
    filename = export_filename(row, kind)
    response = Response(
        body,
        headers={
            "Content-Type": EXPORT_TYPES[kind],
            "Content-Disposition": f'attachment; filename="{filename}"',
        },
    )
    response.timeout = None
    return response
