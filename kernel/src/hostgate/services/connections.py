"""Stored connections: access rules and the resolved target adapters connect to.

(The connections issue grows this module: CRUD, groups, sharing, host-key trust,
network policy. What is here is the contract the file and terminal code use.)
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
from typing import TYPE_CHECKING, Any

from sqlmodel import or_, select

from ..adapters import ConnectionTarget
from ..db.models.connections import Connection, ConnectionShare
from ..descriptors import ProtocolSpec
from ..errors import NotFound, PermissionDenied, RemoteUnreachable
from ..permissions import use_permission

if TYPE_CHECKING:
    from ..kernel import Kernel
    from .identity import Caller


class Connections:
    """Access checks and target resolution for stored connections."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    async def visible(self, caller: Caller, connection_id: str) -> Connection:
        """A connection the caller owns or that is shared with them; else NotFound."""
        async with self.kernel.db.session() as session:
            connection = await session.get(Connection, connection_id)
            if connection is None:
                raise NotFound("Connection not found")
            if connection.owner_id == caller.user_id or connection.shared:
                return connection
            share = await session.exec(
                select(ConnectionShare).where(
                    ConnectionShare.connection_id == connection_id,
                    or_(
                        (ConnectionShare.share_type == "user")
                        & (ConnectionShare.target_id == caller.user_id),
                        (ConnectionShare.share_type == "role")
                        & (ConnectionShare.target_id == caller.role_id),
                    ),
                )
            )
            if share.first() is None:
                raise NotFound("Connection not found")
            return connection

    async def resolve_address(self, host: str, port: int) -> str:
        """Resolve a host to the one IP address the adapter must connect to."""
        try:
            return str(ipaddress.ip_address(host))
        except ValueError:
            pass
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise RemoteUnreachable(f"cannot resolve {host}: {exc.strerror}") from None
        if not infos:
            raise RemoteUnreachable(f"cannot resolve {host}")
        return str(infos[0][4][0])

    async def target_for(
        self, caller: Caller, connection_id: str, spec: ProtocolSpec
    ) -> ConnectionTarget:
        """Check the caller may use the connection with this protocol; decrypt its secrets."""
        connection = await self.visible(caller, connection_id)
        if connection.protocol not in spec.accepted_protocols():
            raise NotFound(f"Connection is not a {spec.name} connection")
        if not caller.can(use_permission(connection.protocol)):
            raise PermissionDenied(
                f"Insufficient permissions: requires {use_permission(connection.protocol)}"
            )
        return await self.target_of(connection)

    async def target_of(self, connection: Connection) -> ConnectionTarget:
        """The decrypted, resolved target of a connection (no access check)."""
        box = self.kernel.secrets
        extra: dict[str, Any] = dict(connection.extra_config or {})
        if connection.extra_secrets:
            extra.update(json.loads(box.open(connection.extra_secrets)))
        address = await self.resolve_address(connection.host, connection.port)
        return ConnectionTarget(
            connection_id=connection.id,
            protocol=connection.protocol,
            name=connection.name,
            host=connection.host,
            address=address,
            port=connection.port,
            username=connection.username or None,
            password=box.open_optional(connection.password),
            private_key=box.open_optional(connection.private_key),
            extra=extra,
            skip_cert_validation=connection.skip_cert_validation,
            check_host_key=None,
        )
