"""Held commands across gateway nodes: the others' listed here, decisions sent to the holder.

A held command waits on the node that holds its session (its ``decided`` future is
there). With several nodes an approver's request may land on any node, so each
node tells the others on the cluster bus (topic ``held-commands``) when it holds a
command and when one is settled; every node keeps a copy of the others' (dropped
when settled or past ``expires_at``) to list them. A decision made on another node
is sent to the holder (``decide``), which settles its command as for a local
approver. With one node the bus delivers nowhere and nothing here is used.

Delivery is at most once (``cluster/bus.py``): a lost ``held`` leaves a command
unlisted on some node, a lost ``decide`` leaves it to time out; either way it is
refused, never run without a decision.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import ApiError
from ...timefmt import iso, parse_iso, utcnow
from .matching import Rule

if TYPE_CHECKING:
    from ...cluster.bus import Bus
    from .service import Held

log = logging.getLogger(__name__)

TOPIC = "held-commands"

Decided = Callable[[str, bool, str], None]
"""``decided(held_id, approve, by)``: settle a command this node holds."""


def held_message(held: Held) -> dict[str, Any]:
    """A held command as the other nodes learn of it."""
    rule = held.rule
    return {
        "id": held.id,
        "sessionId": held.session_id,
        "userId": held.user_id,
        "username": held.username,
        "connectionId": held.connection_id,
        "connectionName": held.connection_name,
        "command": held.command,
        "rule": {
            "id": rule.id,
            "name": rule.name,
            "action": rule.action,
            "match": rule.match,
            "pattern": rule.pattern,
            "priority": rule.priority,
        },
        "createdAt": iso(held.created_at),
        "expiresAt": iso(held.expires_at),
    }


def held_from(message: dict[str, Any]) -> Held | None:
    """Another node's held command (its ``decided`` is never awaited here), or None."""
    from .service import Held

    try:
        rule = message["rule"]
        return Held(
            id=str(message["id"]),
            session_id=str(message["sessionId"]),
            user_id=str(message["userId"]),
            username=str(message["username"]),
            connection_id=str(message["connectionId"]),
            connection_name=str(message["connectionName"]),
            command=str(message["command"]),
            rule=Rule(
                id=str(rule["id"]),
                name=str(rule["name"]),
                action=str(rule["action"]),
                match=str(rule["match"]),
                pattern=str(rule["pattern"]),
                priority=int(rule["priority"]),
            ),
            created_at=parse_iso(str(message["createdAt"])),
            expires_at=parse_iso(str(message["expiresAt"])),
            decided=asyncio.get_running_loop().create_future(),
        )
    except (KeyError, TypeError, ValueError) as exc:
        log.warning("a held command from another node was not understood: %s", exc)
        return None


class HeldElsewhere:
    """The other nodes' held commands, and the bus messages about them."""

    def __init__(self, bus: Bus, decided: Decided) -> None:
        self._bus = bus
        self._decided = decided
        self._others: dict[str, Held] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        bus.subscribe(TOPIC, self._received)

    def all(self) -> list[Held]:
        """The other nodes' commands still waiting."""
        now = utcnow()
        for key in [k for k, held in self._others.items() if held.expires_at <= now]:
            del self._others[key]
        return list(self._others.values())

    def get(self, held_id: str) -> Held | None:
        """Another node's waiting command by id."""
        held = self._others.get(held_id)
        if held is not None and held.expires_at <= utcnow():
            del self._others[held_id]
            return None
        return held

    def held(self, held: Held) -> None:
        """Tell the others that this node holds a command."""
        self._publish({"op": "held", "held": held_message(held)})

    def settled(self, held_id: str) -> None:
        """A command this node held was settled: the others drop it."""
        self._publish({"op": "settled", "id": held_id})

    def decide(self, held: Held, approve: bool, by: str) -> None:
        """An approver here decided another node's command: send it to the holder."""
        self._others.pop(held.id, None)
        self._publish({"op": "decide", "id": held.id, "approve": approve, "by": by})

    def _publish(self, message: dict[str, Any]) -> None:
        task = asyncio.ensure_future(self._send(message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, message: dict[str, Any]) -> None:
        try:
            await self._bus.publish(TOPIC, message)
        except ApiError as exc:
            log.warning("could not tell the other nodes about a held command: %s", exc)

    async def _received(self, message: dict[str, Any]) -> None:
        op, held_id = message.get("op"), message.get("id")
        if op == "held" and isinstance(message.get("held"), dict):
            held = held_from(message["held"])
            if held is not None:
                self._others[held.id] = held
        elif op == "settled" and isinstance(held_id, str):
            self._others.pop(held_id, None)
        elif op == "decide" and isinstance(held_id, str):
            by = message.get("by")
            self._decided(
                held_id, message.get("approve") is True, by if isinstance(by, str) else ""
            )

    async def drain(self) -> None:
        """Wait for the messages still being sent (shutdown, tests)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
