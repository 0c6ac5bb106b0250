"""``/access-requests``: asking for time-boxed access to connections that need approval."""

from __future__ import annotations

from typing import Literal

from hostgate import (
    Account,
    InvalidInput,
    StoredConnection,
    answers,
    authenticated,
    current_caller,
    current_kernel,
    iso,
)
from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint, request
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from .models import AccessRequest
from .service import MAX_MINUTES, AccessRequests

blueprint = Blueprint("access_requests", __name__)

Status = Literal["pending", "approved", "denied", "cancelled", "revoked", "expired"]
STATE_KEY = "access.requests"
"""Where ``startup`` keeps the pack's service in ``kernel.state``."""


class RequestBody(BaseModel):
    """The connection, how long (minutes) and why."""

    model_config = ConfigDict(extra="forbid")
    connectionId: str = Field(min_length=1, max_length=64)
    minutes: int = Field(ge=1, le=MAX_MINUTES)
    reason: str = Field(min_length=1, max_length=1000)


class DecisionBody(BaseModel):
    """An optional note to the requester."""

    model_config = ConfigDict(extra="forbid")
    note: str = Field(default="", max_length=1000)


class ListQuery(BaseModel):
    """``?all=true`` (``access.approve``): everyone's; ``?status=`` one state."""

    all: Literal["true", "false"] = "false"
    status: Status | None = None


class AccessRequestRecord(TypedDict):
    """One request."""

    id: str
    connectionId: str
    connectionName: str
    userId: str
    username: str
    reason: str
    minutes: int
    status: str
    createdAt: str
    decidedBy: str | None
    decidedAt: str | None
    note: str
    startsAt: str | None
    endsAt: str | None


class AccessRequestList(TypedDict):
    """Requests, newest first (at most 500)."""

    requests: list[AccessRequestRecord]


class OneRequest(TypedDict):
    """The request as it now is."""

    request: AccessRequestRecord


def service() -> AccessRequests:
    """The pack's service of the running app."""
    found: AccessRequests = current_kernel().state[STATE_KEY]
    return found


def request_json(
    item: AccessRequest, connection: StoredConnection, user: Account
) -> AccessRequestRecord:
    """The wire form of a request."""
    return {
        "id": item.id,
        "connectionId": connection.id,
        "connectionName": connection.name,
        "userId": user.id,
        "username": user.username,
        "reason": item.reason,
        "minutes": item.minutes,
        "status": item.status,
        "createdAt": iso(item.created_at),
        "decidedBy": item.decided_by,
        "decidedAt": iso(item.decided_at),
        "note": item.note,
        "startsAt": iso(item.starts_at),
        "endsAt": iso(item.ends_at),
    }


async def records(items: list[AccessRequest]) -> list[AccessRequestRecord]:
    """Requests with their connection and requester (each looked up once)."""
    kernel = current_kernel()
    connections: dict[str, StoredConnection | None] = {}
    users: dict[str, Account | None] = {}
    shaped = []
    for item in items:
        if item.connection_id not in connections:
            connections[item.connection_id] = await kernel.connections.get(item.connection_id)
        if item.user_id not in users:
            users[item.user_id] = await kernel.logins.get_user(item.user_id)
        connection, user = connections[item.connection_id], users[item.user_id]
        if connection is not None and user is not None:  # rows go with both (cascades)
            shaped.append(request_json(item, connection, user))
    return shaped


async def _answer(item: AccessRequest) -> OneRequest:
    [shaped] = await records([item])
    return {"request": shaped}


@blueprint.post("/access-requests")
@authenticated
@tag(["connections"])
@validate_request(RequestBody)
@answers(OneRequest, status=201, errors=(404, 409))
async def create_request(data: RequestBody) -> tuple[OneRequest, int]:
    """Ask for access to a connection that needs approval (one you can see)."""
    caller = current_caller()
    connection = await current_kernel().connections.visible(caller, data.connectionId)
    made = await service().request(caller, connection, data.minutes, data.reason)
    return await _answer(made), 201


@blueprint.get("/access-requests")
@authenticated
@tag(["connections"])
@answers(AccessRequestList, query=ListQuery)
async def list_requests() -> AccessRequestList:
    """Your requests; with ``?all=true`` and ``access.approve``, everyone's."""
    everyone = request.args.get("all", "false")
    status = request.args.get("status") or None
    if everyone not in ("true", "false"):
        raise InvalidInput("all must be true or false")
    if status not in (None, "pending", "approved", "denied", "cancelled", "revoked", "expired"):
        raise InvalidInput("status must be one of the request states")
    rows = await service().listing(current_caller(), everyone=everyone == "true", status=status)
    return {"requests": await records(rows)}


async def _decide(request_id: str, action: str, data: DecisionBody) -> OneRequest:
    item = await service().decide(current_caller(), request_id, action, data.note)
    return await _answer(item)


@blueprint.post("/access-requests/<request_id>/approve")
@authenticated
@tag(["connections"])
@validate_request(DecisionBody)
@answers(OneRequest, errors=(404, 409))
async def approve_request(request_id: str, data: DecisionBody) -> OneRequest:
    """Approve a pending request (access.approve): access starts now."""
    return await _decide(request_id, "approve", data)


@blueprint.post("/access-requests/<request_id>/deny")
@authenticated
@tag(["connections"])
@validate_request(DecisionBody)
@answers(OneRequest, errors=(404, 409))
async def deny_request(request_id: str, data: DecisionBody) -> OneRequest:
    """Deny a pending request (access.approve), with a note."""
    return await _decide(request_id, "deny", data)


@blueprint.post("/access-requests/<request_id>/revoke")
@authenticated
@tag(["connections"])
@validate_request(DecisionBody)
@answers(OneRequest, errors=(404, 409))
async def revoke_request(request_id: str, data: DecisionBody) -> OneRequest:
    """End an approved access early (access.approve); its sessions close."""
    return await _decide(request_id, "revoke", data)


@blueprint.post("/access-requests/<request_id>/cancel")
@authenticated
@tag(["connections"])
@validate_request(DecisionBody)
@answers(OneRequest, errors=(404, 409))
async def cancel_request(request_id: str, data: DecisionBody) -> OneRequest:
    """Withdraw your own pending request."""
    return await _decide(request_id, "cancel", data)
