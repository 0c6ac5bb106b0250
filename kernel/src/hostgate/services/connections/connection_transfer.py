"""Export and import of connections and groups as JSON.

The document::

    {"format": "hostgate-connections", "version": 1, "exportedAt": "...",
     "groups": [{"id", "name", "parentId", "sortOrder", "owner"}],
     "connections": [{"id", "name", "protocol", "host", "port", "username", "groupId",
                      "tags", "shared", "skipCertValidation", "sortOrder", "extraConfig",
                      "owner", "jumpHostId", "approvalRequired", "moderation", "actions"}],
     "secrets": {...}}                      # only when exported with secrets

``secrets`` is never plaintext: it is AES-256-GCM under a key derived from a
passphrase with scrypt, holding ``{connectionId: {password, privateKey, extra}}``.
Gatwy's export (``{version, exportedAt, groups, connections}`` without tags or
secrets) is a subset of this document and imports as it is.

``jumpHostId`` names another connection of the document (linked to its new copy) or
one already stored (kept when the importing caller may use it as a jump host).
``approvalRequired``, ``moderation`` (``none``/``required``) and ``actions`` (every
per-action switch) are the guard rails of ``PUT /connections/:id``; a document
without them (an older export, Gatwy's) imports with the defaults.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from sqlmodel import col, select

from ... import rights
from ...db.models.connections import Connection, ConnectionGroup
from ...db.models.identity import User
from ...errors import ApiError, InvalidInput, PermissionDenied, Unprocessable
from ...timefmt import iso, utcnow
from .connection_groups import owned_group
from .connection_input import check_name, check_sort_order, parse_input
from .jump_hosts import MAX_HOPS

if TYPE_CHECKING:
    from ...db.engine import Database
    from ...descriptors import ProtocolSpec
    from ...security.secretbox import SecretBox
    from ..audit.audit import AuditLog
    from ..identity.identity import Caller
    from .connections import Connections

FORMAT = "hostgate-connections"
VERSION = 1
AAD = b"hostgate-connections-export-v1"
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**15, 8, 1
MIN_PASSPHRASE = 8
MAX_ITEMS = 10_000
CONNECTION_KEYS = (
    "name", "protocol", "host", "port", "username", "tags", "shared",
    "skipCertValidation", "sortOrder", "extraConfig", "approvalRequired", "moderation",
    "actions",
)  # fmt: skip


def _derive(passphrase: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    if len(passphrase) < MIN_PASSPHRASE:
        raise InvalidInput(f"the passphrase must be at least {MIN_PASSPHRASE} characters")
    return Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(passphrase.encode())


def seal_secrets(secrets: Mapping[str, Any], passphrase: str) -> dict[str, Any]:
    """Encrypt the secrets block under a passphrase-derived key."""
    salt, nonce = os.urandom(16), os.urandom(12)
    key = _derive(passphrase, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    data = AESGCM(key).encrypt(nonce, json.dumps(secrets).encode(), AAD)
    b64 = base64.b64encode
    return {
        "cipher": "AES-256-GCM",
        "kdf": {"name": "scrypt", "n": SCRYPT_N, "r": SCRYPT_R, "p": SCRYPT_P,
                "salt": b64(salt).decode()},
        "nonce": b64(nonce).decode(),
        "ciphertext": b64(data).decode(),
    }  # fmt: skip


def open_secrets(block: Any, passphrase: str) -> dict[str, Any]:
    """Decrypt a secrets block; Unprocessable (422) on a wrong passphrase."""
    try:
        kdf = block["kdf"]
        n, r, p = int(kdf["n"]), int(kdf["r"]), int(kdf["p"])
        salt = base64.b64decode(kdf["salt"])
        nonce = base64.b64decode(block["nonce"])
        data = base64.b64decode(block["ciphertext"])
    except (KeyError, TypeError, ValueError):
        raise InvalidInput("the secrets block of this export is malformed") from None
    if not (2**10 <= n <= 2**20 and 1 <= r <= 32 and 1 <= p <= 16):
        raise InvalidInput("the secrets block asks for unreasonable key-derivation parameters")
    try:
        plain = AESGCM(_derive(passphrase, salt, n, r, p)).decrypt(nonce, data, AAD)
    except InvalidTag:
        raise Unprocessable("wrong passphrase, or the export was altered") from None
    opened = json.loads(plain)
    if not isinstance(opened, dict):
        raise InvalidInput("the secrets block of this export is malformed")
    return opened


@dataclass
class ImportResult:
    """What an import created (and, with ``skip_invalid``, what it left out)."""

    group_ids: list[str] = field(default_factory=list)
    connection_ids: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    secrets_imported: bool = False
    planned: list[Connection] = field(default_factory=list)
    """What a dry run would create."""


class ConnectionTransfer:
    """Export and import for the CLI and the ``/connections/export|import`` routes."""

    def __init__(
        self,
        connections: Connections,
        *,
        db: Database,
        secrets: SecretBox,
        audit: AuditLog,
        protocols: Mapping[str, ProtocolSpec],
    ) -> None:
        self.connections = connections
        self.db = db
        self.secrets = secrets
        self.audit = audit
        self.protocols = protocols

    async def export(
        self, *, owner_id: str | None = None, passphrase: str | None = None
    ) -> dict[str, Any]:
        """The export document (one owner's, or everyone's); secrets only with a passphrase."""
        async with self.db.session() as session:
            users = {u.id: u.username for u in (await session.exec(select(User))).all()}
            group_query = select(ConnectionGroup)
            connection_query = select(Connection)
            if owner_id is not None:
                group_query = group_query.where(ConnectionGroup.owner_id == owner_id)
                connection_query = connection_query.where(Connection.owner_id == owner_id)
            groups = (await session.exec(group_query)).all()
            connections = (await session.exec(connection_query)).all()
        document: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "exportedAt": iso(utcnow()),
            "groups": [
                {"id": g.id, "name": g.name, "parentId": g.parent_id, "sortOrder": g.sort_order,
                 "owner": users.get(g.owner_id, "")}
                for g in sorted(groups, key=lambda g: (g.owner_id, g.sort_order, g.name))
            ],
            "connections": [],
        }  # fmt: skip
        connections_doc: list[dict[str, Any]] = document["connections"]
        secrets: dict[str, Any] = {}
        box = self.secrets
        for c in sorted(connections, key=lambda c: (c.owner_id, c.sort_order, c.name)):
            connections_doc.append(
                {"id": c.id, "name": c.name, "protocol": c.protocol, "host": c.host,
                 "port": c.port, "username": c.username, "groupId": c.group_id,
                 "tags": list(c.tags or []), "shared": c.shared,
                 "skipCertValidation": c.skip_cert_validation, "sortOrder": c.sort_order,
                 "extraConfig": dict(c.extra_config or {}), "owner": users.get(c.owner_id, ""),
                 "jumpHostId": c.jump_host_id, "approvalRequired": c.approval_required,
                 "moderation": c.moderation, "actions": rights.connection_actions(c.actions)}
            )  # fmt: skip
            if passphrase is not None:
                entry = {
                    "password": box.open_optional(c.password),
                    "privateKey": box.open_optional(c.private_key),
                    "extra": json.loads(box.open(c.extra_secrets)) if c.extra_secrets else {},
                }
                if entry["password"] or entry["privateKey"] or entry["extra"]:
                    secrets[c.id] = entry
        if passphrase is not None:
            document["secrets"] = seal_secrets(secrets, passphrase)
        return document

    async def import_(
        self,
        document: Any,
        *,
        owner_id: str | None = None,
        caller: Caller | None = None,
        passphrase: str | None = None,
        skip_invalid: bool = False,
        ignore_secrets: bool = False,
        plain_secrets: Mapping[str, Mapping[str, Any]] | None = None,
        group_id: str | None = None,
        dry_run: bool = False,
    ) -> ImportResult:
        """Check the whole document, then create everything in one transaction.

        ``owner_id`` puts everything under one user; otherwise each item's ``owner``
        username must exist. New ids are issued. Invalid items fail the import
        (nothing changes) unless ``skip_invalid``. ``plain_secrets`` gives credentials
        by item id without a sealed block (an importer that read them itself, e.g. the
        key files beside an ssh_config); ``group_id`` puts connections without a group
        of the document into that (existing) group; ``dry_run`` checks and stops.
        """
        if not isinstance(document, Mapping):
            raise InvalidInput("the import must be a JSON object")
        fmt = document.get("format", FORMAT)
        if fmt != FORMAT or document.get("version", VERSION) != VERSION:
            raise InvalidInput(f"not a {FORMAT} version {VERSION} document")
        groups_in = document.get("groups") or []
        connections_in = document.get("connections") or []
        if not isinstance(groups_in, list) or not isinstance(connections_in, list):
            raise InvalidInput("groups and connections must be arrays")
        if len(groups_in) + len(connections_in) > MAX_ITEMS:
            raise InvalidInput(f"at most {MAX_ITEMS} items per import")
        secrets: dict[str, Any] = {}
        result = ImportResult()
        if document.get("secrets") is not None and not ignore_secrets:
            if passphrase is None:
                raise InvalidInput(
                    "this export holds encrypted secrets: give its passphrase, "
                    "or import without secrets"
                )
            secrets = open_secrets(document["secrets"], passphrase)
            result.secrets_imported = True
        if plain_secrets:
            secrets = {**secrets, **plain_secrets}
            result.secrets_imported = True

        async with self.db.session() as session:
            users = {u.username: u.id for u in (await session.exec(select(User))).all()}
            if group_id is not None:
                if owner_id is None:
                    raise InvalidInput("a target group needs one owner for everything")
                await owned_group(session, owner_id, group_id)
        problems: list[str] = []

        def owner_of(item: Mapping[str, Any], what: str) -> str | None:
            if owner_id is not None:
                return owner_id
            name = item.get("owner")
            if isinstance(name, str) and name in users:
                return users[name]
            problems.append(f"{what}: owner {name!r} is not a user here (choose an owner)")
            return None

        new_groups: dict[str, ConnectionGroup] = {}
        parents: dict[str, Any] = {}
        for index, item in enumerate(groups_in):
            what = f"groups[{index}]"
            try:
                if not isinstance(item, Mapping):
                    raise InvalidInput("must be an object")
                owner = owner_of(item, what)
                if owner is None:
                    continue
                group = ConnectionGroup(owner_id=owner, name=check_name(item.get("name")))
                if item.get("sortOrder") is not None:
                    group.sort_order = check_sort_order(item["sortOrder"])
                old_id = str(item.get("id") or group.id)
                new_groups[old_id] = group
                parents[old_id] = item.get("parentId")
            except InvalidInput as exc:
                problems.append(f"{what}: {exc.message}")
        for old_id, group in new_groups.items():
            parent = new_groups.get(str(parents[old_id])) if parents[old_id] else None
            if parent is not None and parent.owner_id == group.owner_id:
                group.parent_id = parent.id
        self._break_cycles(list(new_groups.values()))

        new_connections: list[Connection] = []
        by_old_id: dict[str, Connection] = {}
        jumps: dict[str, tuple[str, str]] = {}  # new connection id -> (jump id as given, what)
        for index, item in enumerate(connections_in):
            what = f"connections[{index}]"
            try:
                if not isinstance(item, Mapping):
                    raise InvalidInput("must be an object")
                owner = owner_of(item, what)
                if owner is None:
                    continue
                connection = self._connection_from(item, owner, new_groups, secrets, caller)
                if connection.group_id is None and group_id is not None:
                    connection.group_id = group_id
                new_connections.append(connection)
                by_old_id[str(item.get("id") or connection.id)] = connection
                if item.get("jumpHostId"):
                    jumps[connection.id] = (str(item["jumpHostId"]), what)
            except (InvalidInput, PermissionDenied) as exc:
                label = item.get("name") if isinstance(item, Mapping) else None
                problems.append(f"{what}{f' ({label})' if label else ''}: {exc.message}")
        links, refused = await self._jump_links(new_connections, by_old_id, jumps, caller, problems)
        # a connection whose jump host is refused (or left out) is left out too: it must
        # not quietly go direct
        names = {c.id: c.name for c in new_connections}
        while refused:
            new_connections = [c for c in new_connections if c.id not in refused]
            for gone in refused:
                links.pop(gone, None)
            refused = {c for c, jump in links.items() if jump in names and jump not in
                       {n.id for n in new_connections}}  # fmt: skip
            problems.extend(f"{names[c]}: its jump host is left out" for c in refused)
        if problems and not skip_invalid:
            shown = "; ".join(problems[:10])
            more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
            raise InvalidInput(f"nothing imported: {shown}{more}")
        result.skipped = problems
        if dry_run:
            for connection in new_connections:
                connection.jump_host_id = links.get(connection.id)
            result.connection_ids = [c.id for c in new_connections]
            result.planned = new_connections
            return result
        async with self.audit.atomic() as batch:
            for group in self._parents_first(list(new_groups.values())):
                batch.session.add(group)
                await batch.session.flush()
            for connection in new_connections:
                batch.session.add(connection)
            if links:
                await batch.session.flush()  # every row exists before one names another
                for connection in new_connections:
                    if connection.id in links:
                        connection.jump_host_id = links[connection.id]
                        batch.session.add(connection)
            result.group_ids = [g.id for g in new_groups.values()]
            result.connection_ids = [c.id for c in new_connections]
            batch.record(
                "connections.imported",
                actor=caller,
                username=None if caller else "(cli)",
                details={
                    "groupsCreated": len(result.group_ids),
                    "connectionsCreated": len(result.connection_ids),
                    "skipped": len(result.skipped),
                    "withCredentials": result.secrets_imported,
                },
            )
        return result

    def _connection_from(
        self,
        item: Mapping[str, Any],
        owner: str,
        groups: Mapping[str, ConnectionGroup],
        secrets: Mapping[str, Any],
        caller: Caller | None,
    ) -> Connection:
        payload: dict[str, Any] = {k: item[k] for k in CONNECTION_KEYS if k in item}
        if isinstance(payload.get("shared"), int) and not isinstance(payload["shared"], bool):
            payload["shared"] = bool(payload["shared"])  # Gatwy exports 0/1
        for key in ("skipCertValidation",):
            if isinstance(payload.get(key), int) and not isinstance(payload[key], bool):
                payload[key] = bool(payload[key])
        if payload.get("username") is None:
            payload.pop("username", None)
        unknown = sorted(
            k
            for k in item
            if k not in CONNECTION_KEYS and k not in ("id", "groupId", "owner", "jumpHostId")
        )
        if unknown:
            raise InvalidInput(f"unknown field(s): {', '.join(unknown)}")
        stored = secrets.get(str(item.get("id")), {}) if item.get("id") else {}
        if isinstance(stored, Mapping):
            if stored.get("password"):
                payload["password"] = stored["password"]
            if stored.get("privateKey"):
                payload["privateKey"] = stored["privateKey"]
            extra_secrets = stored.get("extra") or {}
            if extra_secrets:
                payload["extraConfig"] = {**(payload.get("extraConfig") or {}), **extra_secrets}
        parsed = parse_input(payload, self.protocols)
        if (
            parsed.columns.get("shared")
            and caller is not None
            and not caller.can("connections.share")
        ):
            raise PermissionDenied("shared connections need connections.share")
        connection = Connection(owner_id=owner, name="", protocol="", host="", port=0)
        self.connections.apply_input(connection, parsed)
        group = groups.get(str(item.get("groupId"))) if item.get("groupId") else None
        connection.group_id = group.id if group is not None and group.owner_id == owner else None
        return connection

    async def _jump_links(
        self,
        connections: Sequence[Connection],
        by_old_id: Mapping[str, Connection],
        jumps: Mapping[str, tuple[str, str]],
        caller: Caller | None,
        problems: list[str],
    ) -> tuple[dict[str, str], set[str]]:
        """New connection id -> jump host id, and the new connections refused.

        A jump host is a connection of the document (its new id) or a stored one the
        caller may use; loops and bad hops become problems.
        """
        links: dict[str, str] = {}
        refused: set[str] = set()
        new_ids = {c.id for c in connections}
        by_id = {c.id: c for c in connections}
        for connection in connections:
            if connection.id not in jumps:
                continue
            given, what = jumps[connection.id]
            label = f"{what} ({connection.name})"
            spec = self.protocols.get(connection.protocol)
            if spec is None or not spec.jump_hosts:
                problems.append(f"{label}: {connection.protocol} connections take no jump host")
                refused.add(connection.id)
                continue
            jump = by_old_id.get(given)
            if jump is not None:
                if not self.connections.jumps.can_tunnel(jump):
                    problems.append(f"{label}: the jump host {jump.name!r} is not SSH")
                    refused.add(connection.id)
                    continue
                links[connection.id] = jump.id
                continue
            try:
                if caller is None:
                    async with self.db.session() as session:
                        stored = await session.get(Connection, given)
                    if stored is None or not self.connections.jumps.can_tunnel(stored):
                        raise InvalidInput("the jump host is not a stored SSH connection")
                else:
                    await self.connections.jumps.chain(
                        Connection(
                            id="(import)",
                            owner_id="",
                            name="",
                            protocol="",
                            host="",
                            port=0,
                            jump_host_id=given,
                        ),
                        caller,
                    )
            except ApiError as exc:
                problems.append(f"{label}: {exc.message}")
                refused.add(connection.id)
                continue
            links[connection.id] = given
        # loops and chains too long among the new links
        for start in links:
            seen = {start}
            hop: str | None = links.get(start)
            depth = 0
            while hop is not None and hop in new_ids:
                depth += 1
                if hop in seen or depth > MAX_HOPS:
                    problems.append(
                        f"{by_id[start].name}: the jump hosts loop or pass {MAX_HOPS} hops"
                    )
                    refused.add(start)
                    break
                seen.add(hop)
                hop = links.get(hop)
        return links, refused

    async def created(self, connection_ids: Sequence[str]) -> list[Connection]:
        """Connections just imported, in the import's order."""
        async with self.db.session() as session:
            rows = await session.exec(
                select(Connection).where(col(Connection.id).in_(list(connection_ids)))
            )
            found = {c.id: c for c in rows.all()}
        return [found[i] for i in connection_ids if i in found]

    @staticmethod
    def _break_cycles(groups: Sequence[ConnectionGroup]) -> None:
        by_id = {g.id: g for g in groups}
        for group in groups:
            seen = {group.id}
            parent = by_id.get(group.parent_id or "")
            while parent is not None:
                if parent.id in seen:
                    group.parent_id = None
                    break
                seen.add(parent.id)
                parent = by_id.get(parent.parent_id or "")

    @staticmethod
    def _parents_first(groups: Sequence[ConnectionGroup]) -> list[ConnectionGroup]:
        ordered: list[ConnectionGroup] = []
        placed: set[str] = set()
        pending = list(groups)
        while pending:
            ready = [g for g in pending if not g.parent_id or g.parent_id in placed]
            if not ready:  # unreachable after _break_cycles; keep the loop finite
                ready = pending
            for group in ready:
                ordered.append(group)
                placed.add(group.id)
            pending = [g for g in pending if g.id not in placed]
        return ordered
