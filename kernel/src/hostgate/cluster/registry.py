"""Which gateway node holds which live session, and which nodes are alive.

Every node writes its open sessions (terminals, desktops, file sessions,
watches) as plain JSON-able entries and beats its heart every few seconds. Any
node can list every node's sessions, and ``reap`` hands exactly one caller the
entries of the nodes whose heartbeat is older than ``dead_after`` seconds (a
node killed with SIGKILL, a host that lost its power): that caller marks them
ended in the database and closes their recordings.

Two implementations with the same behaviour (tests/cluster/test_registry.py runs
the same tests against both): ``MemoryRegistry`` for one node (or several
registries of one process sharing a ``MemoryBackend``, in tests) and
``RedisRegistry`` for nodes sharing a Redis, where every step that must not race
(a heartbeat, a reap) is one Lua script run on Redis's own clock.

A node that finds itself missing at a heartbeat writes all its entries again:
``heartbeat`` says ``"absent"`` when Redis lost the registry (it restarted
without persistence) and ``"reaped"`` when the others declared the node dead
(its heartbeats did not arrive for too long); then its sessions were already
marked ended, and the node ends them (services/sessions/shared_sessions.py).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .shared import KEY_PREFIX, reaching

if TYPE_CHECKING:
    from redis.asyncio import Redis

Entry = dict[str, Any]
"""One live session as the other nodes see it (JSON-able; ``node`` names its holder)."""
Beat = Literal["ok", "absent", "reaped"]

NODES_KEY = f"{KEY_PREFIX}live:nodes"
"""Sorted set: node id -> time of its last heartbeat (ms, Redis's clock)."""
SESSIONS_KEY = f"{KEY_PREFIX}live:sessions"
"""Hash: session id -> entry (JSON)."""
REAPED_PREFIX = f"{KEY_PREFIX}live:reaped:"
"""``<prefix><node id>``: that node was declared dead (kept a day)."""
REAPED_TTL_SECONDS = 86400


class SessionRegistry(Protocol):
    """The live sessions of every node, and the nodes' heartbeats."""

    node_id: str
    dead_after: float

    async def heartbeat(self) -> Beat:
        """Say this node is alive; whether the registry still knew it (see the module)."""

    async def write(self, put: dict[str, Entry], drop: list[str]) -> None:
        """Store this node's new or changed entries and forget ended ones."""

    async def entries(self) -> list[Entry]:
        """Every node's entries."""

    async def get(self, session_id: str) -> Entry | None:
        """One entry by session id."""

    async def reap(self) -> list[Entry]:
        """Take the entries of dead nodes (each entry is handed to one caller only)."""

    async def leave(self) -> None:
        """Forget this node and its entries (it stops)."""


def _stamped(node_id: str, entries: dict[str, Entry]) -> dict[str, str]:
    return {key: json.dumps({**value, "node": node_id}) for key, value in entries.items()}


@dataclass
class MemoryBackend:
    """What in-memory registries share (one per process, or one per test)."""

    nodes: dict[str, float] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)
    reaped: set[str] = field(default_factory=set)


class MemoryRegistry(SessionRegistry):
    """The registry in this process's memory (one node; several in tests)."""

    def __init__(
        self, node_id: str, dead_after: float, backend: MemoryBackend | None = None
    ) -> None:
        self.node_id = node_id
        self.dead_after = dead_after
        self.backend = backend or MemoryBackend()

    async def heartbeat(self) -> Beat:
        """Say this node is alive (see ``SessionRegistry``)."""
        backend = self.backend
        known = self.node_id in backend.nodes
        backend.nodes[self.node_id] = time.monotonic()
        if self.node_id in backend.reaped:
            backend.reaped.discard(self.node_id)
            return "reaped"
        return "ok" if known else "absent"

    async def write(self, put: dict[str, Entry], drop: list[str]) -> None:
        """Store new or changed entries, forget ended ones."""
        for key in drop:
            self.backend.sessions.pop(key, None)
        self.backend.sessions.update(_stamped(self.node_id, put))

    async def entries(self) -> list[Entry]:
        """Every node's entries."""
        return [json.loads(value) for value in self.backend.sessions.values()]

    async def get(self, session_id: str) -> Entry | None:
        """One entry by session id."""
        value = self.backend.sessions.get(session_id)
        return None if value is None else dict(json.loads(value))

    async def reap(self) -> list[Entry]:
        """Take the entries of dead nodes."""
        backend = self.backend
        cutoff = time.monotonic() - self.dead_after
        dead = {node for node, beat in backend.nodes.items() if beat < cutoff}
        for node in dead:
            del backend.nodes[node]
            backend.reaped.add(node)
        taken: list[Entry] = []
        for key, value in list(backend.sessions.items()):
            entry = json.loads(value)
            if entry.get("node") in dead or entry.get("node") not in backend.nodes:
                del backend.sessions[key]
                taken.append(entry)
        return taken

    async def leave(self) -> None:
        """Forget this node and its entries."""
        backend = self.backend
        backend.nodes.pop(self.node_id, None)
        for key, value in list(backend.sessions.items()):
            if json.loads(value).get("node") == self.node_id:
                del backend.sessions[key]


