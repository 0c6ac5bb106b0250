"""The request bodies of ``POST``/``PUT /notifications/rules``, with their OpenAPI schema.

The service (``rule_matching.py``) checks what pydantic cannot
(regexes, IP ranges, known channels and recipients) and reads these models
through its ``RuleFields``/``RuleChanges`` protocols.
"""

from __future__ import annotations

from typing import Annotated, Literal

from hostgate import Unset, listed_in
from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator
from pydantic.config import JsonDict

from .channels import channel_types
from .patterns import MAX_PATTERN_LENGTH
from .rule_matching import EVENT_PATTERN

EventPattern = Annotated[str, Field(min_length=1, max_length=100, pattern=EVENT_PATTERN.pattern)]
"""An event type, ``*`` or ``prefix.*``."""

Recipient = Annotated[str, Field(min_length=1, max_length=320, pattern=r"[^\s\x1c-\x1f]")]
"""An action's recipient: not blank (smtp: an e-mail address, a user id or a role)."""

Field_ = Literal["ipAddress", "username", "userId", "eventType", "target", "command"]
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
        listed_in(lambda kernel: channel_types(kernel.channels)),
    ]
    recipients: list[Recipient] = Field(default_factory=list, max_length=200)


class RuleIn(BaseModel):
    """The body of ``POST /notifications/rules``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    enabled: StrictBool = True  # 0 and "yes" are not booleans
    events: list[EventPattern] = Field(min_length=1, max_length=200)
    condition_logic: Literal["and", "or"] = Field(default="and", alias="conditionLogic")
    conditions: list[ConditionIn] = Field(default_factory=list, max_length=100)
    cadence: Literal["instant", "hourly", "daily"] = "instant"
    actions: list[ActionIn] = Field(default_factory=list, max_length=50)


class RulePatch(BaseModel):
    """The body of ``PUT /notifications/rules/:id``: any subset of the rule's fields (not null)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"minProperties": 1})

    name: str | Unset = Field(default=None, min_length=1, max_length=200)
    enabled: StrictBool | Unset = None
    events: Annotated[list[EventPattern], Field(min_length=1, max_length=200)] | Unset = None
    condition_logic: Literal["and", "or"] | Unset = Field(default=None, alias="conditionLogic")
    conditions: Annotated[list[ConditionIn], Field(max_length=100)] | Unset = None
    cadence: Literal["instant", "hourly", "daily"] | Unset = None
    actions: Annotated[list[ActionIn], Field(max_length=50)] | Unset = None
