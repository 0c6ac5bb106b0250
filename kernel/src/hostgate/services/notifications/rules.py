"""Notification rules: the request models, validation, and matching events against rules."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.config import JsonDict

from ...descriptors import AuditEvent
from ...errors import InvalidInput
from ...openapi import Unset, listed_in
from .patterns import MAX_PATTERN_LENGTH, PatternError, compile_pattern, search

CONDITION_FIELDS = ("ipAddress", "username", "userId", "eventType", "target")
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

EventPattern = Annotated[str, Field(min_length=1, max_length=100, pattern=EVENT_PATTERN.pattern)]
"""An event type, ``*`` or ``prefix.*``."""

Recipient = Annotated[str, Field(min_length=1, max_length=320, pattern=r"[^\s\x1c-\x1f]")]
"""An action's recipient: not blank (smtp: an e-mail address, a user id or a role)."""

Field_ = Literal["ipAddress", "username", "userId", "eventType", "target"]
Operator = Literal[
    "in",
    "not_in",
    "equals",
    "not_equals",
    "contains",
    "not_contains",
    "starts_with",
    "ends_with",
    "matches",
]


_OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
CONDITION_VALUES_SCHEMA: JsonDict = {
    "allOf": [
        {
            "if": {
                "properties": {
                    "field": {"const": "ipAddress"},
                    "operator": {"enum": ["in", "not_in"]},
                },
                "required": ["field", "operator"],
            },
            "then": {
                "properties": {
                    "value": {
                        "items": {
                            "anyOf": [
                                {"pattern": f"^({_OCTET}\\.){{3}}{_OCTET}(/(3[0-2]|[12]?[0-9]))?$"},
                                {"format": "ipv6"},
                            ]
                        },
                        "description": "IP addresses or CIDR ranges",
                    }
                }
            },
        },
        {
            "if": {"properties": {"operator": {"const": "matches"}}, "required": ["operator"]},
            "then": {
                "properties": {
                    "value": {
                        "items": {"format": "regex", "maxLength": MAX_PATTERN_LENGTH},
                        "description": "RE2 syntax: no backreferences or lookaround",
                    }
                }
            },
        },
    ]
}
"""What the document says of condition values ``check_conditions`` checks."""


class ConditionIn(BaseModel):
    """``{field, operator, value: [...]}``; the condition holds when any value matches."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=CONDITION_VALUES_SCHEMA)

    field: Field_
    operator: Operator
    value: list[str] = Field(min_length=1, max_length=500)

    @field_validator("value")
    @classmethod
    def _short_values(cls, value: list[str]) -> list[str]:
        if any(len(item) > 1000 for item in value):
            raise ValueError("condition values must be at most 1000 characters")
        return value


SMTP_RECIPIENTS_SCHEMA: JsonDict = {
    "if": {"properties": {"channel": {"const": "smtp"}}},
    "then": {
        "properties": {
            "recipients": {
                "items": {"pattern": r'^[^@\s<>,;"\x00-\x1f]+@[^@\s<>,;"\x00-\x1f]+$'},
                "description": "e-mail addresses (user and role ids are taken too)",
            }
        }
    },
}
"""What the document says of smtp recipients (``check_actions`` also takes known ids)."""


class ActionIn(BaseModel):
    """``{channel, recipients}``: where a matching event is delivered."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=SMTP_RECIPIENTS_SCHEMA)

    channel: Annotated[
        str,
        Field(min_length=1, max_length=32),
        listed_in(lambda kernel: kernel.notifications.channels.types()),
    ]
    recipients: list[Recipient] = Field(default_factory=list, max_length=200)


class RuleIn(BaseModel):
    """The body of ``POST /notifications/rules``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    enabled: bool = True
    events: list[EventPattern] = Field(min_length=1, max_length=200)
    condition_logic: Literal["and", "or"] = Field(default="and", alias="conditionLogic")
    conditions: list[ConditionIn] = Field(default_factory=list, max_length=100)
    cadence: Literal["instant", "hourly", "daily"] = "instant"
    actions: list[ActionIn] = Field(default_factory=list, max_length=50)


class RulePatch(BaseModel):
    """The body of ``PUT /notifications/rules/:id``: any subset of the rule's fields (not null)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"minProperties": 1})

    name: str | Unset = Field(default=None, min_length=1, max_length=200)
    enabled: bool | Unset = None
    events: Annotated[list[EventPattern], Field(min_length=1, max_length=200)] | Unset = None
    condition_logic: Literal["and", "or"] | Unset = Field(default=None, alias="conditionLogic")
    conditions: Annotated[list[ConditionIn], Field(max_length=100)] | Unset = None
    cadence: Literal["instant", "hourly", "daily"] | Unset = None
    actions: Annotated[list[ActionIn], Field(max_length=50)] | Unset = None


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


def check_conditions(conditions: Sequence[ConditionIn]) -> list[dict[str, Any]]:
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
    actions: Sequence[ActionIn], channel_types: Sequence[str], directory: Directory
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
