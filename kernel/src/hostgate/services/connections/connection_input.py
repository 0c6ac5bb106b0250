"""Checking a connection create/update payload against the spec and the protocol's pack.

Pure functions, no database: the service applies what ``parse_input`` returns.
Protocol names, default ports and extra fields come only from the loaded packs'
``ProtocolSpec`` descriptors; the kernel knows no protocol by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ... import rights
from ...connection_rules import (
    CONTROL_PATTERN,
    HOST_MAX,
    TAGS_MAX,
    refuse_control,
    validate_host,
)
from ...descriptors import ConnectionField, ProtocolSpec
from ...errors import InvalidInput

BASE_FIELDS = frozenset(
    {
        "name",
        "protocol",
        "host",
        "port",
        "username",
        "password",
        "privateKey",
        "groupId",
        "tags",
        "shared",
        "skipCertValidation",
        "sortOrder",
        "extraConfig",
        "tunnels",
        "jumpHostId",
        "approvalRequired",
        "moderation",
        "actions",
    }
)
MODERATION = ("none", "required")
NAME_MAX = 200
USERNAME_MAX = 255
PASSWORD_MAX = 4096
PRIVATE_KEY_MAX = 65536
EXTRA_TEXT_MAX = 4096
TAG_MAX = 64
SORT_LIMIT = 1_000_000_000


@dataclass
class ParsedInput:
    """What a payload asks to change. Presence of a key means "change"; None means clear."""

    protocol: str
    spec: ProtocolSpec | None
    columns: dict[str, Any] = field(default_factory=dict)
    credentials: dict[str, str | None] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    secrets: dict[str, str | None] = field(default_factory=dict)

    @property
    def declared(self) -> dict[str, ConnectionField]:
        """The extra fields the protocol's pack declares."""
        return {f.name: f for f in (self.spec.fields if self.spec else ())}


def normalize_tags(value: Any) -> list[str]:
    """Trimmed, lower-cased, de-duplicated tags; empties dropped."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise InvalidInput("tags must be an array of strings")
    tags: list[str] = []
    for raw in value:
        tag = refuse_control("each tag", raw).strip().lower()
        if not tag or tag in tags:
            continue
        if len(tag) > TAG_MAX:
            raise InvalidInput(f"each tag must be at most {TAG_MAX} characters")
        tags.append(tag)
    if len(tags) > TAGS_MAX:
        raise InvalidInput(f"at most {TAGS_MAX} tags")
    return tags


def check_name(value: Any, what: str = "name") -> str:
    """A display name: 1 to 200 characters, not only spaces, stored verbatim."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{what} is required (1 to {NAME_MAX} characters)")
    if len(value) > NAME_MAX:
        raise InvalidInput(f"{what} must be at most {NAME_MAX} characters")
    return value


