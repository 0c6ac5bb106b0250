"""``kernel.connection_transfer``: bulk reading and creating of connections for packs.

An importer pack (ssh_config) builds the kernel's own import document and an
exporter pack reads credential-free summaries; the checks, the single transaction
and the audit stay the kernel's (``ConnectionTransfer``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...contract import ConnectionSummary
from ...errors import NotFound
from ...principals import Caller, ClientInfo

if TYPE_CHECKING:
    from ...db.models.connections import Connection
    from ..identity.accounts import Accounts
    from ..identity.identity import Identity
    from .connections import Connections


class TransferPort:
    """What ``ConnectionTransferAPI`` promises, on the kernel's services."""

    def __init__(self, connections: Connections, accounts: Accounts, identity: Identity) -> None:
        self.connections = connections
        self.accounts = accounts
        self.identity = identity

    async def _caller(self, owner: Caller | str) -> Caller:
        if isinstance(owner, Caller):
            return owner
        user = await self.accounts.user_by_name(owner)
        caller = (
            None
            if user is None
            else await self.identity.caller_for_user(str(user.id), None, ClientInfo())
        )
        if caller is None:
            raise NotFound(f"no user {owner!r}")
        return caller

    def _summary(self, row: Connection) -> ConnectionSummary:
        return ConnectionSummary(
            id=row.id,
            name=row.name,
            protocol=row.protocol,
            host=row.host,
            port=row.port,
            username=row.username or "",
            tags=tuple(row.tags or ()),
            jump_host_id=row.jump_host_id,
            private_key=row.private_key is not None,
            tunnels=self.connections.jumps.can_tunnel(row),
        )

    async def visible(self, owner: Caller | str) -> list[ConnectionSummary]:
        """The owner's connections and those shared with them."""
        listing = await self.connections.listing(await self._caller(owner))
        rows = {row.id: row for row in [*listing.own, *listing.shared]}
        return [self._summary(row) for row in rows.values()]

    async def import_document(
        self,
        owner: Caller | str,
        document: Mapping[str, Any],
        *,
        plain_secrets: Mapping[str, Mapping[str, Any]] | None = None,
        group_id: str | None = None,
        dry_run: bool = False,
    ) -> list[ConnectionSummary]:
        """Create the document's connections (all or none); what was (or would be) made."""
        caller = await self._caller(owner)
        transfer = self.connections.transfer
        result = await transfer.import_(
            document,
            owner_id=caller.user_id,
            caller=caller,
            plain_secrets=plain_secrets,
            group_id=group_id,
            dry_run=dry_run,
        )
        if dry_run:
            return [self._summary(row) for row in result.planned]
        return [self._summary(row) for row in await transfer.created(result.connection_ids)]
