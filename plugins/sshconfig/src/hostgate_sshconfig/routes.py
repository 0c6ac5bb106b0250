"""``POST /connections/import/ssh-config`` and ``GET /connections/export/ssh-config``.

Both need ``connections.import_export``. The export goes through the SSH front door
when one is announced (``hostgate-sshd``), else it describes the hosts themselves.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from hostgate import answers, current_caller, current_kernel, requires
from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint, Response, request
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from .export import door_address, export_text
from .parser import plan_import

blueprint = Blueprint("sshconfig", __name__)

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
    dryRun: bool = False  # noqa: N815 - wire name
    groupId: str | None = Field(default=None, max_length=64)  # noqa: N815 - wire name


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
    kernel = current_kernel()
    # reading is bounded but CPU work: a thread, so the gateway answers meanwhile
    plan = await asyncio.to_thread(plan_import, data.config, dict(data.files))
    made = await kernel.connection_transfer.import_document(
        current_caller(),
        plan.document,
        plain_secrets=plan.private_keys,
        group_id=data.groupId,
        dry_run=data.dryRun,
    )
    names = {c.id: c.name for c in made}
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
                "tags": list(c.tags),
                "privateKey": c.private_key,
            }
            for c in made
        ],
        "skipped": [{"where": s.where, "reason": s.reason} for s in plan.skipped],
    }


def host_name(netloc: str) -> str:
    """The host of a ``Host`` header: ``gw:8080`` and ``[::1]:8080`` without the port."""
    if netloc.startswith("["):
        return netloc[1 : netloc.find("]")] if "]" in netloc else netloc
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


@blueprint.get("/connections/export/ssh-config")
@requires("connections.import_export")
@tag(["connections"])
@answers(None, media_type="text/plain")
async def export_ssh_config() -> Response:
    """The caller's SSH connections as an ssh_config fragment (no secrets).

    With the SSH front door (``hostgate-sshd``) every host is reached through it.
    """
    kernel = current_kernel()
    caller = current_caller()
    origin = f"{request.scheme}://{request.host}"
    door = door_address(kernel, host_name(request.host), caller.username)
    text, count = await export_text(
        kernel, caller, caller.username, origin + "/connections/{id}", door
    )
    await kernel.audit.record(
        "connections.exported",
        actor=caller,
        details={
            "connections": count,
            "format": "ssh_config",
            "withCredentials": False,
            **({"throughDoor": True} if door is not None else {}),
        },
    )
    return Response(
        text,
        content_type="text/plain; charset=utf-8",
        headers={"Content-Disposition": 'attachment; filename="hostgate-ssh-config"'},
    )
