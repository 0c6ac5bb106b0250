"""``/audit``: the audit log; callers without ``audit.view_any`` see their own entries."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field
from quart import Blueprint, Response, request
from quart_schema import tag
from typing_extensions import TypedDict

from ..errors import InvalidInput
from ..guards import app_kernel, authenticated, current_caller, requires
from ..openapi import answers
from ..pagination import ID_MAX, FilterQuery, PageQuery, Pagination, page_from
from ..security.ratelimit import Limit
from ..services.audit import audit_query
from ..services.identity.identity import Caller
from ..timefmt import iso, parse_iso, utcnow
from .file_sessions import csv_cell

blueprint = Blueprint("audit", __name__)

VIEW_ANY = "audit.view_any"
EXPORT_TYPES = {"json": "application/json", "csv": "text/csv; charset=utf-8"}
CSV_HEADER = (
    "timestamp",
    "eventType",
    "username",
    "displayName",
    "userId",
    "target",
    "ipAddress",
    "details",
    "id",
)
# walking the whole chain is heavy: a few checks a minute per user
VERIFY_BUCKET = "audit.verify"
VERIFY_PER_USER = Limit(6, 60)


def _time(name: str) -> Any:
    raw = request.args.get(name, "").strip()
    if not raw:
        return None
    try:
        return parse_iso(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be an ISO 8601 timestamp") from None


class AuditQuery(PageQuery):
    """The filters of ``GET /audit``."""

    search: str = Field(default="", max_length=audit_query.SEARCH_MAX)
    eventType: str = Field(default="", description="comma-separated event types")
    userId: str = Field(default="", max_length=ID_MAX)  # noqa: N815 - the API's name
    from_: datetime | None = Field(default=None, alias="from")
    to: datetime | None = None


class AuditFilterQuery(FilterQuery):
    """The filters of ``GET /audit/export`` (those of ``GET /audit``) and the format."""

    model_config = ConfigDict(populate_by_name=True)
    format: Literal["json", "csv"] = "json"
    search: str = Field(default="", max_length=audit_query.SEARCH_MAX)
    eventType: str = Field(default="", description="comma-separated event types")
    userId: str = Field(default="", max_length=ID_MAX)  # noqa: N815 - the API's name
    from_: datetime | None = Field(default=None, alias="from")
    to: datetime | None = None


class ChainCheck(TypedDict):
    """The outcome of walking the audit log's hash chain (``hostgate audit verify``)."""

    ok: bool
    checked: int
    problem: str
    seq: int | None
    entryId: str | None
    headSeq: int | None
    headHash: str


class AuditEntry(TypedDict):
    """One audit entry."""

    id: str
    eventType: str
    userId: str | None
    username: str | None
    displayName: str | None
    target: str | None
    details: dict[str, Any]
    ipAddress: str | None
    timestamp: str


class PagedTotal(Pagination):
    """The page echoed, with the number of entries and pages."""

    total: int
    totalPages: int


class AuditPage(TypedDict):
    """One page of entries, newest first."""

    entries: list[AuditEntry]
    pagination: PagedTotal


class EventTypes(TypedDict):
    """Distinct event types."""

    eventTypes: list[str]


class AuditUser(TypedDict):
    """A user that has entries."""

    id: str
    username: str | None
    displayName: str | None


class AuditUsers(TypedDict):
    """Users that have entries."""

    users: list[AuditUser]


@blueprint.get("/audit")
@authenticated
@tag(["audit"])
@answers(AuditPage, query=AuditQuery)
async def list_entries() -> dict[str, Any]:
    """Filtered, paginated entries, newest first."""
    caller = current_caller()
    page = page_from(request.args)
    flt = _filter(caller)
    events, total = await app_kernel().audit_query.search(flt, page)
    pages = (total + page.limit - 1) // page.limit
    entries = [event.to_json() for event in events]
    return {"entries": entries, "pagination": {**page.echo(), "total": total, "totalPages": pages}}


def _filter(caller: Caller) -> audit_query.AuditFilter:
    """The filters of the query string; a caller without ``audit.view_any`` sees their own."""
    # lengths are checked before the view runs (``AuditQuery``, ``AuditFilterQuery``)
    search = request.args.get("search", "").strip()
    types = tuple(t.strip() for t in request.args.get("eventType", "").split(",") if t.strip())
    return audit_query.AuditFilter(
        search=search,
        event_types=types,
        user_id=request.args.get("userId", "").strip() or None,
        start=_time("from"),
        end=_time("to"),
        only_user=None if caller.can(VIEW_ANY) else caller.user_id,
    )


