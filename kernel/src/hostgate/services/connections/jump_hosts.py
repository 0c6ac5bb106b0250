"""Jump hosts (ProxyJump): a connection may go through another stored SSH connection.

A chain is followed from the connection outwards (its jump host, that one's jump
host...) and used the other way round: the gateway connects to the outermost hop,
through it to the next, and from the last hop to the target. Each hop must be a
connection of a protocol that can tunnel (``ProtocolSpec.open_tunnel``: ssh), the
caller must be allowed to use every hop as well as the target, a chain has at most
``MAX_HOPS`` hops and never loops. Host-key trust applies to each hop as to any SSH
connection; the network policy checks the first hop's resolved address and, by name
or literal IP, every further hop and the target (which the previous hop resolves).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sqlmodel import col, select

from ...connection_rules import MAX_JUMP_HOPS as MAX_HOPS
from ...db.models.connections import Connection
from ...descriptors import ProtocolSpec
from ...errors import Conflict, InvalidInput, PermissionDenied

if TYPE_CHECKING:
    from ...db.engine import Database
    from ..identity.identity import Caller
    from .connections import Connections


class JumpHosts:
    """Checks and follows the jump-host chains of connections."""

    def __init__(
        self, connections: Connections, *, db: Database, protocols: Mapping[str, ProtocolSpec]
    ) -> None:
        self.connections = connections
        self.db = db
        self.protocols = protocols

    def can_tunnel(self, connection: Connection) -> bool:
        """True when the connection's protocol can serve as a jump host (ssh)."""
        spec = self.protocols.get(connection.protocol)
        return spec is not None and spec.open_tunnel is not None

    async def check(self, caller: Caller, connection: Connection) -> None:
        """Refuse (400/403/404) a jump host the connection about to be stored cannot use."""
        if connection.jump_host_id is None:
            return
        spec = self.protocols.get(connection.protocol)
        if spec is None or not spec.jump_hosts:
            raise InvalidInput(
                f"{connection.protocol} connections cannot go through a jump host",
                code="jump_host_unsupported",
            )
        await self.chain(connection, caller, loop_guard=connection.id)

    async def chain(
        self, connection: Connection, caller: Caller | None, *, loop_guard: str | None = None
    ) -> list[Connection]:
        """The connection's jump hosts, outermost first (empty: direct).

        With a caller, each hop must be one they may use (else 403, or 404 when they
        cannot see it). ``loop_guard`` is the id of the connection being stored.
        """
        seen = {loop_guard or connection.id}
        hops: list[Connection] = []
        hop_id = connection.jump_host_id
        while hop_id is not None:
            if hop_id in seen:
                raise InvalidInput("The jump hosts would form a loop", code="jump_host_loop")
            if len(hops) == MAX_HOPS:
                raise InvalidInput(
                    f"At most {MAX_HOPS} jump hosts in a chain", code="too_many_jump_hosts"
                )
            hop = await self._hop(caller, hop_id)
            seen.add(hop.id)
            hops.append(hop)
            hop_id = hop.jump_host_id
        hops.reverse()
        return hops

    async def _hop(self, caller: Caller | None, hop_id: str) -> Connection:
        if caller is None:
            async with self.db.session() as session:
                hop = await session.get(Connection, hop_id)
            if hop is None:
                raise InvalidInput("A jump host of this connection is gone", code="jump_host_gone")
        else:
            hop, access = await self.connections.load(caller, hop_id)
            if not access.use:
                reason = self.connections.why_unusable(caller, hop)
                raise PermissionDenied(
                    f"You may not use the jump host {hop.name!r}: {reason}",
                    code="jump_host_not_allowed",
                )
        if not self.can_tunnel(hop):
            raise InvalidInput(
                f"The jump host {hop.name!r} is a {hop.protocol} connection; "
                "jump hosts are SSH connections",
                code="jump_host_not_ssh",
            )
        return hop

    async def refuse_delete(self, caller: Caller, connection: Connection) -> None:
        """409 when other connections go through this one.

        The message names only the connections the caller may read; the others are
        counted, never named.
        """
        async with self.db.session() as session:
            rows = (
                await session.exec(
                    select(Connection)
                    .where(col(Connection.jump_host_id) == connection.id)
                    .order_by(col(Connection.name))
                )
            ).all()
            readable: list[str] = []
            hidden = 0
            for row in rows:
                if await self.connections.readable(session, caller, row):
                    readable.append(row.name)
                else:
                    hidden += 1
        if not rows:
            return
        parts: list[str] = []
        if readable:
            shown = ", ".join(repr(name) for name in readable[:5])
            more = len(readable) - 5
            parts.append(shown + (f" and {more} more" if more > 0 else ""))
        if hidden:
            parts.append(f"{hidden} connection{'s' if hidden != 1 else ''} you cannot see")
        advice = "change those first" if not hidden else "ask an administrator to change those"
        raise Conflict(
            f"{connection.name!r} is the jump host of {' and '.join(parts)}: {advice}",
            code="jump_host_in_use",
        )
