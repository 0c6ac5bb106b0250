"""``GET /connections/export`` and ``POST /connections/import`` (connections.import_export).

Over HTTP the export never holds secrets and the import ignores a ``secrets``
block: credentials move only through ``hostgate connection export --with-secrets``.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel
from quart import Blueprint, Response, request
from quart_schema import tag
from typing_extensions import TypedDict

from ..errors import InvalidInput
from ..guards import app_kernel, current_caller, requires
from ..openapi import answers
from ..timefmt import utcnow

blueprint = Blueprint("connection_transfer", __name__)


class Imported(TypedDict):
    """What the import created (and skipped, with ``skipInvalid``)."""

    groupsCreated: int
    connectionsCreated: int
    newGroupIds: list[str]
    newConnectionIds: list[str]
    skipped: list[Any]
    secretsIgnored: bool


class ImportQuery(BaseModel):
    """``?skipInvalid=``."""

    skipInvalid: Literal["true", "false", "1", "0", "TRUE", "FALSE", "True", "False"] = "false"


@blueprint.get("/connections/export")
@requires("connections.import_export")
@tag(["connections"])
@answers(None, media_type="application/json")
async def export_connections() -> Response:
    """The caller's groups and connections as a JSON download (no secrets)."""
    kernel = app_kernel()
    caller = current_caller()
    document = await kernel.connections.transfer.export(owner_id=caller.user_id)
    await kernel.audit.record(
        "connections.exported",
        actor=caller,
        details={
            "groups": len(document["groups"]),
            "connections": len(document["connections"]),
            "withCredentials": False,
        },
    )
    stamp = utcnow().strftime("%Y%m%d-%H%M%S")
    return Response(
        json.dumps(document, indent=2),
        content_type="application/json",
        headers={
            "Content-Disposition": f'attachment; filename="hostgate-connections-{stamp}.json"'
        },
    )


@blueprint.post("/connections/import")
@requires("connections.import_export")
@tag(["connections"])
@answers(Imported, query=ImportQuery, request=dict[str, Any])
async def import_connections() -> Imported:
    """Import an export document into the caller's account (new ids; all or nothing).

    ``?skipInvalid=true`` imports the valid items and lists the others in ``skipped``.
    """
    document = await request.get_json()
    if not isinstance(document, dict):
        raise InvalidInput("send the export document (a JSON object)")
    skip = request.args.get("skipInvalid", "false").lower()
    if skip not in ("true", "false", "1", "0"):
        raise InvalidInput("skipInvalid must be true or false")
    caller = current_caller()
    result = await app_kernel().connections.transfer.import_(
        document,
        owner_id=caller.user_id,
        caller=caller,
        skip_invalid=skip in ("true", "1"),
        ignore_secrets=True,
    )
    return {
        "groupsCreated": len(result.group_ids),
        "connectionsCreated": len(result.connection_ids),
        "newGroupIds": result.group_ids,
        "newConnectionIds": result.connection_ids,
        "skipped": result.skipped,
        "secretsIgnored": document.get("secrets") is not None,
    }
