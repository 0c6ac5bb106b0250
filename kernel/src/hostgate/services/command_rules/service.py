"""Command rules: stored rules, the sessions they cover, and commands held for approval.

Rules are kept in ``command_rules`` and read through the kernel's read cache, so a
change is in force at the very next Enter of every open session. A command held by
an ``approve`` rule waits in memory on the node that holds the session, until an
approver (``access.approve`` or ``sessions.moderate``, never the user who typed it)
allows or denies it, or until ``command_rules.approval_timeout`` seconds pass; it is
then refused. With several nodes every node lists the others' held commands and
sends a decision made there to the holder (``elsewhere.py``, the cluster bus).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import func
from sqlmodel import col, select

from ...db.models.command_rules import CommandRule
from ...db.models.connections import Connection
from ...errors import Conflict, InvalidInput, NotFound, PermissionDenied
from ...pagination import Page
from ...safe_regex import PatternError
from ...timefmt import utcnow
from .elsewhere import HeldElsewhere
from .matching import ACTIONS, MATCHES, Decision, Rule, Scope, decide, ordered

if TYPE_CHECKING:
    from ...cluster.bus import Bus
    from ...db.engine import Database
    from ...db.readcache import ReadCache
    from ...principals import Caller
    from ..audit.audit import AuditLog
    from ..events import UserEvents
    from ..settings import Settings

log = logging.getLogger(__name__)

MANAGE = "sessions.command_rules"
"""Write command rules (and test commands against them)."""
APPROVERS = ("access.approve", "sessions.moderate")
"""Either permission lets a user approve or deny held commands."""
TIMEOUT_SETTING = "command_rules.approval_timeout"
DEFAULT_TIMEOUT = 120
HELD_TOPIC = "held-commands"
"""The live nudge approvers' pages get when a command is held or decided."""
_CACHE_KEY = ("command_rules", "enabled")
FIELDS = (
    "name",
    "description",
    "enabled",
    "action",
    "match",
    "pattern",
    "priority",
    "connectionIds",
    "groupIds",
    "tags",
    "roleIds",
)
_COLUMNS = {
    "connectionIds": "connection_ids",
    "groupIds": "group_ids",
    "roleIds": "role_ids",
}


def compiled(row: CommandRule) -> Rule:
    """A stored rule ready to match (``PatternError`` if its pattern cannot run)."""
    return Rule(
        id=row.id,
        name=row.name,
        action=row.action,
        match=row.match,
        pattern=row.pattern,
        priority=row.priority,
        connection_ids=frozenset(row.connection_ids),
        group_ids=frozenset(row.group_ids),
        tags=frozenset(row.tags),
        role_ids=frozenset(row.role_ids),
    )


def check_rule(values: Mapping[str, Any]) -> None:
    """``InvalidInput`` when a rule's values cannot work together."""
    if values["action"] not in ACTIONS:
        raise InvalidInput(f"action must be one of {', '.join(ACTIONS)}")
    if values["match"] not in MATCHES:
        raise InvalidInput(f"match must be one of {', '.join(MATCHES)}")
    try:
        Rule(
            id="",
            name=values["name"],
            action=values["action"],
            match=values["match"],
            pattern=values["pattern"],
            priority=values["priority"],
        )
    except PatternError as exc:
        raise InvalidInput(f"pattern: {exc}") from None


@dataclass(eq=False)
class Held:
    """A command waiting for an approver."""

    id: str
    session_id: str
    user_id: str
    username: str
    connection_id: str
    connection_name: str
    command: str
    rule: Rule
    created_at: datetime
    expires_at: datetime
    decided: asyncio.Future[tuple[bool, str]] = field(repr=False)
    """``(approved, by)``: set by an approver, the timeout, or the user withdrawing it."""


