"""The rule book: rule CRUD, validation against users and roles, the in-memory matcher's cache."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hostgate import NotFound, utcnow
from sqlmodel import col, select

from .models import NotificationRule
from .rule_matching import (
    EMAIL_PATTERN,
    Directory,
    RuleChanges,
    RuleFields,
    check_actions,
    check_conditions,
    check_events,
)

if TYPE_CHECKING:
    from hostgate import Account, Caller, DirectoryAPI, RoleSummary
    from hostgate import AuditAPI as AuditLog
    from hostgate import DatabaseAPI as Database


class RuleBook:
    """Stored rules; ``cache`` mirrors them for matching events without a query."""

    def __init__(
        self,
        channel_types: Callable[[], Sequence[str]],
        *,
        db: Database,
        audit: AuditLog,
        directory: DirectoryAPI,
    ) -> None:
        self.db = db
        self.directory = directory
        self.audit = audit
        self.channel_types = channel_types
        self.cache: dict[str, NotificationRule] = {}
        self.changed: Callable[[], None] = lambda: None
        """Called after a rule was stored or deleted (several nodes: the others re-read)."""

    async def reload(self) -> None:
        """Re-read every rule into the cache (at start, and after a restore)."""
        async with self.db.session() as session:
            rows = (await session.exec(select(NotificationRule))).all()
        self.cache = {row.id: row for row in rows}

    def _cache(self, rule: NotificationRule) -> None:
        self.cache[rule.id] = rule
        self.changed()

    def _forget(self, rule_id: str) -> None:
        self.cache.pop(rule_id, None)
        self.changed()

    async def _directory(self) -> Directory:
        users = await self.directory.users()
        roles = await self.directory.roles()
        return Directory(
            user_ids=frozenset(user.id for user in users),
            role_ids=frozenset(role.id for role in roles),
            role_names=frozenset(role.name for role in roles),
        )

    async def _check_actions(self, body: RuleFields | RuleChanges) -> list[dict[str, Any]] | None:
        if body.actions is None:
            return None
        needs_directory = any(
            not EMAIL_PATTERN.match(r.strip()) for a in body.actions for r in a.recipients
        )
        directory = (
            await self._directory()
            if needs_directory
            else Directory(frozenset(), frozenset(), frozenset())
        )
        return check_actions(body.actions, self.channel_types(), directory)

    async def listing(self) -> list[NotificationRule]:
        """Every rule, oldest first."""
        async with self.db.session() as session:
            query = select(NotificationRule).order_by(col(NotificationRule.created_at))
            return list((await session.exec(query)).all())

    async def create(self, body: RuleFields, *, actor: Caller) -> NotificationRule:
        """Validate and store a new rule, audited as ``notifications.rule_created``."""
        rule = NotificationRule(
            name=body.name,
            enabled=body.enabled,
            events=check_events(body.events),
            condition_logic=body.condition_logic,
            conditions=check_conditions(body.conditions),
            cadence=body.cadence,
            actions=await self._check_actions(body) or [],
        )
        async with self.audit.atomic() as batch:
            batch.session.add(rule)
            batch.record(
                "notifications.rule_created",
                actor=actor,
                target=rule.name,
                details={"ruleId": rule.id, "events": list(rule.events), "cadence": rule.cadence},
            )
            batch.on_commit(lambda: self._cache(rule))
        return rule

    async def get(self, rule_id: str) -> NotificationRule:
        """One rule or 404."""
        async with self.db.session() as session:
            rule = await session.get(NotificationRule, rule_id)
        if rule is None:
            raise NotFound("Rule not found")
        return rule

    async def update(
        self, rule_id: str, body: RuleChanges, *, actor: Caller
    ) -> tuple[NotificationRule, list[str]]:
        """Apply the fields that are not None; the whole rule stays valid. Returns changed fields.

        Audited as ``notifications.rule_updated``.
        """
        changes: dict[str, Any] = {}
        if body.name is not None:
            changes["name"] = body.name
        if body.enabled is not None:
            changes["enabled"] = body.enabled
        if body.events is not None:
            changes["events"] = check_events(body.events)
        if body.condition_logic is not None:
            changes["condition_logic"] = body.condition_logic
        if body.conditions is not None:
            changes["conditions"] = check_conditions(body.conditions)
        if body.cadence is not None:
            changes["cadence"] = body.cadence
        actions = await self._check_actions(body)
        if actions is not None:
            changes["actions"] = actions
        async with self.audit.atomic() as batch:
            rule = await batch.session.get(NotificationRule, rule_id)
            if rule is None:
                raise NotFound("Rule not found")
            changed = [k for k, v in changes.items() if getattr(rule, k) != v]
            for name, value in changes.items():
                setattr(rule, name, value)
            rule.updated_at = utcnow()
            batch.session.add(rule)
            batch.record(
                "notifications.rule_updated",
                actor=actor,
                target=rule.name,
                details={"ruleId": rule.id, "changedFields": changed},
            )
            batch.on_commit(lambda: self._cache(rule))
        return rule, changed

    async def toggle(self, rule_id: str, *, actor: Caller) -> NotificationRule:
        """Flip ``enabled``, audited as ``notifications.rule_enabled`` or ``rule_disabled``."""
        async with self.audit.atomic() as batch:
            rule = await batch.session.get(NotificationRule, rule_id)
            if rule is None:
                raise NotFound("Rule not found")
            rule.enabled = not rule.enabled
            rule.updated_at = utcnow()
            batch.session.add(rule)
            batch.record(
                "notifications.rule_enabled" if rule.enabled else "notifications.rule_disabled",
                actor=actor,
                target=rule.name,
                details={"ruleId": rule.id},
            )
            batch.on_commit(lambda: self._cache(rule))
        return rule

    async def delete(self, rule_id: str, *, actor: Caller) -> NotificationRule:
        """Delete a rule (its waiting digest items go with it; its log stays).

        Audited as ``notifications.rule_deleted``.
        """
        async with self.audit.atomic() as batch:
            rule = await batch.session.get(NotificationRule, rule_id)
            if rule is None:
                raise NotFound("Rule not found")
            await batch.session.delete(rule)
            batch.record(
                "notifications.rule_deleted",
                actor=actor,
                target=rule.name,
                details={"ruleId": rule.id},
            )
            batch.on_commit(lambda: self._forget(rule_id))
        return rule

    async def recipients(self) -> tuple[list[Account], list[RoleSummary]]:
        """Users and roles a rule's smtp action may name (by name)."""
        return await self.directory.users(), await self.directory.roles()
