"""``/audit``: the audit log; callers without ``audit.view_any`` see their own entries."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field
from quart import Blueprint, request
from quart_schema import tag
from typing_extensions import TypedDict

from ..errors import InvalidInput
from ..guards import app_kernel, authenticated, current_caller, requires
from ..openapi import answers
from ..pagination import PageQuery, Pagination, page_from
from ..services.audit import audit_query
from ..timefmt import parse_iso

blueprint = Blueprint("audit", __name__)

VIEW_ANY = "audit.view_any"


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
    userId: str = ""
    from_: datetime | None = Field(default=None, alias="from")
    to: datetime | None = None


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
    search = request.args.get("search", "").strip()
    if len(search) > audit_query.SEARCH_MAX:
        raise InvalidInput(f"search must be at most {audit_query.SEARCH_MAX} characters")
    types = tuple(t.strip() for t in request.args.get("eventType", "").split(",") if t.strip())
    flt = audit_query.AuditFilter(
        search=search,
        event_types=types,
        user_id=request.args.get("userId", "").strip() or None,
        start=_time("from"),
        end=_time("to"),
        only_user=None if caller.can(VIEW_ANY) else caller.user_id,
    )
    entries, total = await app_kernel().audit_query.search(flt, page)
    pages = (total + page.limit - 1) // page.limit
    return {"entries": entries, "pagination": {**page.echo(), "total": total, "totalPages": pages}}


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
