"""The settings registry: every key typed, defaulted, validated; values cached."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from sqlmodel import select

from ..cluster.bus import Bus, LocalBus
from ..contract import SECRET_MASK
from ..db.models.settings import SettingValue
from ..descriptors import SettingSpec
from ..errors import ApiError, InvalidInput
from ..timefmt import utcnow

if TYPE_CHECKING:
    from ..contract import AuditBatchAPI
    from ..db.engine import Database
    from ..security.secretbox import SecretBox
    from .audit.audit import AuditLog
    from .identity.identity import Caller


def coerce(spec: SettingSpec, value: Any) -> Any:
    """Check one value against its spec; return the value to store or raise InvalidInput."""
    key = spec.key
    if spec.readonly:
        raise InvalidInput(f"{key} is read-only")
    if value is None:
        if spec.nullable:
            return None
        raise InvalidInput(f"{key} may not be null")
    if spec.type is bool:
        if not isinstance(value, bool):
            raise InvalidInput(f"{key} must be true or false")
    elif spec.type is int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidInput(f"{key} must be a whole number")
        if isinstance(value, float):
            if not value.is_integer():
                raise InvalidInput(f"{key} must be a whole number")
            value = int(value)
    elif spec.type is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidInput(f"{key} must be a number")
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidInput(f"{key} must be a finite number")
    elif spec.type is str:
        if not isinstance(value, str):
            raise InvalidInput(f"{key} must be a string")
        if len(value) > spec.max_length:
            raise InvalidInput(f"{key} must be at most {spec.max_length} characters")
    if spec.minimum is not None and value < spec.minimum:
        raise InvalidInput(f"{key} must be at least {spec.minimum:g}")
    if spec.maximum is not None and value > spec.maximum:
        raise InvalidInput(f"{key} must be at most {spec.maximum:g}")
    if spec.choices is not None and value not in spec.choices:
        allowed = ", ".join(str(c) for c in spec.choices)
        raise InvalidInput(f"{key} must be one of: {allowed}")
    if spec.validate is not None:
        try:
            spec.validate(value)
        except ValueError as exc:
            raise InvalidInput(f"{key}: {exc}") from None
    return value


def value_schema(spec: SettingSpec) -> dict[str, Any]:
    """The JSON schema of the values ``coerce`` takes for ``spec``."""
    schema: dict[str, Any] = {
        "type": {bool: "boolean", int: "integer", float: "number", str: "string"}[spec.type]
    }
    if spec.type is str:
        schema["maxLength"] = spec.max_length
    if spec.minimum is not None:
        schema["minimum"] = spec.minimum
    if spec.maximum is not None:
        schema["maximum"] = spec.maximum
    if spec.choices is not None:
        schema["enum"] = list(spec.choices)
    if spec.description:
        schema["description"] = spec.description
    if spec.validate is not None:
        # A syntax JSON Schema cannot state (an LDAP filter, network rules, a PEM
        # certificate): named as a format of its own, with the default as a known-good
        # example, so generators and clients know the value is checked further.
        schema["format"] = f"setting:{spec.key}"
        if spec.default is not None:
            schema["examples"] = [spec.default]
    if spec.nullable:
        schema = {"anyOf": [schema, {"type": "null"}]}
    return schema


# Keys sharing ``<a>.<word>_`` form their own group ``<a>.<word>`` from this many on
# (auth.ldap_*, auth.oidc_*, security.passkey_*), so a pack's family of settings gets
# a section of its own without naming one.
SUBGROUP_MIN = 4


def setting_group(key: str, keys: Iterable[str]) -> str:
    """The settings screen's section for ``key``.

    Its first segment, or ``<a>.<word>`` when at least ``SUBGROUP_MIN`` keys start with
    ``<a>.<word>_``.
    """
    first, _, rest = key.partition(".")
    word, underscore, _ = rest.partition("_")
    if not underscore or not word:
        return first
    prefix = f"{first}.{word}_"
    if sum(1 for k in keys if k.startswith(prefix)) >= SUBGROUP_MIN:
        return f"{first}.{word}"
    return first


log = logging.getLogger("hostgate.settings")

CHANGED_TOPIC = "settings.changed"
"""Bus topic: ``{"keys": [...]}`` changed on another node, which reads them again."""


class Settings:
    """Typed access to instance settings. Reads come from memory; writes go to the DB.

    With several nodes every change is announced on the bus and the other nodes read
    the stored values again at once.
    """

    def __init__(
        self,
        specs: Mapping[str, SettingSpec],
        *,
        db: Database,
        secrets: SecretBox,
        audit: AuditLog,
        configured: Mapping[str, Any],
        bus: Bus | None = None,
    ) -> None:
        self._bus: Bus = bus or LocalBus()
        self._bus.subscribe(CHANGED_TOPIC, self._changed_elsewhere)
        self._tasks: set[asyncio.Task[None]] = set()
        self.db = db
        self.secrets = secrets
        self.audit = audit
        self.specs = dict(specs)
        self._values: dict[str, Any] = {}
        # checks of a whole change set against other state (``add_guard``)
        self._guards: list[Callable[[Mapping[str, Any]], Awaitable[None]]] = []
        # one change at a time on this node: each guard sees the state it protects
        self._updating = asyncio.Lock()
        # the config file's ``[settings]`` table
        self.defaults = self._configured_defaults(configured)

    def _configured_defaults(self, configured: Mapping[str, Any]) -> dict[str, Any]:
        """The config file's ``[settings]`` values, checked; they replace the specs' defaults."""
        from ..config import ConfigError

        defaults: dict[str, Any] = {}
        for key, value in configured.items():
            spec = self.specs.get(key)
            if spec is None:
                raise ConfigError(f"[settings] {key}: no such setting (is its pack loaded?)")
            if spec.secret:
                raise ConfigError(f"[settings] {key}: a secret is set with PUT /settings only")
            try:
                defaults[key] = coerce(spec, value)
            except InvalidInput as exc:
                raise ConfigError(f"[settings] {exc.message}") from None
        return defaults

    async def load(self) -> None:
        """Read stored values (call at start-up and after a restore)."""
        async with self.db.session() as session:
            rows = (await session.exec(select(SettingValue))).all()
        values: dict[str, Any] = {}
        for row in rows:
            spec = self.specs.get(row.key)
            if spec is None:
                continue
            values[row.key] = row.value
        self._values = values

    def _computed(self, key: str) -> Any:
        if key == "system.insecure_key":
            return self.secrets.insecure
        return None

    def get(self, key: str) -> Any:
        """The current value of a setting (secrets decrypted)."""
        spec = self.specs[key]
        if spec.readonly:
            return self._computed(key)
        if key not in self._values:
            return self.defaults.get(key, spec.default)
        value = self._values[key]
        if spec.secret and isinstance(value, str) and value:
            return self.secrets.open(value)
        return value

    def public(self) -> dict[str, Any]:
        """Exactly the public keys, for ``GET /settings/public``."""
        return {key: self.get(key) for key, spec in sorted(self.specs.items()) if spec.public}

    def admin_view(self) -> dict[str, Any]:
        """Every key; secrets masked when set."""
        out: dict[str, Any] = {}
        for key, spec in sorted(self.specs.items()):
            if spec.secret:
                out[key] = SECRET_MASK if self.get(key) else ""
            else:
                out[key] = self.get(key)
        return out

    def described(self, owners: Mapping[str, str]) -> list[tuple[SettingSpec, str, str]]:
        """Every setting by key with its screen section and the pack that registered it.

        ``owners`` maps a key to the pack that registered it (the kernel when absent).
        """
        keys = sorted(self.specs)
        return [
            (
                self.specs[key],
                self.specs[key].group or setting_group(key, keys),
                owners.get(key, "kernel"),
            )
            for key in keys
        ]

    def change_schema(self) -> dict[str, Any]:
        """The JSON schema of a change set ``validate`` takes (read-only keys left out)."""
        return {
            "type": "object",
            "properties": {
                key: value_schema(spec)
                for key, spec in sorted(self.specs.items())
                if not spec.readonly
            },
            "additionalProperties": False,
            "minProperties": 1,
        }

    def validate(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Check a whole change set before any of it is stored; unknown keys are refused."""
        if not isinstance(changes, Mapping) or not changes:
            raise InvalidInput("send an object of one or more setting keys")
        unknown = sorted(k for k in changes if k not in self.specs)
        if unknown:
            raise InvalidInput(f"unknown setting key(s): {', '.join(unknown)}")
        clean: dict[str, Any] = {}
        for key, value in changes.items():
            spec = self.specs[key]
            if spec.secret and value == SECRET_MASK:
                continue
            clean[key] = coerce(spec, value)
        return clean

    def add_guard(self, guard: Callable[[Mapping[str, Any]], Awaitable[None]]) -> None:
        """Run ``await guard(clean)`` on every validated change set before it is stored.

        A guard raises an ``ApiError`` to refuse the change (nothing is stored then).
        """
        self._guards.append(guard)

    async def check(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """``validate``, then every guard: the change set ready for ``write``."""
        clean = self.validate(changes)
        for guard in self._guards:
            await guard(clean)
        return clean

    async def update(
        self, changes: Mapping[str, Any], *, actor: Caller | None = None, via_cli: bool = False
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Validate, run the guards, and store; return ``(before, after)`` with secrets masked.

        With ``actor`` (or ``via_cli``: ``hostgate settings set``) the change is audited
        as ``settings.updated`` in the same transaction: both are stored, or neither.
        """
        async with self._updating:
            clean = await self.check(changes)
            if actor is None and not via_cli:
                async with self.db.session() as session:
                    before, after = await self.write(session, clean)
                    await session.commit()
            else:
                async with self.audit.atomic() as batch:
                    before, after = await self.write(batch.session, clean)
                    if after and actor is not None:
                        batch.record(
                            "settings.updated",
                            actor=actor,
                            target=", ".join(sorted(after)),
                            details={"before": before, "after": after},
                        )
                    elif after:
                        batch.record(
                            "settings.updated",
                            username="cli",
                            target=", ".join(sorted(after)),
                            details={"before": before, "after": after, "via": "cli"},
                        )
            self.remember(clean)
        return before, after

    async def write(
        self, session: Any, clean: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Write values ``validate`` returned in ``session`` (not committed); ``(before, after)``.

        For a change that commits with its own audit entry (``kernel.audit.atomic()``):
        call ``remember`` once the block has committed.
        """
        before: dict[str, Any] = {}
        after: dict[str, Any] = {}
        for key, value in clean.items():
            spec = self.specs[key]
            before[key] = self._display(spec, self.get(key))
            stored = value
            if spec.secret and isinstance(value, str) and value:
                stored = self.secrets.seal(value)
            row = await session.get(SettingValue, key)
            if row is None:
                session.add(SettingValue(key=key, value=stored))
            else:
                row.value = stored
                row.updated_at = utcnow()
                session.add(row)
            after[key] = self._display(spec, value)
        return before, after

    async def change_in(
        self, batch: AuditBatchAPI, changes: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Validate and write ``changes`` in ``batch`` (served once it commits); before, after."""
        clean = self.validate(changes)
        shown = await self.write(batch.session, clean)
        batch.on_commit(lambda: self.remember(clean))
        return shown

    def remember(self, clean: Mapping[str, Any]) -> None:
        """Serve values ``write`` stored from memory (after their commit); tell the others."""
        for key, value in clean.items():
            spec = self.specs[key]
            if spec.secret and isinstance(value, str) and value:
                self._values[key] = self.secrets.seal(value)
            else:
                self._values[key] = value
        if clean:
            task = asyncio.ensure_future(self._tell_others(sorted(clean)))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _tell_others(self, keys: list[str]) -> None:
        try:
            await self._bus.publish(CHANGED_TOPIC, {"keys": keys})
        except ApiError as exc:
            log.error("could not tell the other nodes that settings changed (%s): %s", keys, exc)

    async def _changed_elsewhere(self, message: dict[str, Any]) -> None:
        await self.load()

    @staticmethod
    def _display(spec: SettingSpec, value: Any) -> Any:
        if spec.secret:
            return SECRET_MASK if value else ""
        return value
