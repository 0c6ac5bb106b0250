"""``/command-rules``: the rules that block, hold or flag terminal commands, and held commands.

Writing rules and testing a command against them takes ``sessions.command_rules``;
``/command-rules/held`` lists the commands waiting for approval (every one for an
approver, ``access.approve`` or ``sessions.moderate``; else the caller's own) and an
approver allows or refuses one. Everything is audited (services/command_rules).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint, request
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from ..db.models.command_rules import CommandRule
from ..errors import InvalidInput
from ..guards import app_kernel, authenticated, current_caller, requires
from ..jsoninput import WHOLE
from ..openapi import Success, Unset, answers
from ..pagination import ID_MAX, PageQuery, Pagination, page_from
from ..safe_regex import MAX_PATTERN_LENGTH
from ..services.command_rules.matching import decide
from ..services.command_rules.service import MANAGE, Held
from ..timefmt import iso
from .fields import Name

blueprint = Blueprint("command_rules", __name__)

Action = Literal["block", "approve", "alert"]
Match = Literal["exact", "prefix", "glob", "regex"]
Pattern = Annotated[str, Field(min_length=1, max_length=MAX_PATTERN_LENGTH)]
Id = Annotated[str, Field(min_length=1, max_length=ID_MAX)]
TagName = Annotated[str, Field(min_length=1, max_length=100)]
Ids = Annotated[list[Id], Field(max_length=500)]
Priority = Annotated[int, Field(ge=0, le=1_000_000), WHOLE]
Description = Annotated[str, Field(max_length=1000)]


class RuleCreate(BaseModel):
    """``POST /command-rules``: empty scope lists cover every connection or role."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: Name
    description: Description = ""
    enabled: bool = True
    action: Action
    match: Match
    pattern: Pattern
    priority: Priority = 100
    connectionIds: Ids = []  # noqa: N815 - wire name
    groupIds: Ids = []  # noqa: N815
    tags: Annotated[list[TagName], Field(max_length=500)] = []
    roleIds: Ids = []  # noqa: N815