async def export_json(entries: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
    """The entries as one JSON array, streamed."""
    yield b"["
    first = True
    async for entry in entries:
        yield (b"" if first else b",") + json.dumps(entry, ensure_ascii=False).encode()
        first = False
    yield b"]"


async def export_csv(entries: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
    """The entries as RFC 4180 CSV, ``details`` as a JSON cell; no cell can be a formula."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n")
    writer.writerow(CSV_HEADER)
    yield buffer.getvalue().encode()
    async for entry in entries:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(
            [
                entry["timestamp"] or "",
                csv_cell(entry["eventType"]),
                csv_cell(entry["username"]),
                csv_cell(entry["displayName"]),
                entry["userId"],
                csv_cell(entry["target"]),
                csv_cell(entry["ipAddress"]),
                csv_cell(json.dumps(entry["details"], ensure_ascii=False, sort_keys=True)),
                entry["id"],
            ]
        )
        yield buffer.getvalue().encode()


@blueprint.get("/audit/export")
@authenticated
@tag(["audit"])
@answers(None, media_type=("application/json", "text/csv"), query=AuditFilterQuery)
async def export_entries() -> Response:
    """Download every entry ``GET /audit`` would list with the same filters, streamed.

    ``json`` (an array, default) or ``csv``; newest first; the log as it was when asked
    (entries written while it streams, its own ``audit.exported`` entry included, are not
    in it).
    """
    caller = current_caller()
    kind = request.args.get("format", "json")
    kernel = app_kernel()
    # the log as it is now: neither this export's own entry nor later ones
    flt = replace(_filter(caller), through_seq=await kernel.audit_query.last_seq())
    await kernel.audit.record(
        "audit.exported",
        actor=caller,
        details={
            "format": kind,
            "search": flt.search,
            "eventTypes": list(flt.event_types),
            "userId": flt.user_id,
            "from": iso(flt.start),
            "to": iso(flt.end),
        },
    )
    entries = (event.to_json() async for event in kernel.audit_query.stream(flt))
    body = export_csv(entries) if kind == "csv" else export_json(entries)
    filename = f"audit-log_{utcnow():%Y%m%d%H%M%S}.{kind}"
    response = Response(
        body,
        headers={
            "Content-Type": EXPORT_TYPES[kind],
            "Content-Disposition": f'attachment; filename="{filename}"',
        },
    )
    response.timeout = None
    return response


@blueprint.get("/audit/verify")
@requires(VIEW_ANY)
@tag(["audit"])
@answers(ChainCheck, errors=(429,))
async def verify_chain() -> dict[str, Any]:
    """Walk the hash chain as ``hostgate audit verify`` does: intact, or the first problem.

    At most 6 a minute per user (429 with ``Retry-After``); each check is itself audited
    (``audit.verified``).
    """
    caller = current_caller()
    kernel = app_kernel()
    await kernel.limits.hit(
        VERIFY_BUCKET, caller.user_id, VERIFY_PER_USER, "Too many tamper checks; try again soon"
    )
    result = await kernel.audit.verify_chain()
    await kernel.audit.record(
        "audit.verified",
        actor=caller,
        details={"ok": result.ok, "checked": result.checked, "problem": result.problem},
    )
    return {
        "ok": result.ok,
        "checked": result.checked,
        "problem": result.problem,
        "seq": result.seq,
        "entryId": result.entry_id,
        "headSeq": result.head_seq,
        "headHash": result.head_hash,
    }


@blueprint.get("/audit/event-types")
@authenticated
@tag(["audit"])
@answers(EventTypes)
async def event_types() -> dict[str, Any]:
    """Distinct event types (of the caller's own entries without ``audit.view_any``)."""
    caller = current_caller()
    only = None if caller.can(VIEW_ANY) else caller.user_id
    return {"eventTypes": await app_kernel().audit_query.event_types(only)}


@blueprint.get("/audit/users")
@requires(VIEW_ANY)
@tag(["audit"])
@answers(AuditUsers)
async def audit_users() -> dict[str, Any]:
    """Users that have entries."""
    return {"users": await app_kernel().audit_query.users_with_entries()}
