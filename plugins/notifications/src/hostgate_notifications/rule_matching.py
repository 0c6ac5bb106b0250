"""Notification rules: validation of what the API received, and matching events against rules.

The request models (with their OpenAPI schema) are in ``rule_fields.py``;
the service reads them through the ``*Fields`` protocols here.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hostgate import AuditEvent, InvalidInput

from .patterns import PatternError, compile_pattern, search

CONDITION_FIELDS = ("ipAddress", "username", "userId", "eventType", "target", "command")
OPERATORS = (
    "in",
    "not_in",
    "equals",
    "not_equals",
    "contains",
    "not_contains",
    "starts_with",
    "ends_with",
    "matches",
)
CADENCES = ("instant", "hourly", "daily")
SPEC_CHANNELS = ("smtp", "telegram", "slack", "webhook")
EVENT_PATTERN = re.compile(r"^(\*|[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*(\.\*)?)$")
EMAIL_PATTERN = re.compile(r"^[^@\s<>,;\"]+@[^@\s<>,;\"]+$")


class ConditionFields(Protocol):
    """A condition as the API received it (``api.notification_rules.ConditionIn``)."""

    @property
    def field(self) -> str:
        """What the condition looks at (one of ``CONDITION_FIELDS``)."""

    @property
    def operator(self) -> str:
        """How it compares (one of ``OPERATORS``)."""

    @property
    def value(self) -> list[str]:
        """The values; the condition holds when any matches."""


class ActionFields(Protocol):
    """An action as the API received it (``api.notification_rules.ActionIn``)."""

    @property
    def channel(self) -> str:
        """The channel type."""

    @property
    def recipients(self) -> list[str]:
        """Where the channel delivers."""


class RuleFields(Protocol):
    """A new rule as the API received it (``api.notification_rules.RuleIn``)."""

    @property
    def name(self) -> str:
        """The rule's name."""

    @property
    def enabled(self) -> bool:
        """Whether it runs."""

    @property
    def events(self) -> Sequence[str]:
        """Event patterns."""

    @property
    def condition_logic(self) -> str:
        """``and`` or ``or``."""

    @property
    def conditions(self) -> Sequence[ConditionFields]:
        """The conditions."""

    @property
    def cadence(self) -> str:
        """``instant``, ``hourly`` or ``daily``."""

    @property
    def actions(self) -> Sequence[ActionFields]:
        """Where matching events go."""


class RuleChanges(Protocol):
    """Changes to a rule (``api.notification_rules.RulePatch``): None leaves a field as it is."""

    @property
    def name(self) -> str | None:
        """The rule's name."""

    @property
    def enabled(self) -> bool | None:
        """Whether it runs."""

    @property
    def events(self) -> Sequence[str] | None:
        """Event patterns."""

    @property
    def condition_logic(self) -> str | None:
        """``and`` or ``or``."""

    @property
    def conditions(self) -> Sequence[ConditionFields] | None:
        """The conditions."""

    @property
    def cadence(self) -> str | None:
        """``instant``, ``hourly`` or ``daily``."""

    @property
    def actions(self) -> Sequence[ActionFields] | None:
        """Where matching events go."""


@dataclass(frozen=True)
class Directory:
    """Known user and role ids (and role names), for checking and resolving recipients."""

    user_ids: frozenset[str]
    role_ids: frozenset[str]
    role_names: frozenset[str]


def check_events(events: Sequence[str]) -> list[str]:
    """Event patterns: exact types, ``*`` or ``prefix.*``; duplicates dropped."""
    clean: list[str] = []
    for item in events:
        text = item.strip()
        if not text or len(text) > 100 or not EVENT_PATTERN.match(text):
            raise InvalidInput(
                f"events: {item!r} is not an event type, '*' or a 'prefix.*' pattern"
            )
        if text not in clean:
            clean.append(text)
    return clean


def _ip_value(value: str) -> None:
    try:
        ipaddress.ip_network(value.strip(), strict=False)
    except ValueError:
        raise InvalidInput(f"conditions: {value!r} is not an IP address or CIDR range") from None


