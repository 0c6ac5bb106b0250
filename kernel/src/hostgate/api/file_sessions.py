"""``/file-sessions``: file-transfer session history, events and exports (SPEC 4.3)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel
from quart import Blueprint, Response, request
from quart_schema import tag
from typing_extensions import TypedDict

from ..errors import InvalidInput
from ..guards import app_kernel, authenticated, current_caller
from ..openapi import answers
from ..pagination import PageQuery, Pagination, page_from

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


@blueprint.get("/file-sessions")
@authenticated
@tag(["sessions"])
@answers(FileSessionPage, query=PageQuery)
async def list_file_sessions() -> dict[str, Any]:
    """File-transfer sessions, newest first; every user's with ``sessions.view_any``."""
    page = page_from(request.args)
    sessions = await app_kernel().file_sessions.page(current_caller(), page)
    return {"sessions": sessions, **page.echo()}


@blueprint.get("/file-sessions/<session_id>/events")
@authenticated
@tag(["sessions"])
@answers(FileEvents)
async def file_session_events(session_id: str) -> dict[str, Any]:
    """The events of one file-transfer session, in order."""
    log = app_kernel().file_sessions
    row = await log.visible(current_caller(), session_id)
    return {"events": await log.events(row.id)}


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
    body = log.export_csv(row) if kind == "csv" else log.export_json(row)
    filename = log.export_filename(row, kind)
    response = Response(
        body,
        headers={
            "Content-Type": EXPORT_TYPES[kind],
            "Content-Disposition": f'attachment; filename="{filename}"',
        },
    )
    response.timeout = None
    return response
