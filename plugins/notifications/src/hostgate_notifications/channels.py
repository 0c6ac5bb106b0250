"""Channel configuration: validated by the pack's model, secrets sealed apart and masked."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hostgate import SECRET_MASK, ChannelSpec, InvalidInput, NotFound, utcnow, validation_message
from pydantic import ValidationError

from .models import NotificationChannel
from .rule_matching import SPEC_CHANNELS

if TYPE_CHECKING:
    from hostgate import AuditAPI as AuditLog
    from hostgate import Caller
    from hostgate import DatabaseAPI as Database
    from hostgate import SecretsAPI as SecretBox
    from sqlmodel.ext.asyncio.session import AsyncSession

SECRET_HEADER_WORDS = ("auth", "token", "secret", "key", "password", "cookie", "session")


def is_secret_name(name: str) -> bool:
    """Header (or map key) names whose values are secrets: Authorization, Cookie, *token*..."""
    lowered = name.lower()
    return any(word in lowered for word in SECRET_HEADER_WORDS)


def _string_map(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values())


def split_secrets(
    spec: ChannelSpec, config: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(plain, secret)``: declared secret fields, and secret-looking keys of string maps."""
    plain: dict[str, Any] = {}
    secret: dict[str, Any] = {}
    for name, value in config.items():
        if name in spec.secret_fields:
            secret[name] = value
        elif _string_map(value):
            plain[name] = {k: v for k, v in value.items() if not is_secret_name(k)}
            hidden = {k: v for k, v in value.items() if is_secret_name(k)}
            if hidden:
                secret[name] = hidden
        else:
            plain[name] = value
    return plain, secret


def secret_values(spec: ChannelSpec, config: Mapping[str, Any]) -> list[str]:
    """Every secret string in a configuration (to scrub from error messages)."""
    _, secret = split_secrets(spec, config)
    found: list[str] = []
    for value in secret.values():
        items = value.values() if isinstance(value, Mapping) else [value]
        found.extend(str(v) for v in items if isinstance(v, str) and len(v) >= 4)
    return sorted(set(found), key=len, reverse=True)


def channel_types(specs: Mapping[str, ChannelSpec]) -> list[str]:
    """The spec's four channel types, then any other installed channel."""
    extra = sorted(t for t in specs if t not in SPEC_CHANNELS)
    return [*SPEC_CHANNELS, *extra]


def describe_fields(spec: ChannelSpec) -> list[dict[str, Any]]:
    """The channel's config fields for a form, from its pydantic model's JSON schema.

    Each: ``{name, type, required, default, description, secret, choices, minimum,
    maximum, maxLength}``; ``type`` is ``string``, ``integer``, ``number``, ``boolean``
    or ``map`` (string to string, secret-looking keys' values sealed); ``name`` is the
    wire name (the alias).
    """
    schema = spec.config_model.model_json_schema(by_alias=True, mode="validation")
    required = set(schema.get("required", []))
    fields: list[dict[str, Any]] = []
    for name, prop in schema.get("properties", {}).items():
        kind = prop.get("type", "string")
        if "enum" in prop:
            kind = "string"
        if kind == "object":
            kind = "map"
        fields.append(
            {
                "name": name,
                "type": kind,
                "required": name in required,
                "default": prop.get("default"),
                "description": prop.get("description", ""),
                "secret": name in spec.secret_fields,
                "choices": prop.get("enum"),
                "minimum": prop.get("minimum"),
                "maximum": prop.get("maximum"),
                "maxLength": prop.get("maxLength"),
            }
        )
    return fields


def join_secrets(plain: Mapping[str, Any], secret: Mapping[str, Any]) -> dict[str, Any]:
    """The full configuration from its plain and secret halves."""
    full = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in plain.items()}
    for name, value in secret.items():
        if isinstance(value, Mapping) and isinstance(full.get(name), dict):
            full[name].update(value)
        else:
            full[name] = value
    return full


def mask(spec: ChannelSpec, config: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration as GET shows it: every secret value replaced by the mask."""
    shown: dict[str, Any] = {}
    for name, value in config.items():
        if name in spec.secret_fields:
            shown[name] = SECRET_MASK if value else value
        elif _string_map(value):
            shown[name] = {
                k: (SECRET_MASK if is_secret_name(k) and v else v) for k, v in value.items()
            }
        else:
            shown[name] = value
    return shown


def _stored_header(stored: Mapping[str, Any], name: str) -> str | None:
    if name in stored:
        return str(stored[name])
    for key, value in stored.items():
        if key.lower() == name.lower():
            return str(value)
    return None


def unmask(
    spec: ChannelSpec, incoming: Mapping[str, Any], stored: Mapping[str, Any]
) -> dict[str, Any]:
    """Replace values equal to the mask by the stored secret (sending the mask back keeps it)."""
    out: dict[str, Any] = {}
    for name, value in incoming.items():
        if value == SECRET_MASK and name in spec.secret_fields:
            if not stored.get(name):
                raise InvalidInput(f"{name}: send the value itself, not the mask")
            out[name] = stored[name]
        elif isinstance(value, Mapping):
            previous = stored.get(name)
            previous = previous if isinstance(previous, Mapping) else {}
            inner: dict[str, Any] = {}
            for key, item in value.items():
                if item == SECRET_MASK:
                    kept = _stored_header(previous, str(key))
                    if kept is None:
                        raise InvalidInput(f"{name}.{key}: send the value itself, not the mask")
                    inner[str(key)] = kept
                else:
                    inner[str(key)] = item
            out[name] = inner
        else:
            out[name] = value
    return out


def validate(spec: ChannelSpec, config: Mapping[str, Any]) -> dict[str, Any]:
    """Check a whole configuration against the pack's model; return its normalised form."""
    try:
        model = spec.config_model.model_validate(dict(config))
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        problems = validation_message(errors, dict(config))
        raise InvalidInput(f"The {spec.type} configuration is not valid: {problems}") from None
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="json")
    return dumped


