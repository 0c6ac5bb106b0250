"""Stored connections: access rules, CRUD, sharing, and the resolved target adapters use.

Access (who sees a connection): its owner, everyone when ``shared`` is set, and
the users or roles it is shared with. Rights beyond seeing come from the
caller's role: editing and deleting need ``connections.edit_own`` /
``connections.delete_own`` on one's own connections and ``*_any`` on others';
sharing needs ``connections.share`` and ownership or ``edit_any``; using needs
``connections.use_<protocol>``. Secrets are sealed with the secret box and are
write-only.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sqlmodel import col, or_, select
from sqlmodel.ext.asyncio.session import AsyncSession

from ... import rights
from ...adapters import ConnectionTarget
from ...closereasons import CloseReason
from ...db.models.connections import Connection, ConnectionShare
from ...descriptors import ProtocolSpec
from ...errors import InvalidInput, NotFound, PermissionDenied
from ...permissions import use_permission
from ...timefmt import utcnow
from ..sessions.live_sessions import CONNECTION_DELETED
from . import hostkeys
from .connection_groups import ConnectionGroups, owned_group
from .connection_input import ParsedInput, missing_required, parse_input
from .connection_shares import ConnectionShares
from .connection_transfer import ConnectionTransfer
from .hostkeys import HostKeys
from .jump_hosts import JumpHosts

if TYPE_CHECKING:
    from ...db.engine import Database
    from ...security.secretbox import SecretBox
    from ..audit.audit import AuditLog
    from ..identity.identity import Caller
    from ..netpolicy import NetworkPolicy
    from ..sessions.live_sessions import LiveSessions
    from ..settings import Settings

EDIT_OWN, EDIT_ANY = "connections.edit_own", "connections.edit_any"
DELETE_OWN, DELETE_ANY = "connections.delete_own", "connections.delete_any"
SHARE = "connections.share"
AUDITED_COLUMNS = (
    "name", "protocol", "host", "port", "username", "group_id", "tags", "shared",
    "skip_cert_validation", "jump_host_id", "approval_required", "moderation", "actions",
)  # fmt: skip
COLUMN_NAMES = {
    "group_id": "groupId",
    "approval_required": "approvalRequired",
    "jump_host_id": "jumpHostId",
    "skip_cert_validation": "skipCertValidation",
    "sort_order": "sortOrder",
}


@dataclass(frozen=True)
class Access:
    """What one caller may do with one connection."""

    owner: bool
    visible: bool
    edit: bool
    delete: bool
    share: bool
    use: bool

    @property
    def read(self) -> bool:
        """May read its (secret-free) details."""
        return self.visible or self.edit or self.delete


@dataclass(frozen=True)
class Listing:
    """What ``GET /connections`` shows one caller."""

    groups: list[Any]
    own: list[Connection]
    shared: list[Connection]
    others: list[Connection] | None


def needs_approval(caller: Caller, connection: Connection) -> bool:
    """True when using the connection takes an approved access request for this caller."""
    owner = connection.owner_id == caller.user_id
    return connection.approval_required and not owner and not caller.can(EDIT_ANY)


def access_of(
    caller: Caller, connection: Connection, visible: bool, granted: bool = False
) -> Access:
    """The caller's rights on a connection.

    ``visible`` comes from ``is_visible``; ``granted`` says an approved access request is
    running (for connections that need one).
    """
    owner = connection.owner_id == caller.user_id
    edit = caller.can(EDIT_ANY) or (owner and caller.can(EDIT_OWN))
    approved = granted or not needs_approval(caller, connection)
    return Access(
        owner=owner,
        visible=visible,
        edit=edit,
        delete=caller.can(DELETE_ANY) or (owner and caller.can(DELETE_OWN)),
        share=caller.can(SHARE) and (owner or caller.can(EDIT_ANY)),
        use=visible and approved and caller.can(use_permission(connection.protocol)),
    )


def _sort_key(connection: Connection) -> tuple[int, str, str]:
    return (connection.sort_order, connection.name.casefold(), connection.id)


def _share_filter(user_id: str, role_id: str) -> Any:
    return or_(
        (col(ConnectionShare.share_type) == "user") & (col(ConnectionShare.target_id) == user_id),
        (col(ConnectionShare.share_type) == "role") & (col(ConnectionShare.target_id) == role_id),
    )


class Connections:
    """Stored connections and the targets adapters connect to."""

    def __init__(
        self,
        *,
        db: Database,
        secrets: SecretBox,
        audit: AuditLog,
        live: LiveSessions,
        netpolicy: NetworkPolicy,
        protocols: Mapping[str, ProtocolSpec],
        access_granted: Callable[[str, str], Awaitable[bool]],
        settings: Settings,
    ) -> None:
        self.db = db
        # asks the packs (``grant_connection_access``): may this user use this connection now?
        self.access_granted = access_granted
        self.secrets = secrets
        self.audit = audit
        self.live = live
        self.netpolicy = netpolicy
        self.protocols = protocols
        self.groups = ConnectionGroups(db=db, audit=audit)
        self.host_keys = HostKeys(db=db, audit=audit, settings=settings)
        self.transfer = ConnectionTransfer(
            self, db=db, secrets=secrets, audit=audit, protocols=protocols
        )
        self.sharing = ConnectionShares(self, db=db, audit=audit, live=live)
        self.jumps = JumpHosts(self, db=db, protocols=protocols)

    # ----- access -------------------------------------------------------------------

    async def is_visible(
        self, session: AsyncSession, user_id: str, role_id: str, connection: Connection
    ) -> bool:
        """Owner, shared with everyone, or shared with the user or their role."""
        if connection.owner_id == user_id or connection.shared:
            return True
        query = select(ConnectionShare.id).where(
            ConnectionShare.connection_id == connection.id, _share_filter(user_id, role_id)
        )
        return (await session.exec(query)).first() is not None

    async def readable(self, session: AsyncSession, caller: Caller, connection: Connection) -> bool:
        """Whether the caller may read the connection's details (``Access.read``)."""
        visible = await self.is_visible(session, caller.user_id, caller.role_id, connection)
        return access_of(caller, connection, visible).read

    @staticmethod
    def why_unusable(caller: Caller, connection: Connection) -> str:
        """Why ``Access.use`` is false for a connection the caller can read."""
        permission = use_permission(connection.protocol)
        if not caller.can(permission):
            return f"requires {permission}"
        if needs_approval(caller, connection):
            return "it needs an approved access request"
        return "it is not shared with you"

    async def get(self, connection_id: str) -> Connection | None:
        """A connection by id, whoever may see it (None when there is none)."""
        async with self.db.session() as session:
            return await session.get(Connection, connection_id)

    async def visible(self, caller: Caller, connection_id: str) -> Connection:
        """A connection the caller owns or that is shared with them; else NotFound."""
        async with self.db.session() as session:
            connection = await session.get(Connection, connection_id)
            if connection is None or not await self.is_visible(
                session, caller.user_id, caller.role_id, connection
            ):
                raise NotFound("Connection not found")
            return connection

    async def load(self, caller: Caller, connection_id: str) -> tuple[Connection, Access]:
        """A connection the caller may at least read, with their rights; else NotFound."""
        async with self.db.session() as session:
            connection = await session.get(Connection, connection_id)
            if connection is None:
                raise NotFound("Connection not found")
            visible = await self.is_visible(session, caller.user_id, caller.role_id, connection)
        granted = needs_approval(caller, connection) and await self.access_granted(
            caller.user_id, connection.id
        )
        access = access_of(caller, connection, visible, granted)
        if not access.read:
            raise NotFound("Connection not found")
        return connection, access

    # ----- reading ------------------------------------------------------------------

    def check_list_others(self, caller: Caller) -> None:
        """Listing everyone's connections needs ``edit_any`` or ``delete_any``."""
        if not (caller.can(EDIT_ANY) or caller.can(DELETE_ANY)):
            raise PermissionDenied(f"Insufficient permissions: requires {EDIT_ANY} or {DELETE_ANY}")

    async def listing(self, caller: Caller, *, include_others: bool = False) -> Listing:
        """The caller's groups and connections, and those shared with them."""
        if include_others:
            self.check_list_others(caller)
        async with self.db.session() as session:
            shared_ids = select(ConnectionShare.connection_id).where(
                _share_filter(caller.user_id, caller.role_id)
            )
            own = (
                await session.exec(select(Connection).where(Connection.owner_id == caller.user_id))
            ).all()
            shared = (
                await session.exec(
                    select(Connection).where(
                        Connection.owner_id != caller.user_id,
                        or_(
                            col(Connection.shared).is_(True),
                            col(Connection.id).in_(shared_ids),
                        ),
                    )
                )
            ).all()
            others: list[Connection] | None = None
            if include_others:
                seen = {c.id for c in shared}
                rows = await session.exec(
                    select(Connection).where(Connection.owner_id != caller.user_id)
                )
                others = sorted((c for c in rows.all() if c.id not in seen), key=_sort_key)
        groups = await self.groups.of_owner(caller.user_id)
        return Listing(
            groups=groups,
            own=sorted(own, key=_sort_key),
            shared=sorted(shared, key=_sort_key),
            others=others,
        )

    def secret_flags(self, connection: Connection) -> dict[str, bool]:
        """``hasPassword``, ``hasPrivateKey`` and ``has<Field>`` for each secret pack field."""
        flags = {
            "hasPassword": connection.password is not None,
            "hasPrivateKey": connection.private_key is not None,
        }
        spec = self.protocols.get(connection.protocol)
        stored = self._open_secrets(connection)
        for spec_field in spec.fields if spec else ():
            if spec_field.secret:
                flag = "has" + spec_field.name[:1].upper() + spec_field.name[1:]
                flags[flag] = stored.get(spec_field.name) not in (None, "")
        return flags

    def public_extra(self, connection: Connection) -> dict[str, Any]:
        """Non-secret extra fields, with the pack's defaults for unset ones."""
        spec = self.protocols.get(connection.protocol)
        extra: dict[str, Any] = {}
        for spec_field in spec.fields if spec else ():
            if not spec_field.secret and spec_field.default is not None:
                extra[spec_field.name] = spec_field.default
        extra.update(connection.extra_config or {})
        return extra

    def _open_secrets(self, connection: Connection) -> dict[str, Any]:
        if not connection.extra_secrets:
            return {}
        opened = json.loads(self.secrets.open(connection.extra_secrets))
        return opened if isinstance(opened, dict) else {}

    # ----- writing ------------------------------------------------------------------

    async def _check_group(self, session: AsyncSession, owner_id: str, parsed: ParsedInput) -> None:
        group_id = parsed.columns.get("group_id")
        if group_id is not None:
            await owned_group(session, owner_id, group_id)

    def apply_input(self, connection: Connection, parsed: ParsedInput) -> None:
        """Write checked changes onto a row (secrets sealed)."""
        box = self.secrets
        for column, value in parsed.columns.items():
            setattr(connection, column, value)
        for column, value in parsed.credentials.items():
            setattr(connection, column, box.seal_optional(value))
        # fields the protocol does not declare are dropped (e.g. after a protocol change),
        # unless the protocol's pack is not loaded: then nothing is known to be stale
        declared = parsed.declared if parsed.spec is not None else None
        extra = {
            k: v
            for k, v in (connection.extra_config or {}).items()
            if declared is None or k in declared
        }
        for name, value in parsed.extra.items():
            if value is None:
                extra.pop(name, None)
            else:
                extra[name] = value
        connection.extra_config = extra
        secrets = {
            k: v
            for k, v in self._open_secrets(connection).items()
            if declared is None or k in declared
        }
        for name, secret in parsed.secrets.items():
            if secret is None:
                secrets.pop(name, None)
            else:
                secrets[name] = secret
        connection.extra_secrets = box.seal(json.dumps(secrets)) if secrets else None
        missing = missing_required(parsed.spec, extra, secrets)
        if missing:
            raise InvalidInput(
                f"protocol {parsed.protocol} requires: {', '.join(missing)} "
                "(in extraConfig or at the top level)"
            )

    async def create(self, caller: Caller, payload: Mapping[str, Any]) -> Connection:
        """A new connection owned by the caller."""
        parsed = parse_input(payload, self.protocols)
        if parsed.columns.get("shared") and not caller.can(SHARE):
            raise PermissionDenied(f"Insufficient permissions: sharing requires {SHARE}")
        connection = Connection(owner_id=caller.user_id, name="", protocol="", host="", port=0)
        self.apply_input(connection, parsed)
        await self.jumps.check(caller, connection)
        async with self.audit.atomic() as batch:
            await self._check_group(batch.session, caller.user_id, parsed)
            batch.session.add(connection)
            batch.record(
                "connection.created",
                actor=caller,
                target=f"{connection.protocol}://{connection.host}:{connection.port}",
                details={
                    "connectionId": connection.id,
                    "name": connection.name,
                    "after": self._audited(connection),
                },
            )
        return connection

    @staticmethod
    def _audited(connection: Connection) -> dict[str, Any]:
        return {
            COLUMN_NAMES.get(column, column): getattr(connection, column)
            for column in AUDITED_COLUMNS
        }

    async def update(
        self, caller: Caller, connection_id: str, payload: Mapping[str, Any]
    ) -> Connection:
        """Change a connection; omitted fields (and secrets) stay as they are."""
        connection, access = await self.load(caller, connection_id)
        if not access.edit:
            needed = EDIT_OWN if access.owner else EDIT_ANY
            raise PermissionDenied(f"Insufficient permissions: editing requires {needed}")
        if not payload:
            raise InvalidInput("No fields to update")
        old_protocol = connection.protocol
        parsed = parse_input(payload, self.protocols, current_protocol=old_protocol)
        sharing_changes = parsed.columns.get("shared", connection.shared) != connection.shared
        if sharing_changes and not access.share:
            raise PermissionDenied(f"Insufficient permissions: sharing requires {SHARE}")
        if (
            "protocol" in parsed.columns
            and parsed.protocol != old_protocol
            and "port" not in payload
        ):
            old_spec = self.protocols.get(old_protocol)
            if parsed.spec is not None and (
                old_spec is None or connection.port == old_spec.default_port
            ):
                parsed.columns["port"] = parsed.spec.default_port
        before = self._audited(connection)
        before_target = (connection.protocol, connection.host, connection.port)
        self.apply_input(connection, parsed)
        if "jump_host_id" in parsed.columns or "protocol" in parsed.columns:
            await self.jumps.check(caller, connection)
        connection.updated_at = utcnow()
        sharing_changed = "shared" in parsed.columns and before["shared"] != connection.shared
        async with self.audit.atomic() as batch:
            session = batch.session
            await self._check_group(session, connection.owner_id, parsed)
            session.add(connection)
            after = self._audited(connection)
            details: dict[str, Any] = {
                "connectionId": connection.id,
                "name": connection.name,
                "changes": {
                    k: {"from": before[k], "to": after[k]} for k in after if before[k] != after[k]
                },
            }
            changed_credentials = sorted(
                [
                    {"password": "password", "private_key": "privateKey"}[k]
                    for k in parsed.credentials
                ]
                + list(parsed.secrets)
            )
            if changed_credentials:
                details["credentialsChanged"] = changed_credentials
            if before_target != (connection.protocol, connection.host, connection.port):
                forgotten = await hostkeys.delete_all(session, connection.id)
                if forgotten:
                    details["hostKeysForgotten"] = forgotten
            batch.record(
                "connection.updated",
                actor=caller,
                target=f"{connection.protocol}://{connection.host}:{connection.port}",
                details=details,
            )
            if sharing_changed:
                self.sharing.audit(batch, caller, connection, shared=connection.shared)
        if sharing_changed:
            await self.sharing.close_lost_access(connection)
        return connection

    async def delete(self, caller: Caller, connection_id: str) -> Connection:
        """Delete a connection (its shares and host keys go with it)."""
        connection, access = await self.load(caller, connection_id)
        if not access.delete:
            raise PermissionDenied(
                "Insufficient permissions: deleting requires "
                f"{DELETE_OWN if access.owner else DELETE_ANY}"
            )
        await self.jumps.refuse_delete(caller, connection)
        async with self.audit.atomic() as batch:
            row = await batch.session.get(Connection, connection.id)
            if row is not None:
                await batch.session.delete(row)
            batch.record(
                "connection.deleted",
                actor=caller,
                target=f"{connection.protocol}://{connection.host}:{connection.port}",
                details={"connectionId": connection.id, "name": connection.name},
            )
        await self.live.close_where(
            CONNECTION_DELETED,
            reason_code=CloseReason.CONNECTION_DELETED,
            connection_id=connection.id,
        )
        return connection

    async def reorder(self, caller: Caller, items: Sequence[tuple[str, int]]) -> int:
        """Set ``sortOrder`` of several connections; all must be editable, else none change."""
        rows: list[Connection] = []
        for connection_id, _ in items:
            connection, access = await self.load(caller, connection_id)
            if not access.edit:
                raise PermissionDenied(f"Insufficient permissions to reorder {connection.name!r}")
            rows.append(connection)
        async with self.db.session() as session:
            for connection, (_, order) in zip(rows, items, strict=True):
                connection.sort_order = order
                session.add(connection)
            await session.commit()
        return len(rows)

    # ----- using --------------------------------------------------------------------

    async def session_credentials(self, caller: Caller, connection_id: str) -> dict[str, Any]:
        """Host, port, username and (to the owner only) the password; never a private key.

        For browser clients (RDP) that log in themselves; never the password of a
        protocol whose relay logs in itself (``relay_authenticates``). Audited on
        every call.
        """
        connection = await self.visible(caller, connection_id)
        permission = use_permission(connection.protocol)
        if not caller.can(permission):
            raise PermissionDenied(f"Insufficient permissions: requires {permission}")
        await self.check_approval(caller, connection)
        spec = self.protocols.get(connection.protocol)
        handed_out = connection.owner_id == caller.user_id and not (
            spec is not None and spec.relay_authenticates
        )
        password = self.secrets.open_optional(connection.password) if handed_out else None
        await self.audit.record(
            "connection.credentials_requested",
            actor=caller,
            target=f"{connection.protocol}://{connection.host}:{connection.port}",
            details={
                "connectionId": connection.id,
                "name": connection.name,
                "credentialsReturned": password is not None,
            },
        )
        return {
            "connectionId": connection.id,
            "name": connection.name,
            "protocol": connection.protocol,
            "host": connection.host,
            "port": connection.port,
            "username": connection.username,
            "password": password,
            "passwordWithheld": connection.password is not None and not handed_out,
            "extraConfig": self.public_extra(connection),
            "skipCertValidation": connection.skip_cert_validation,
        }

    async def resolve_address(self, host: str, port: int, *, actor: Caller | None = None) -> str:
        """The one IP address the adapter must connect to, approved by the network policy."""
        return await self.netpolicy.resolve_allowed(host, port, actor=actor)

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
        await self.check_approval(caller, connection)
        hops = await self.jumps.chain(connection, caller)
        return await self.target_of(connection, actor=caller, hops=hops)

    async def approval_problem(self, caller: Caller, connection: Connection) -> str | None:
        """Why the caller may not use an approval-required connection now, or None."""
        if not needs_approval(caller, connection):
            return None
        if await self.access_granted(caller.user_id, connection.id):
            return None
        return "This connection needs an approved access request"

    async def check_approval(self, caller: Caller, connection: Connection) -> None:
        """403 ``access_approval_required`` without a running approved access request."""
        problem = await self.approval_problem(caller, connection)
        if problem is not None:
            raise PermissionDenied(problem, code="access_approval_required")

    async def scan_host_key(self, caller: Caller, connection_id: str) -> hostkeys.HostKeyScan:
        """Read the server's host key (no login) and compare it with the remembered ones.

        For callers who may use the connection; the network policy applies as for a
        session. A protocol whose pack reads no host key is a 400.
        """
        connection = await self.visible(caller, connection_id)
        spec = self.protocols.get(connection.protocol)
        if spec is None or spec.fetch_host_key is None:
            raise InvalidInput(
                f"{connection.protocol} connections have no host key to check",
                code="no_host_key",
            )
        target = await self.target_for(caller, connection_id, spec)
        algorithm, blob = await spec.fetch_host_key(target)
        return await self.host_keys.observe(connection, algorithm, blob, actor=caller)

    async def target_of(
        self,
        connection: Connection,
        *,
        actor: Caller | None = None,
        hops: Sequence[Connection] | None = None,
    ) -> ConnectionTarget:
        """The decrypted target of a connection, addresses approved by the network policy.

        No access check: callers check access first (``target_for``, which also passes
        the jump hosts it checked as ``hops``, outermost first).
        """
        if hops is None:
            hops = await self.jumps.chain(connection, None)
        if not hops:
            address = await self.resolve_address(connection.host, connection.port, actor=actor)
            return self._target(connection, address, actor)
        via: list[ConnectionTarget] = []
        for hop in hops:
            if via:
                address = await self.netpolicy.check_beyond(hop.host, hop.port, actor=actor)
            else:
                address = await self.resolve_address(hop.host, hop.port, actor=actor)
            via.append(self._target(hop, address, actor))
        address = await self.netpolicy.check_beyond(connection.host, connection.port, actor=actor)
        spec = self.protocols[hops[0].protocol]
        target = self._target(connection, address, actor)
        return replace(target, via=tuple(via), tunnel=spec.open_tunnel)

    def _target(
        self, connection: Connection, address: str, actor: Caller | None
    ) -> ConnectionTarget:
        box = self.secrets
        extra = self.public_extra(connection)
        extra.update(self._open_secrets(connection))
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
            check_host_key=self.host_keys.checker(connection, actor),
            moderated=connection.moderation == "required",
            denied=rights.denied_actions(
                connection.actions,
                actor.permissions if actor is not None else rights.ACTIONS.values(),
            ),
            on_denied=self._denial_recorder(connection, actor),
        )

    def _denial_recorder(
        self, connection: Connection, actor: Caller | None
    ) -> Callable[[str, str], Awaitable[None]]:
        """``ConnectionTarget.on_denied``: one ``session.action_denied`` entry per refusal."""
        audit = self.audit

        async def record(action: str, detail: str) -> None:
            await audit.record(
                rights.DENIED_EVENT,
                actor=actor,
                target=connection.name,
                details={
                    "action": action,
                    "connectionId": connection.id,
                    "protocol": connection.protocol,
                    "reason": rights.reason(action),
                    **({"detail": detail[:500]} if detail else {}),
                },
            )

        return record
