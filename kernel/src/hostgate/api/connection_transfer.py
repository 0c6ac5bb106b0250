"""``GET /connections/export`` and ``POST /connections/import`` (connections.import_export).

Over HTTP the export never holds secrets and the import ignores a ``secrets``
block: credentials move only through ``hostgate connection export --with-secrets``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint, Response, request
from quart_schema import tag, validate_request
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


MAX_CONFIG_CHARS = 1_000_000
MAX_FILE_CHARS = 65_536
MAX_FILES = 100


class SshConfigImport(BaseModel):
    """An OpenSSH client configuration and the files it names (included files, keys)."""

    model_config = ConfigDict(extra="forbid")
    config: str = Field(min_length=1, max_length=MAX_CONFIG_CHARS)
    files: dict[str, Annotated[str, Field(max_length=MAX_FILE_CHARS)]] = Field(
        default_factory=dict, max_length=MAX_FILES
    )
    dryRun: bool = False
    groupId: str | None = Field(default=None, max_length=64)


class PlannedConnection(TypedDict):
    """A connection an ssh_config import creates (or, dry, would create)."""

    id: str | None
    name: str
    host: str
    port: int
    username: str
    jumpHost: str | None
    tags: list[str]
    privateKey: bool


class SkippedLine(TypedDict):
    """Something of the configuration that was not imported, and why."""

    where: str
    reason: str


class SshConfigImported(TypedDict):
    """What the import created, or with ``dryRun`` would create."""

    dryRun: bool
    connections: list[PlannedConnection]
    skipped: list[SkippedLine]


@blueprint.post("/connections/import/ssh-config")
@requires("connections.import_export")
@tag(["connections"])
@validate_request(SshConfigImport)
@answers(SshConfigImported)
async def import_ssh_config(data: SshConfigImport) -> SshConfigImported:
    """Create connections from an OpenSSH client configuration (``~/.ssh/config``).

    ``Host`` entries become SSH connections (HostName, User, Port, ProxyJump as jump
    hosts, IdentityFile's contents when supplied in ``files``); ``Include`` follows the
    supplied files. All or nothing: one invalid entry changes nothing. ``dryRun``
    answers what would be created.
    """
    caller = current_caller()
    kernel = app_kernel()
    result, plan = await kernel.connections.transfer.import_ssh_config(
        caller, data.config, data.files, group_id=data.groupId, dry_run=data.dryRun
    )
    planned = result.planned if data.dryRun else []
    if not data.dryRun:
        planned = await kernel.connections.transfer.created(result.connection_ids)
    names = {c.id: c.name for c in planned}
    return {
        "dryRun": data.dryRun,
        "connections": [
            {
                "id": None if data.dryRun else c.id,
                "name": c.name,
                "host": c.host,
                "port": c.port,
                "username": c.username,
                "jumpHost": names.get(c.jump_host_id or "", c.jump_host_id),
                "tags": list(c.tags or []),
                "privateKey": c.private_key is not None,
            }
            for c in planned
        ],
        "skipped": [{"where": s.where, "reason": s.reason} for s in plan.skipped],
    }


@blueprint.get("/connections/export/ssh-config")
@requires("connections.import_export")
@tag(["connections"])
@answers(None, media_type="text/plain")
async def export_ssh_config() -> Response:
    """The caller's SSH connections as an ssh_config fragment (no secrets)."""
    kernel = app_kernel()
    caller = current_caller()
    origin = f"{request.scheme}://{request.host}"
    text, count = await kernel.connections.transfer.export_ssh_config(
        caller, origin + "/connections/{id}"
    )
    await kernel.audit.record(
        "connections.exported",
        actor=caller,
        details={"connections": count, "format": "ssh_config", "withCredentials": False},
    )
    return Response(
        text,
        content_type="text/plain; charset=utf-8",
        headers={"Content-Disposition": 'attachment; filename="hostgate-ssh-config"'},
    )
