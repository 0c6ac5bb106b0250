"""``/notifications``: channels, rules, recipients, the delivery log and its retention."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from hostgate import (
    ID_MAX,
    WHOLE,
    FilterQuery,
    InvalidInput,
    NotFound,
    Ok,
    PageQuery,
    Pagination,
    answers,
    current_caller,
    current_kernel,
    decode_json,
    iso,
    page_from,
    requires,
)
from pydantic import BaseModel, ConfigDict, Field, StrictBool
from quart import Blueprint, request
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from .models import NotificationLogEntry, NotificationRule
from .rule_fields import RuleIn, RulePatch
from .service import service


def rule_json(rule: NotificationRule) -> Rule:
    """The spec's rule shape."""
    return {
        "id": rule.id,
        "name": rule.name,
        "enabled": rule.enabled,
        "events": list(rule.events),
        "conditionLogic": rule.condition_logic,
        "conditions": list(rule.conditions),
        "cadence": rule.cadence,
        "actions": list(rule.actions),
        "createdAt": iso(rule.created_at),
        "lastTriggeredAt": iso(rule.last_triggered_at),
    }


def entry_json(entry: NotificationLogEntry) -> LogEntry:
    """The spec's log entry shape (plus ``attempt`` and ``retryOf``)."""
    return {
        "id": entry.id,
        "ruleId": entry.rule_id,
        "ruleName": entry.rule_name,
        "channel": entry.channel,
        "status": entry.status,
        "sentAt": iso(entry.sent_at),
        "error": entry.error,
        "attempt": entry.attempt,
        "retryOf": entry.retry_of,
    }


blueprint = Blueprint("notifications", __name__)

PERMISSION = "settings.notifications"


class ChannelBody(BaseModel):
    """``PUT /notifications/channels/:type``."""

    model_config = ConfigDict(extra="forbid")

    enabled: StrictBool | None = None
    config: dict[str, Any] | None = None


class RetentionBody(BaseModel):
    """``PUT /notifications/settings``."""

    model_config = ConfigDict(extra="forbid")

    retention_days: Annotated[int, Field(ge=1, le=36_500, strict=True), WHOLE] = Field(
        alias="retentionDays"
    )


class ChannelField(TypedDict):
    """One config field of a channel, for a form."""

    name: str
    type: Literal["string", "integer", "number", "boolean", "map"]
    required: bool
    default: Any
    description: str
    secret: bool
    choices: list[Any] | None
    minimum: float | None
    maximum: float | None
    maxLength: int | None


class ChannelState(TypedDict):
    """A channel: on or off, its config with secrets masked, and its fields."""

    id: str
    enabled: bool
    config: dict[str, Any]
    title: str
    installed: bool
    fields: list[ChannelField]


class Channels(TypedDict):
    """Every channel type."""

    channels: list[ChannelState]


class TestSent(TypedDict):
    """The test message was sent."""

    ok: bool
    entryId: str


class Rule(TypedDict):
    """A notification rule."""

    id: str
    name: str
    enabled: bool
    events: list[str]
    conditionLogic: str
    conditions: list[dict[str, Any]]
    cadence: Any
    actions: list[dict[str, Any]]
    createdAt: str
    lastTriggeredAt: str | None


class Rules(TypedDict):
    """Every rule."""

    rules: list[Rule]


class RuleBody(TypedDict):
    """One rule."""

    rule: Rule


class Toggled(TypedDict):
    """The rule's new state."""

    ok: bool
    enabled: bool


class Recipient(TypedDict):
    """A user a rule may notify."""

    id: str
    username: str
    email: str | None


class RecipientRole(TypedDict):
    """A role a rule may notify."""

    id: str
    name: str


class Recipients(TypedDict):
    """Users and roles a rule's smtp action may name."""

    users: list[Recipient]
    roles: list[RecipientRole]


class LogEntry(TypedDict):
    """One delivery attempt."""

    id: str
    ruleId: str | None
    ruleName: str | None
    channel: str
    status: str
    sentAt: str | None
    error: str | None
    attempt: int
    retryOf: str | None


class LogPage(Pagination):
    """One page of delivery attempts, newest first."""

    entries: list[LogEntry]
    total: int


class Retried(TypedDict):
    """The new delivery attempt."""

    ok: bool
    entry: LogEntry


class Cleared(TypedDict):
    """How many entries were deleted."""

    ok: bool
    deleted: int


class Retention(TypedDict):
    """Days delivery attempts are kept."""

    retentionDays: int