def check_conditions(conditions: Sequence[ConditionFields]) -> list[dict[str, Any]]:
    """Validate regexes and IP ranges now, so a broken rule is refused when it is saved."""
    clean: list[dict[str, Any]] = []
    for condition in conditions:
        if condition.operator == "matches":
            for pattern in condition.value:
                try:
                    compile_pattern(pattern)
                except PatternError as exc:
                    raise InvalidInput(f"conditions: {exc}") from None
        if condition.field == "ipAddress" and condition.operator in ("in", "not_in"):
            for value in condition.value:
                _ip_value(value)
        clean.append(
            {"field": condition.field, "operator": condition.operator, "value": condition.value}
        )
    return clean


def check_actions(
    actions: Sequence[ActionFields], channel_types: Sequence[str], directory: Directory
) -> list[dict[str, Any]]:
    """Channels must exist; smtp recipients must be addresses, user ids or role ids."""
    clean: list[dict[str, Any]] = []
    for action in actions:
        if action.channel not in channel_types:
            known = ", ".join(channel_types)
            raise InvalidInput(f"actions: unknown channel {action.channel!r} (known: {known})")
        recipients: list[str] = []
        for raw in action.recipients:
            item = raw.strip()
            if not item or len(item) > 320:
                raise InvalidInput("actions: recipients must be non-empty and short")
            if action.channel == "smtp" and not (
                EMAIL_PATTERN.match(item)
                or item in directory.user_ids
                or item in directory.role_ids
                or item in directory.role_names
            ):
                raise InvalidInput(
                    f"actions: smtp recipient {item!r} is not an e-mail address, user id or role id"
                )
            if item not in recipients:
                recipients.append(item)
        clean.append({"channel": action.channel, "recipients": recipients})
    return clean


def event_matches(patterns: Sequence[str], event_type: str) -> bool:
    """True when an event type matches one of the rule's patterns."""
    for pattern in patterns:
        if pattern == "*" or pattern == event_type:
            return True
        if pattern.endswith(".*") and event_type.startswith(pattern[:-1]):
            return True
    return False


def _field_value(event: AuditEvent, field: str) -> str:
    values = {
        "ipAddress": event.ip_address,
        "username": event.username,
        "userId": event.user_id,
        "eventType": event.event_type,
        "target": event.target,
        # the command line of a ``session.command`` event (empty for other events)
        "command": event.details.get("command") if event.event_type == "session.command" else "",
    }
    return str(values.get(field) or "")


def _ip_in(address: str, values: Sequence[str]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return any(address.strip().lower() == v.strip().lower() for v in values)
    for value in values:
        try:
            if ip in ipaddress.ip_network(value.strip(), strict=False):
                return True
        except (ValueError, TypeError):
            continue
    return False


def condition_holds(condition: Mapping[str, Any], event: AuditEvent) -> bool:
    """One condition against one event (text comparisons ignore case, regexes do not).

    Regexes run on RE2 (``patterns``): linear time, whatever the event carries.
    """
    field = str(condition.get("field", ""))
    operator = str(condition.get("operator", ""))
    values = [str(v) for v in condition.get("value") or []]
    actual = _field_value(event, field)
    if field == "ipAddress" and operator in ("in", "not_in"):
        found = _ip_in(actual, values)
        return found if operator == "in" else not found
    low = actual.lower()
    lowered = [v.lower() for v in values]
    if operator in ("in", "equals"):
        return low in lowered
    if operator in ("not_in", "not_equals"):
        return low not in lowered
    if operator == "contains":
        return any(v in low for v in lowered)
    if operator == "not_contains":
        return not any(v in low for v in lowered)
    if operator == "starts_with":
        return any(low.startswith(v) for v in lowered)
    if operator == "ends_with":
        return any(low.endswith(v) for v in lowered)
    if operator == "matches":
        return any(search(pattern, actual) for pattern in values)
    return False


def rule_matches(
    events: Sequence[str],
    logic: str,
    conditions: Sequence[Mapping[str, Any]],
    event: AuditEvent,
) -> bool:
    """The event's type is listed and the conditions hold (``and``: all, ``or``: any)."""
    if not event_matches(events, event.event_type):
        return False
    if not conditions:
        return True
    results = (condition_holds(c, event) for c in conditions)
    return any(results) if logic == "or" else all(results)