def check_sort_order(value: Any, what: str = "sortOrder") -> int:
    """A whole number within a sane range."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{what} must be a whole number")
    if abs(value) > SORT_LIMIT:
        raise InvalidInput(f"{what} must be between -{SORT_LIMIT} and {SORT_LIMIT}")
    return value


def _text(name: str, value: Any, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    if len(value) > limit:
        raise InvalidInput(f"{name} must be at most {limit} characters")
    return value or None


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{name} must be true or false")
    return value


def _port(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise InvalidInput("port must be a whole number from 1 to 65535")
    return value


def _extra_value(spec_field: ConnectionField, value: Any) -> Any:
    """A checked extra-field value; None (or "") means "clear"."""
    name = spec_field.name
    if value is None or value == "":
        return None
    if spec_field.type is bool:
        return _flag(name, value)
    if spec_field.type is int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # JSON Schema's integer: 3.0 is 3
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidInput(f"{name} must be a whole number")
        return value
    return _text(name, value, EXTRA_TEXT_MAX)


def _protocol_of(
    payload: Mapping[str, Any], protocols: Mapping[str, ProtocolSpec], current: str | None
) -> str:
    if "protocol" not in payload:
        if current is None:
            raise InvalidInput("protocol is required")
        return current
    value = payload["protocol"]
    if isinstance(value, str) and value in protocols:
        return value
    if not protocols:
        raise InvalidInput("no protocol packs are installed, so no connection can be stored")
    known = ", ".join(sorted(protocols))
    raise InvalidInput(f"protocol must be one of: {known}")


def _check_tunnels(value: Any) -> None:
    """``tunnels``: clients written for the connection API send ``[]`` with every SSH connection.

    An empty list (or null) is accepted and stores nothing; port-forward tunnels
    are not implemented, so a non-empty list is refused rather than dropped.
    """
    if value is None or value == []:
        return
    if not isinstance(value, list):
        raise InvalidInput("tunnels must be a list")
    raise InvalidInput(
        "Port-forward tunnels are not supported yet: send tunnels as an empty list or leave it out",
        code="tunnels_unsupported",
    )


def parse_input(
    payload: Mapping[str, Any],
    protocols: Mapping[str, ProtocolSpec],
    *,
    current_protocol: str | None = None,
) -> ParsedInput:
    """Check a create (``current_protocol`` None) or update payload; raise InvalidInput."""
    creating = current_protocol is None
    protocol = _protocol_of(payload, protocols, current_protocol)
    parsed = ParsedInput(protocol=protocol, spec=protocols.get(protocol))
    declared = parsed.declared

    unknown = sorted(k for k in payload if k not in BASE_FIELDS and k not in declared)
    if unknown:
        raise InvalidInput(f"unknown field(s) for protocol {protocol}: {', '.join(unknown)}")
    extra_in = payload.get("extraConfig")
    if extra_in is None:
        extra_in = {}
    if not isinstance(extra_in, Mapping):
        raise InvalidInput("extraConfig must be an object")
    unknown = sorted(k for k in extra_in if k not in declared)
    if unknown:
        raise InvalidInput(
            f"unknown extraConfig field(s) for protocol {protocol}: {', '.join(unknown)}"
        )
    given: dict[str, Any] = dict(extra_in)
    for name in declared:
        if name in payload:
            if name in given and given[name] != payload[name]:
                raise InvalidInput(
                    f"{name} is given twice (top level and extraConfig) with different values"
                )
            given[name] = payload[name]
    for name, value in given.items():
        spec_field = declared[name]
        checked = _extra_value(spec_field, value)
        if spec_field.secret:
            parsed.secrets[name] = checked
        else:
            parsed.extra[name] = checked

    _check_tunnels(payload.get("tunnels"))
    columns = parsed.columns
    if "protocol" in payload or creating:
        columns["protocol"] = protocol
    if "name" in payload or creating:
        columns["name"] = check_name(payload.get("name"))
    if "host" in payload or creating:
        columns["host"] = validate_host(payload.get("host"))
    if payload.get("port") is not None:
        columns["port"] = _port(payload["port"])
    elif "port" in payload or creating:
        if parsed.spec is None:
            raise InvalidInput("port is required")
        columns["port"] = parsed.spec.default_port
    if "username" in payload:
        username = _text("username", payload["username"], USERNAME_MAX) or ""
        columns["username"] = refuse_control("username", username)
    if "tags" in payload:
        columns["tags"] = normalize_tags(payload["tags"])
    for key, column in (
        ("shared", "shared"),
        ("skipCertValidation", "skip_cert_validation"),
        ("approvalRequired", "approval_required"),
    ):
        if key in payload:
            columns[column] = _flag(key, payload[key])
    if "moderation" in payload:
        if payload["moderation"] not in MODERATION:
            raise InvalidInput("moderation must be none or required")
        columns["moderation"] = payload["moderation"]
    if "actions" in payload:
        columns["actions"] = rights.parse_actions(payload["actions"])
    if "sortOrder" in payload:
        columns["sort_order"] = check_sort_order(payload["sortOrder"])
    if "groupId" in payload:
        group = payload["groupId"]
        if group is not None and (not isinstance(group, str) or len(group) > 64):
            raise InvalidInput("groupId must be a group id or null")
        columns["group_id"] = group or None
    if "jumpHostId" in payload:
        jump = payload["jumpHostId"]
        if jump is not None and (not isinstance(jump, str) or len(jump) > 64):
            raise InvalidInput("jumpHostId must be a connection id or null")
        columns["jump_host_id"] = jump or None
    if "password" in payload:
        parsed.credentials["password"] = _text("password", payload["password"], PASSWORD_MAX)
    if "privateKey" in payload:
        parsed.credentials["private_key"] = _text(
            "privateKey", payload["privateKey"], PRIVATE_KEY_MAX
        )
    return parsed


def missing_required(
    spec: ProtocolSpec | None, extra: Mapping[str, Any], secrets: Mapping[str, Any]
) -> list[str]:
    """Required extra fields that have neither a value nor a default."""
    if spec is None:
        return []
    missing = []
    for spec_field in spec.fields:
        if not spec_field.required or spec_field.default is not None:
            continue
        store = secrets if spec_field.secret else extra
        if store.get(spec_field.name) in (None, ""):
            missing.append(spec_field.name)
    return missing


# -- the JSON schema of what parse_input takes ----------------------------------------

_NOT_BLANK = r"[^\s\x1c-\x1f]"


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _extra_schema(spec_field: ConnectionField, *, needed: bool = False) -> dict[str, Any]:
    """What ``_extra_value`` takes: the field's type, or null/"" to clear it.

    A ``needed`` field (required, without a default, on create) takes a value only.
    """
    kind: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": EXTRA_TEXT_MAX}
    if spec_field.type is bool:
        kind = {"type": "boolean"}
    elif spec_field.type is int:
        kind = {"type": "integer"}
    if needed:
        return {**kind, "description": spec_field.description} if spec_field.description else kind
    schema: dict[str, Any] = {"anyOf": [kind, {"type": "null"}, {"const": ""}]}
    if spec_field.description:
        schema["description"] = spec_field.description
    return schema


def _base_schema() -> dict[str, dict[str, Any]]:
    text = {"type": "string"}
    return {
        "name": {**text, "minLength": 1, "maxLength": NAME_MAX, "pattern": _NOT_BLANK},
        "host": {
            "anyOf": [
                {"type": "string", "format": "ipv4"},
                {"type": "string", "format": "ipv6"},
                {"type": "string", "format": "hostname", "maxLength": HOST_MAX},
            ],
            "description": "A host name or IP address, without scheme, port or path",
        },
        "port": _nullable({"type": "integer", "minimum": 1, "maximum": 65535}),
        "username": _nullable({**text, "maxLength": USERNAME_MAX, "pattern": CONTROL_PATTERN}),
        "password": _nullable({**text, "maxLength": PASSWORD_MAX}),
        "privateKey": _nullable({**text, "maxLength": PRIVATE_KEY_MAX}),
        "groupId": _nullable({**text, "maxLength": 64}),
        "jumpHostId": _nullable(
            {
                **text,
                "maxLength": 64,
                "description": "A stored SSH connection to go through (ProxyJump); null: direct",
            }
        ),
        "tags": _nullable(
            {
                "type": "array",
                "items": {**text, "maxLength": TAG_MAX, "pattern": CONTROL_PATTERN},
                "maxItems": TAGS_MAX,
            }
        ),
        "shared": {"type": "boolean"},
        "skipCertValidation": {"type": "boolean"},
        "approvalRequired": {
            "type": "boolean",
            "description": "Others use it only with an approved access request",
        },
        "moderation": {
            "type": "string",
            "enum": list(MODERATION),
            "description": "required: a terminal session waits, input held, until a user with"
            " sessions.moderate joins it",
        },
        "actions": {
            "type": "object",
            "properties": {name: {"type": "boolean"} for name in rights.ACTIONS},
            "additionalProperties": False,
            "description": "Per-action switches (a key left out: allowed). The effective right"
            " is this switch AND the caller's role permission (files.upload, clipboard.paste...)",
        },
        "sortOrder": {"type": "integer", "minimum": -SORT_LIMIT, "maximum": SORT_LIMIT},
    }


def input_schema(protocols: Mapping[str, ProtocolSpec], *, creating: bool) -> dict[str, Any]:
    """The JSON schema of a create (``creating``) or update body ``parse_input`` takes.

    One alternative per protocol: its declared fields are taken at the top level
    and in ``extraConfig``; a create names the protocol, a name and a host, and
    the protocol's required fields that have no default.
    """
    alternatives = []
    for name, spec in sorted(protocols.items()):
        declared = {f.name: _extra_schema(f) for f in spec.fields}
        needed = [f for f in spec.fields if creating and f.required and f.default is None]
        properties = {
            "protocol": {"const": name},
            **_base_schema(),
            **declared,
            **{f.name: _extra_schema(f, needed=True) for f in needed},
            "extraConfig": _nullable(
                {"type": "object", "properties": declared, "additionalProperties": False}
            ),
        }
        alternative: dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "additionalProperties": False,
        }
        if declared:
            # a pack field goes at the top level or in extraConfig (parse_input refuses
            # two different values; the document says: one place)
            alternative["allOf"] = [
                {
                    "not": {
                        "required": [field_name, "extraConfig"],
                        "properties": {"extraConfig": {"type": "object", "required": [field_name]}},
                    }
                }
                for field_name in declared
            ]
        if creating:
            alternative["required"] = ["protocol", "name", "host", *(f.name for f in needed)]
        # an update may be empty (it changes nothing, as the server answers); a
        # minProperties here, with the "not both" rule above, also put the body past
        # what schemathesis can generate from once a 19th field (moderation) came
        alternatives.append(alternative)
    return {"anyOf": alternatives} if alternatives else {"not": {}}