# KEYS: nodes, sessions; ARGV: dead after (ms), reaped key prefix, its ttl (s).
# Answers the entries taken: those of dead nodes and of nodes no longer known.
REAP = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. (ms - tonumber(ARGV[1])))
for _, node in ipairs(dead) do
  redis.call('ZREM', KEYS[1], node)
  redis.call('SET', ARGV[2] .. node, '1', 'EX', tonumber(ARGV[3]))
end
local taken = {}
local all = redis.call('HGETALL', KEYS[2])
for i = 1, #all, 2 do
  local ok, entry = pcall(cjson.decode, all[i + 1])
  local node = ok and type(entry) == 'table' and entry['node'] or nil
  if type(node) ~= 'string' or not redis.call('ZSCORE', KEYS[1], node) then
    redis.call('HDEL', KEYS[2], all[i])
    table.insert(taken, all[i + 1])
  end
end
return taken
"""

# KEYS: nodes, sessions; ARGV: node.
LEAVE = """
redis.call('ZREM', KEYS[1], ARGV[1])
local all = redis.call('HGETALL', KEYS[2])
for i = 1, #all, 2 do
  local ok, entry = pcall(cjson.decode, all[i + 1])
  if ok and type(entry) == 'table' and entry['node'] == ARGV[1] then
    redis.call('HDEL', KEYS[2], all[i])
  end
end
return 0
"""
# KEYS: nodes, reaped:<node>; ARGV: node. Answers "ok", "absent" or "reaped".
HEARTBEAT = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local known = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[1], ms, ARGV[1])
if redis.call('DEL', KEYS[2]) == 1 then return 'reaped' end
if known then return 'ok' end
return 'absent'
"""


class RedisRegistry(SessionRegistry):
    """The registry in the Redis the nodes share."""

    def __init__(self, client: Redis, node_id: str, dead_after: float) -> None:
        self.node_id = node_id
        self.dead_after = dead_after
        self._client = client
        self._heartbeat = client.register_script(HEARTBEAT)
        self._reap = client.register_script(REAP)
        self._leave = client.register_script(LEAVE)

    async def heartbeat(self) -> Beat:
        """Say this node is alive (see ``SessionRegistry``)."""
        with reaching():
            answer = await self._heartbeat(
                keys=[NODES_KEY, REAPED_PREFIX + self.node_id], args=[self.node_id]
            )
        text = answer.decode() if isinstance(answer, bytes) else str(answer)
        return "reaped" if text == "reaped" else "ok" if text == "ok" else "absent"

    async def write(self, put: dict[str, Entry], drop: list[str]) -> None:
        """Store new or changed entries, forget ended ones."""
        if not put and not drop:
            return
        with reaching():
            async with self._client.pipeline(transaction=True) as pipe:
                if drop:
                    pipe.hdel(SESSIONS_KEY, *drop)
                if put:
                    pipe.hset(SESSIONS_KEY, mapping=_stamped(self.node_id, put))  # type: ignore[arg-type]
                await pipe.execute()

    async def entries(self) -> list[Entry]:
        """Every node's entries."""
        with reaching():
            values = await self._client.hvals(SESSIONS_KEY)  # type: ignore[misc]
        return [json.loads(value) for value in values]

    async def get(self, session_id: str) -> Entry | None:
        """One entry by session id."""
        with reaching():
            value = await self._client.hget(SESSIONS_KEY, session_id)  # type: ignore[misc]
        return None if value is None else dict(json.loads(value))

    async def reap(self) -> list[Entry]:
        """Take the entries of dead nodes."""
        with reaching():
            taken = await self._reap(
                keys=[NODES_KEY, SESSIONS_KEY],
                args=[int(self.dead_after * 1000), REAPED_PREFIX, REAPED_TTL_SECONDS],
            )
        return [json.loads(value) for value in taken]

    async def leave(self) -> None:
        """Forget this node and its entries."""
        with reaching():
            await self._leave(keys=[NODES_KEY, SESSIONS_KEY], args=[self.node_id])