@dataclass(frozen=True)
class ChannelState:
    """A channel's stored state, secrets decrypted (never returned as is)."""

    type: str
    enabled: bool
    config: dict[str, Any]
    installed: bool


class ChannelStore:
    """Reads and writes channel rows; the only place channel secrets are sealed or opened."""

    def __init__(
        self,
        *,
        db: Database,
        secrets: SecretBox,
        audit: AuditLog,
        specs: Mapping[str, ChannelSpec],
    ) -> None:
        self.db = db
        self.secrets = secrets
        self.audit = audit
        # the channel types packs registered
        self.specs = specs

    def types(self) -> list[str]:
        """The spec's four channel types, then any other installed channel."""
        return channel_types(self.specs)

    def spec(self, channel_type: str) -> ChannelSpec:
        """The installed pack's descriptor, or a clear 400/404."""
        spec: ChannelSpec | None = self.specs.get(channel_type)
        if spec is not None:
            return spec
        if channel_type in SPEC_CHANNELS:
            raise InvalidInput(
                f"The {channel_type} channel is not installed on this instance "
                f"(its pack, hostgate-{'smtp' if channel_type == 'smtp' else 'chat'}, is missing)"
            )
        raise NotFound(f"Unknown notification channel {channel_type!r}")

    def _full(self, row: NotificationChannel) -> dict[str, Any]:
        secret: dict[str, Any] = {}
        if row.secrets:
            secret = json.loads(self.secrets.open(row.secrets))
        return join_secrets(row.config or {}, secret)

    async def state(self, channel_type: str) -> ChannelState:
        """The stored state of one channel (an unconfigured channel has ``{}``)."""
        async with self.db.session() as session:
            row = await session.get(NotificationChannel, channel_type)
        installed = channel_type in self.specs
        if row is None:
            return ChannelState(channel_type, False, {}, installed)
        return ChannelState(channel_type, row.enabled, self._full(row), installed)

    async def listing(self) -> list[dict[str, Any]]:
        """``[{id, enabled, config, title, installed, fields}]`` with secrets masked.

        ``fields`` describes the config for a form (see ``describe_fields``); a channel
        whose pack is not installed has none.
        """
        out = []
        for channel_type in self.types():
            state = await self.state(channel_type)
            spec = self.specs.get(channel_type)
            shown = mask(spec, state.config) if spec is not None else {}
            if spec is None and state.config:
                shown = {k: SECRET_MASK for k in state.config}
            out.append(
                {
                    "id": channel_type,
                    "enabled": state.enabled,
                    "config": shown,
                    "title": (spec.title if spec is not None else "") or channel_type,
                    "installed": spec is not None,
                    "fields": describe_fields(spec) if spec is not None else [],
                }
            )
        return out

    async def effective(
        self, channel_type: str, overrides: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The stored config with ``overrides`` applied (masks resolved), validated."""
        spec = self.spec(channel_type)
        state = await self.state(channel_type)
        merged = {**state.config, **unmask(spec, overrides or {}, state.config)}
        return validate(spec, merged)

    async def update(
        self,
        channel_type: str,
        enabled: bool | None,
        config: Mapping[str, Any] | None,
        *,
        actor: Caller | None = None,
    ) -> list[str]:
        """Merge ``config`` into the stored one, validate it, store it; return changed fields.

        With ``actor`` the change is audited as ``notifications.channel_updated`` in
        the same transaction: both are stored, or neither.
        """
        spec = self.spec(channel_type)
        state = await self.state(channel_type)
        incoming = unmask(spec, config or {}, state.config)
        merged = {**state.config, **incoming}
        new_enabled = state.enabled if enabled is None else enabled
        if merged or new_enabled:
            merged = validate(spec, merged)
        changed = sorted(k for k in merged if merged.get(k) != state.config.get(k))
        plain, secret = split_secrets(spec, merged)
        sealed = self.secrets.seal(json.dumps(secret)) if secret else None
        if actor is None:
            async with self.db.session() as session:
                await _store(session, channel_type, new_enabled, plain, sealed)
                await session.commit()
            return changed
        async with self.audit.atomic() as batch:
            await _store(batch.session, channel_type, new_enabled, plain, sealed)
            batch.record(
                "notifications.channel_updated",
                actor=actor,
                target=channel_type,
                details={"enabled": new_enabled, "changedFields": changed},
            )
        return changed


async def _store(
    session: AsyncSession,
    channel_type: str,
    enabled: bool,
    plain: dict[str, Any],
    sealed: str | None,
) -> None:
    """Write a channel's row in ``session`` (not committed)."""
    row = await session.get(NotificationChannel, channel_type)
    if row is None:
        row = NotificationChannel(type=channel_type)
    row.enabled = enabled
    row.config = plain
    row.secrets = sealed
    row.updated_at = utcnow()
    session.add(row)