class RuleUpdate(BaseModel):
    """``PUT /command-rules/:id``: the fields given change."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: Name | Unset = None
    description: Description | Unset = None
    enabled: bool | Unset = None
    action: Action | Unset = None
    match: Match | Unset = None
    pattern: Pattern | Unset = None
    priority: Priority | Unset = None
    connectionIds: Ids | Unset = None  # noqa: N815
    groupIds: Ids | Unset = None  # noqa: N815
    tags: Annotated[list[TagName], Field(max_length=500)] | Unset = None
    roleIds: Ids | Unset = None  # noqa: N815


class TestBody(BaseModel):
    """``POST /command-rules/test``: a command line, optionally for one connection and role."""

    model_config = ConfigDict(extra="forbid", strict=True)

    command: Annotated[str, Field(min_length=1, max_length=4000)]
    connectionId: Id | None = None  # noqa: N815
    roleId: Id | None = None  # noqa: N815


class RuleJson(TypedDict):
    """A command rule."""

    id: str
    name: str
    description: str
    enabled: bool
    action: str
    match: str
    pattern: str
    priority: int
    connectionIds: list[str]
    groupIds: list[str]
    tags: list[str]
    roleIds: list[str]
    createdAt: str
    updatedAt: str


class RulePage(Pagination):
    """One page of rules, by priority then name."""

    rules: list[RuleJson]
    total: int


class RuleUpdated(TypedDict):
    """The rule as changed."""

    success: bool
    rule: RuleJson


class TestResult(TypedDict):
    """What would happen to the command: ``action`` ``allow`` when no rule matches."""

    action: str
    rule: RuleJson | None
    line: str | None
    """The line of the command that matched (a command may hold several lines)."""


class HeldJson(TypedDict):
    """A command waiting for an approver."""

    id: str
    sessionId: str
    userId: str
    username: str
    connectionId: str
    connectionName: str
    command: str
    rule: str
    ruleId: str
    createdAt: str
    expiresAt: str


class HeldList(TypedDict):
    """The commands waiting now, oldest first."""

    held: list[HeldJson]


def rule_json(row: CommandRule) -> dict[str, Any]:
    """A rule as the API shows it."""
    return {
        "id": row.id,
        "name": row.name,
        "description": row.description,
        "enabled": row.enabled,
        "action": row.action,
        "match": row.match,
        "pattern": row.pattern,
        "priority": row.priority,
        "connectionIds": list(row.connection_ids),
        "groupIds": list(row.group_ids),
        "tags": list(row.tags),
        "roleIds": list(row.role_ids),
        "createdAt": iso(row.created_at),
        "updatedAt": iso(row.updated_at),
    }


def held_json(held: Held) -> dict[str, Any]:
    """A held command as the API shows it."""
    return {
        "id": held.id,
        "sessionId": held.session_id,
        "userId": held.user_id,
        "username": held.username,
        "connectionId": held.connection_id,
        "connectionName": held.connection_name,
        "command": held.command,
        "rule": held.rule.name,
        "ruleId": held.rule.id,
        "createdAt": iso(held.created_at),
        "expiresAt": iso(held.expires_at),
    }


@blueprint.get("/command-rules")
@requires(MANAGE)
@tag(["command-rules"])
@answers(RulePage, query=PageQuery)
async def list_command_rules() -> dict[str, Any]:
    """Every rule, enabled or not, by priority then name."""
    page = page_from(request.args)
    rows, total = await app_kernel().command_rules.page(page)
    return {"rules": [rule_json(row) for row in rows], "total": total, **page.echo()}


@blueprint.post("/command-rules")
@requires(MANAGE)
@validate_request(RuleCreate)
@tag(["command-rules"])
@answers(RuleJson, status=201, errors=(409,))
async def create_command_rule(data: RuleCreate) -> tuple[dict[str, Any], int]:
    """Create a rule (in force at the next Enter of every open terminal)."""
    row = await app_kernel().command_rules.create(current_caller(), data.model_dump())
    return rule_json(row), 201


@blueprint.post("/command-rules/test")
@requires(MANAGE)
@validate_request(TestBody)
@tag(["command-rules"])
@answers(TestResult)
async def test_command(data: TestBody) -> dict[str, Any]:
    """Which enabled rule would match ``command`` and what it would do.

    With ``connectionId`` and ``roleId`` only the rules covering that connection and
    role count; without them, every enabled rule does.
    """
    rules = app_kernel().command_rules
    candidates = await rules.rules()
    if data.roleId is not None:
        candidates = [rule for rule in candidates if rule.covers_role(data.roleId)]
    if data.connectionId is not None:
        scope = await rules.scope(data.connectionId, "")
        candidates = [rule for rule in candidates if rule.covers_connection(scope)]
    decision = decide(candidates, data.command)
    if decision is None:
        return {"action": "allow", "rule": None, "line": None}
    row = await rules.get(decision.rule.id)
    return {"action": decision.action, "rule": rule_json(row), "line": decision.command}


@blueprint.get("/command-rules/held")
@authenticated
@tag(["command-rules"])
@answers(HeldList)
async def list_held_commands() -> dict[str, Any]:
    """Commands waiting for approval: all of them for an approver, else the caller's own."""
    held = app_kernel().command_rules.held(current_caller())
    return {"held": [held_json(item) for item in held]}


@blueprint.post("/command-rules/held/<held_id>/approve")
@authenticated
@tag(["command-rules"])
@answers(Success)
async def approve_held_command(held_id: str) -> Success:
    """Send a held command (``access.approve`` or ``sessions.moderate``; not one's own)."""
    await app_kernel().command_rules.decide_held(current_caller(), held_id, True)
    return {"success": True}


@blueprint.post("/command-rules/held/<held_id>/deny")
@authenticated
@tag(["command-rules"])
@answers(Success)
async def deny_held_command(held_id: str) -> Success:
    """Refuse a held command: the user's line is dropped and they are told who refused."""
    await app_kernel().command_rules.decide_held(current_caller(), held_id, False)
    return {"success": True}


@blueprint.get("/command-rules/<rule_id>")
@requires(MANAGE)
@tag(["command-rules"])
@answers(RuleJson)
async def get_command_rule(rule_id: str) -> dict[str, Any]:
    """One rule."""
    return rule_json(await app_kernel().command_rules.get(rule_id))


@blueprint.put("/command-rules/<rule_id>")
@requires(MANAGE)
@validate_request(RuleUpdate)
@tag(["command-rules"])
@answers(RuleUpdated, errors=(409,))
async def update_command_rule(rule_id: str, data: RuleUpdate) -> dict[str, Any]:
    """Change a rule's given fields."""
    changes = data.model_dump(exclude_unset=True)
    nulls = [name for name, value in changes.items() if value is None]
    if nulls:
        raise InvalidInput(f"{', '.join(sorted(nulls))} may not be null")
    row = await app_kernel().command_rules.update(current_caller(), rule_id, changes)
    return {"success": True, "rule": rule_json(row)}


@blueprint.delete("/command-rules/<rule_id>")
@requires(MANAGE)
@tag(["command-rules"])
@answers(Success)
async def delete_command_rule(rule_id: str) -> Success:
    """Delete a rule."""
    await app_kernel().command_rules.delete(current_caller(), rule_id)
    return {"success": True}
