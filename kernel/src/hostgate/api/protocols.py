"""``/protocols``: the loaded connection protocols and the fields each one declares.

The browser app builds its connection form from this, so a third-party pack's
protocol and fields appear without changing the app.
"""

from __future__ import annotations

from typing import Any, NotRequired

from quart import Blueprint
from quart_schema import tag
from typing_extensions import TypedDict

from ..descriptors import ConnectionField, ProtocolSpec
from ..guards import app_kernel, authenticated, current_caller
from ..openapi import answers

blueprint = Blueprint("protocols", __name__)

_TYPE_NAMES = {str: "string", int: "integer", bool: "boolean"}


def field_json(spec_field: ConnectionField) -> dict[str, Any]:
    """One pack field; a secret's default is never shown, its ``has<Field>`` flag is named."""
    body: dict[str, Any] = {
        "name": spec_field.name,
        "type": _TYPE_NAMES.get(spec_field.type, "string"),
        "secret": spec_field.secret,
        "required": spec_field.required,
        "default": None if spec_field.secret else spec_field.default,
        "description": spec_field.description,
    }
    if spec_field.secret:
        body["setFlag"] = "has" + spec_field.name[:1].upper() + spec_field.name[1:]
    return body


def protocol_json(spec: ProtocolSpec, permissions: frozenset[str] | set[str]) -> dict[str, Any]:
    """One protocol as ``GET /protocols`` lists it."""
    return {
        "name": spec.name,
        "title": spec.title or spec.name.upper(),
        "defaultPort": spec.default_port,
        "terminal": spec.open_terminal is not None,
        "files": spec.open_files is not None,
        "stream": spec.open_stream is not None,
        "hostKeys": spec.fetch_host_key is not None,
        "jumpHosts": spec.jump_hosts,
        "jumpHost": spec.open_tunnel is not None,
        "servesConnections": list(spec.accepted_protocols()),
        "fields": [field_json(f) for f in spec.fields],
        "canUse": f"connections.use_{spec.name}" in permissions,
    }


class FieldInfo(TypedDict):
    """A field a pack declares for its connections."""

    name: str
    type: str
    secret: bool
    required: bool
    default: Any
    description: str
    setFlag: NotRequired[str]


class ProtocolInfo(TypedDict):
    """A loaded protocol."""

    name: str
    title: str
    defaultPort: int
    terminal: bool
    files: bool
    stream: bool
    hostKeys: bool
    jumpHosts: bool
    """Its connections may go through a jump host."""
    jumpHost: bool
    """Its connections may serve as jump hosts."""
    servesConnections: list[str]
    fields: list[FieldInfo]
    canUse: bool


class Protocols(TypedDict):
    """Every loaded protocol."""

    protocols: list[ProtocolInfo]


@blueprint.get("/protocols")
@authenticated
@tag(["connections"])
@answers(Protocols)
async def list_protocols() -> dict[str, Any]:
    """Every loaded protocol with its default port, abilities and declared fields."""
    permissions = set(current_caller().permissions)
    specs = sorted(app_kernel().protocols.values(), key=lambda s: s.name)
    return {"protocols": [protocol_json(spec, permissions) for spec in specs]}