class RetentionSet(Retention):
    """The new retention."""

    ok: bool


class LogQuery(PageQuery):
    """The filters of ``GET /notifications/log``."""

    status: Literal["sent", "failed", "pending", ""] = ""
    rule_id: str = Field(default="", max_length=ID_MAX)


class ClearQuery(FilterQuery):
    """The filters of ``DELETE /notifications/log``."""

    status: Literal["sent", "failed", "pending", ""] = ""
    rule_id: str = Field(default="", max_length=ID_MAX)
    before: datetime | None = None


def _known_channel(channel_type: str) -> None:
    if channel_type not in service(current_kernel()).channels.types():
        raise NotFound(f"Unknown notification channel {channel_type!r}")


async def _optional_json() -> dict[str, Any]:
    raw = await request.get_data()
    if not raw or not raw.strip():
        return {}
    try:
        body = decode_json(raw)
    except ValueError:
        raise InvalidInput("Malformed JSON body") from None
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise InvalidInput("send a JSON object of config overrides")
    return body


# -- channels ----------------------------------------------------------------------


@blueprint.get("/notifications/channels")
@requires(PERMISSION)
@tag(["notifications"])
@answers(Channels)
async def list_channels() -> dict[str, Any]:
    """Every channel with its config; secret values masked."""
    return {"channels": await service(current_kernel()).channels.listing()}


@blueprint.put("/notifications/channels/<channel_type>")
@requires(PERMISSION)
@validate_request(ChannelBody)
@tag(["notifications"])
@answers(Ok)
async def update_channel(channel_type: str, data: ChannelBody) -> Ok:
    """Enable or disable a channel and merge its config; the mask keeps a stored secret."""
    _known_channel(channel_type)
    await service(current_kernel()).channels.update(
        channel_type, data.enabled, data.config, actor=current_caller()
    )
    return {"ok": True}


@blueprint.post("/notifications/channels/<channel_type>/test")
@requires(PERMISSION)
@tag(["notifications"])
@answers(TestSent, errors=(400, 502, 504))
async def test_channel(channel_type: str) -> TestSent:
    """Send a real test message (stored config plus optional overrides); report the error."""
    _known_channel(channel_type)
    body = await _optional_json()
    recipients = body.pop("recipients", None)
    if recipients is not None and (
        not isinstance(recipients, list) or not all(isinstance(r, str) for r in recipients)
    ):
        raise InvalidInput("recipients must be an array of strings")
    overrides = body.pop("config") if set(body) == {"config"} else body
    if not isinstance(overrides, dict):
        raise InvalidInput("config must be an object")
    kernel = current_kernel()
    caller = current_caller()
    try:
        result = await service(kernel).test_channel(channel_type, overrides, recipients, caller)
    except Exception:
        await kernel.audit.record(
            "notifications.channel_tested",
            actor=caller,
            target=channel_type,
            details={"ok": False},
        )
        raise
    await kernel.audit.record(
        "notifications.channel_tested", actor=caller, target=channel_type, details={"ok": True}
    )
    return {"ok": True, "entryId": result["id"]}


# -- rules -------------------------------------------------------------------------


@blueprint.get("/notifications/rules")
@requires(PERMISSION)
@tag(["notifications"])
@answers(Rules)
async def list_rules() -> dict[str, Any]:
    """Every rule."""
    return {"rules": [rule_json(rule) for rule in await service(current_kernel()).rules.listing()]}


@blueprint.post("/notifications/rules")
@requires(PERMISSION)
@validate_request(RuleIn)
@tag(["notifications"])
@answers(RuleBody, status=201)
async def create_rule(data: RuleIn) -> tuple[dict[str, Any], int]:
    """Create a rule (201)."""
    rule = await service(current_kernel()).rules.create(data, actor=current_caller())
    return {"rule": rule_json(rule)}, 201


@blueprint.put("/notifications/rules/<rule_id>")
@requires(PERMISSION)
@validate_request(RulePatch)
@tag(["notifications"])
@answers(RuleBody)
async def update_rule(rule_id: str, data: RulePatch) -> dict[str, Any]:
    """Change any subset of a rule's fields."""
    given = data.model_fields_set
    if not given:
        raise InvalidInput("No fields to update")
    for name in given:
        if getattr(data, name) is None:
            raise InvalidInput(f"{name} may not be null")
    rule, _ = await service(current_kernel()).rules.update(rule_id, data, actor=current_caller())
    return {"rule": rule_json(rule)}