class CommandRules:
    """The stored rules, what applies to a session, and the commands held for approval."""

    def __init__(
        self,
        *,
        db: Database,
        readcache: ReadCache,
        audit: AuditLog,
        events: UserEvents,
        settings: Settings,
        bus: Bus | None = None,
    ) -> None:
        self.db = db
        self.readcache = readcache
        self.audit = audit
        self.events = events
        self.settings = settings
        self._held: dict[str, Held] = {}
        self.elsewhere = HeldElsewhere(bus, self._decided_elsewhere) if bus is not None else None
        """The other nodes' held commands (several nodes), or None."""

    # -- reading ----------------------------------------------------------------------

    async def rules(self) -> list[Rule]:
        """Every enabled rule, strictest first (cached until the database changes)."""
        return await self.readcache.get(_CACHE_KEY, self._load)

    async def _load(self) -> list[Rule]:
        async with self.db.session() as session:
            rows = (
                await session.exec(select(CommandRule).where(col(CommandRule.enabled).is_(True)))
            ).all()
        rules = []
        for row in rows:
            try:
                rules.append(compiled(row))
            except PatternError as exc:  # saved before a check existed: never matches
                log.warning("command rule %s skipped: %s", row.name, exc)
        return ordered(rules)

    async def scope(self, connection_id: str, role_id: str) -> Scope:
        """What rules look at for a session of ``role_id`` to ``connection_id``."""
        async with self.db.session() as session:
            row = await session.get(Connection, connection_id)
        if row is None:
            return Scope(connection_id, None, frozenset(), role_id)
        return Scope(connection_id, row.group_id, frozenset(row.tags), role_id)

    async def applying(self, scope: Scope) -> list[Rule]:
        """The enabled rules that cover ``scope``, strictest first."""
        return [rule for rule in await self.rules() if rule.applies(scope)]

    async def check(self, scope: Scope, command: str) -> Decision | None:
        """What happens to ``command`` in a session of ``scope`` (None: it is sent)."""
        rules = await self.rules()
        if not rules:
            return None
        return decide([rule for rule in rules if rule.applies(scope)], command)

    def timeout(self) -> float:
        """Seconds a held command waits for an approver."""
        value = self.settings.get(TIMEOUT_SETTING)
        return float(value) if isinstance(value, int | float) else float(DEFAULT_TIMEOUT)

    # -- admin ------------------------------------------------------------------------

    async def page(self, page: Page) -> tuple[list[CommandRule], int]:
        """Rules by priority then name, one page, and how many there are."""
        async with self.db.session() as session:
            total = (await session.exec(select(func.count()).select_from(CommandRule))).one()
            rows = (
                await session.exec(
                    select(CommandRule)
                    .order_by(col(CommandRule.priority), col(CommandRule.name))
                    .offset(page.offset)
                    .limit(page.limit)
                )
            ).all()
        return list(rows), int(total)

    async def get(self, rule_id: str) -> CommandRule:
        """One rule, or 404."""
        async with self.db.session() as session:
            row = await session.get(CommandRule, rule_id)
        if row is None:
            raise NotFound("Command rule not found")
        return row

    async def create(self, actor: Caller, values: Mapping[str, Any]) -> CommandRule:
        """Store a new rule (409 when the name is taken); audited."""
        row = CommandRule(**{_COLUMNS.get(name, name): value for name, value in values.items()})
        check_rule(row.model_dump())
        async with self.audit.atomic() as batch:
            await self._unique(batch.session, row)
            batch.session.add(row)
            batch.record("command_rules.created", actor=actor, target=row.name, details=_audit(row))
        return row

    async def update(self, actor: Caller, rule_id: str, values: Mapping[str, Any]) -> CommandRule:
        """Change a rule's given fields; audited."""
        async with self.audit.atomic() as batch:
            row = await batch.session.get(CommandRule, rule_id)
            if row is None:
                raise NotFound("Command rule not found")
            self._apply(row, values)
            check_rule(row.model_dump())
            await self._unique(batch.session, row)
            row.updated_at = utcnow()
            batch.session.add(row)
            batch.record(
                "command_rules.updated",
                actor=actor,
                target=row.name,
                details={**_audit(row), "changed": sorted(values)},
            )
        return row

    async def delete(self, actor: Caller, rule_id: str) -> None:
        """Remove a rule; audited."""
        async with self.audit.atomic() as batch:
            row = await batch.session.get(CommandRule, rule_id)
            if row is None:
                raise NotFound("Command rule not found")
            await batch.session.delete(row)
            batch.record(
                "command_rules.deleted", actor=actor, target=row.name, details={"id": row.id}
            )

    @staticmethod
    def _apply(row: CommandRule, values: Mapping[str, Any]) -> None:
        for name, value in values.items():
            setattr(row, _COLUMNS.get(name, name), value)

    @staticmethod
    async def _unique(session: Any, row: CommandRule) -> None:
        same = (
            await session.exec(
                select(CommandRule.id).where(
                    col(CommandRule.name) == row.name, col(CommandRule.id) != row.id
                )
            )
        ).first()
        if same is not None:
            raise Conflict(f"A command rule named {row.name!r} exists")

    # -- held commands ----------------------------------------------------------------

    async def hold(
        self,
        *,
        caller: Caller,
        session_id: str,
        connection_id: str,
        connection_name: str,
        decision: Decision,
        told: Callable[[Held], Awaitable[None]] | None = None,
    ) -> Held:
        """Hold a command for approval; ``decided`` resolves when it is allowed or refused."""
        now = utcnow()
        held = Held(
            id=str(uuid.uuid4()),
            session_id=session_id,
            user_id=caller.user_id,
            username=caller.username,
            connection_id=connection_id,
            connection_name=connection_name,
            command=decision.command,
            rule=decision.rule,
            created_at=now,
            expires_at=now + timedelta(seconds=self.timeout()),
            decided=asyncio.get_running_loop().create_future(),
        )
        self._held[held.id] = held
        if self.elsewhere is not None:
            self.elsewhere.held(held)
        await self.audit.record(
            "session.command_held",
            actor=caller,
            target=connection_name,
            details=_held_details(held),
        )
        self._nudge(held)
        asyncio.get_running_loop().call_later(self.timeout(), self._expire, held)
        return held

    def held(self, caller: Caller) -> list[Held]:
        """The commands waiting now: every one for an approver, else the caller's own."""
        everyone = any(caller.can(name) for name in APPROVERS)
        waiting = [*self._held.values(), *(self.elsewhere.all() if self.elsewhere else [])]
        return sorted(
            (h for h in waiting if everyone or h.user_id == caller.user_id),
            key=lambda h: h.created_at,
        )

    async def decide_held(self, caller: Caller, held_id: str, approve: bool) -> Held:
        """An approver allows or refuses a held command; audited."""
        if not any(caller.can(name) for name in APPROVERS):
            raise PermissionDenied(f"Insufficient permissions: requires {' or '.join(APPROVERS)}")
        held = self._held.get(held_id)
        here = held is not None
        if held is None and self.elsewhere is not None:
            held = self.elsewhere.get(held_id)
        if held is None:
            raise NotFound("No such command is waiting (it was decided, withdrawn or expired)")
        if held.user_id == caller.user_id:
            raise PermissionDenied("You cannot approve or deny your own command")
        if here:
            self._settle(held, approve, caller.username)
        elif self.elsewhere is not None:  # another node holds it: the decision goes there
            self.elsewhere.decide(held, approve, caller.username)
        await self.audit.record(
            "session.command_approved" if approve else "session.command_denied",
            actor=caller,
            target=held.connection_name,
            details=_held_details(held),
        )
        return held

    def withdraw(self, held: Held) -> None:
        """The user cancelled (Ctrl-C) or the session ended: the command is not sent."""
        self._settle(held, False, "")

    def _expire(self, held: Held) -> None:
        if not held.decided.done():
            self._settle(held, False, "")

    def _decided_elsewhere(self, held_id: str, approve: bool, by: str) -> None:
        """An approver on another node decided a command this node holds."""
        held = self._held.get(held_id)
        if held is not None:
            self._settle(held, approve, by)

    def _settle(self, held: Held, approve: bool, by: str) -> None:
        if self._held.pop(held.id, None) is not None and self.elsewhere is not None:
            self.elsewhere.settled(held.id)
        if not held.decided.done():
            held.decided.set_result((approve, by))
        self._nudge(held)

    def _nudge(self, held: Held) -> None:
        for permission in APPROVERS:
            self.events.notify(HELD_TOPIC, users=[held.user_id], permission=permission)

    async def stop(self) -> None:
        """Refuse everything still held (the gateway stops)."""
        for held in list(self._held.values()):
            self._settle(held, False, "")
        if self.elsewhere is not None:
            await self.elsewhere.drain()


def _audit(row: CommandRule) -> dict[str, Any]:
    return {
        "id": row.id,
        "action": row.action,
        "match": row.match,
        "pattern": row.pattern,
        "enabled": row.enabled,
    }


def _held_details(held: Held) -> dict[str, Any]:
    return {
        "sessionId": held.session_id,
        "connectionId": held.connection_id,
        "command": held.command,
        "rule": held.rule.name,
        "ruleId": held.rule.id,
        "heldId": held.id,
    }