@blueprint.patch("/notifications/rules/<rule_id>/toggle")
@requires(PERMISSION)
@tag(["notifications"])
@answers(Toggled)
async def toggle_rule(rule_id: str) -> Toggled:
    """Flip a rule between enabled and disabled."""
    rule = await service(current_kernel()).rules.toggle(rule_id, actor=current_caller())
    return {"ok": True, "enabled": rule.enabled}


@blueprint.delete("/notifications/rules/<rule_id>")
@requires(PERMISSION)
@tag(["notifications"])
@answers(Ok)
async def delete_rule(rule_id: str) -> Ok:
    """Delete a rule (its delivery log stays)."""
    await service(current_kernel()).rules.delete(rule_id, actor=current_caller())
    return {"ok": True}


@blueprint.get("/notifications/recipients")
@requires(PERMISSION)
@tag(["notifications"])
@answers(Recipients)
async def recipients() -> dict[str, Any]:
    """Users (with e-mail) and roles an smtp action may name."""
    users, roles = await service(current_kernel()).rules.recipients()
    return {
        "users": [{"id": u.id, "username": u.username, "email": u.email} for u in users],
        "roles": [{"id": r.id, "name": r.name} for r in roles],
    }


# -- the delivery log --------------------------------------------------------------


@blueprint.get("/notifications/log")
@requires(PERMISSION)
@tag(["notifications"])
@answers(LogPage, query=LogQuery)
async def list_log() -> dict[str, Any]:
    """Delivery attempts, newest first; filters ``status`` and ``rule_id``; paged."""
    page = page_from(request.args)
    entries, total = await service(current_kernel()).log.page(
        page, status=request.args.get("status"), rule_id=request.args.get("rule_id") or None
    )
    return {"entries": [entry_json(e) for e in entries], "total": total, **page.echo()}


@blueprint.post("/notifications/log/<entry_id>/retry")
@requires(PERMISSION)
@tag(["notifications"])
@answers(Retried, errors=(409, 502, 504))
async def retry_delivery(entry_id: str) -> dict[str, Any]:
    """Re-send a failed delivery now with the channel's current config (a new entry)."""
    kernel = current_kernel()
    caller = current_caller()
    try:
        entry = await service(kernel).retry(entry_id)
    except Exception as exc:
        if getattr(exc, "status", 0) >= 500:
            await kernel.audit.record(
                "notifications.delivery_retried",
                actor=caller,
                target=entry_id,
                details={"entryId": entry_id, "ok": False},
            )
        raise
    await kernel.audit.record(
        "notifications.delivery_retried",
        actor=caller,
        target=entry_id,
        details={"entryId": entry_id, "newEntryId": entry.id, "ok": True},
    )
    return {"ok": True, "entry": entry_json(entry)}


@blueprint.delete("/notifications/log/<entry_id>")
@requires(PERMISSION)
@tag(["notifications"])
@answers(Ok)
async def delete_log_entry(entry_id: str) -> Ok:
    """Delete one log entry."""
    await service(current_kernel()).log.delete_one(entry_id, actor=current_caller())
    return {"ok": True}


@blueprint.delete("/notifications/log")
@requires(PERMISSION)
@tag(["notifications"])
@answers(Cleared, query=ClearQuery)
async def clear_log() -> Cleared:
    """Delete every entry matching ``status``, ``rule_id`` and ``before`` (all if none)."""
    deleted = await service(current_kernel()).log.delete_matching(
        status=request.args.get("status") or None,
        rule_id=request.args.get("rule_id") or None,
        before=request.args.get("before") or None,
        actor=current_caller(),
    )
    return {"ok": True, "deleted": deleted}


# -- retention ---------------------------------------------------------------------


@blueprint.get("/notifications/settings")
@requires(PERMISSION)
@tag(["notifications"])
@answers(Retention)
async def get_settings() -> Retention:
    """The delivery log's retention."""
    return {"retentionDays": service(current_kernel()).retention_days()}


@blueprint.put("/notifications/settings")
@requires(PERMISSION)
@validate_request(RetentionBody)
@tag(["notifications"])
@answers(RetentionSet)
async def put_settings(data: RetentionBody) -> RetentionSet:
    """Change the retention (whole days, at least 1); applied at once."""
    _, after = await service(current_kernel()).set_retention(
        data.retention_days, actor=current_caller()
    )
    return {"ok": True, "retentionDays": after}
