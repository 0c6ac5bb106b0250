"""``/connections``: list, create, read, update, delete, share, credentials, host keys.

Groups and re-ordering live in ``connection_groups.py``; export and import in
``connection_transfer.py``. Shapes follow SPEC §2/§4.4 and WIRE-FACTS §4; secrets
are write-only (``hasPassword``/``hasPrivateKey``/``has<Field>`` report them).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from quart import Blueprint, Response, request
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from .. import rights
from ..db.models.connections import Connection, ConnectionGroup
from ..errors import InvalidInput, PermissionDenied
from ..guards import app_kernel, authenticated, current_caller, current_request, requires
from ..kernel import Kernel
from ..openapi import Success, answers
from ..services.connections import health_checks
from ..services.connections.connection_input import input_schema
from ..services.connections.connection_shares import ShareView
from ..services.connections.connections import EDIT_ANY, Access
from ..services.connections.hostkeys import HostKeyInfo
from ..timefmt import iso
from .cachedjson import cached_json
from .fields import Integer

blueprint = Blueprint("connections", __name__)


class ConnectionBody(BaseModel):
    """Create/update body: SPEC §4.4's fields plus ``extraConfig``.

    Pack-declared fields are accepted at the top level too; the service checks them
    against the protocol's pack and refuses everything else.
    """

    model_config = ConfigDict(extra="allow", strict=True)

    name: str | None = None
    protocol: str | None = None
    host: str | None = None
    port: Integer | None = None
    username: str | None = None
    password: str | None = None
    privateKey: str | None = None  # noqa: N815 - the spec's field name
    groupId: str | None = None  # noqa: N815
    tags: list[str] | None = None
    shared: bool | None = None
    skipCertValidation: bool | None = None  # noqa: N815
    sortOrder: Integer | None = None  # noqa: N815
    extraConfig: dict[str, Any] | None = None  # noqa: N815


class ShareItem(BaseModel):
    """One share: a user (id or username) or a role (id or name)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    shareType: Literal["user", "role"]  # noqa: N815
    targetId: str = Field(min_length=1, max_length=200)  # noqa: N815


class SharesBody(BaseModel):
    """``PUT /connections/:id/shares``: the complete new list."""

    model_config = ConfigDict(extra="forbid", strict=True)

    shares: list[ShareItem] = Field(max_length=500)


class AcceptBody(BaseModel):
    """``POST /connections/:id/host-key/accept``: optionally the fingerprint the user saw."""

    model_config = ConfigDict(extra="forbid", strict=True)

    fingerprint: str | None = Field(default=None, max_length=128)


# ----- shapes -------------------------------------------------------------------------


class ListedConnection(TypedDict):
    """A connection as listed."""

    id: str
    name: str
    protocol: str
    host: str
    port: int
    username: str
    tags: list[str]
    groupId: str | None
    isShared: bool
    shared: bool
    sortOrder: int


class GroupNode(TypedDict):
    """A group with its sub-groups and connections."""

    id: str
    name: str
    parentId: str | None
    sortOrder: int
    children: list[GroupNode]
    connections: list[ListedConnection]


class ConnectionListing(TypedDict):
    """The caller's tree, ungrouped connections and connections shared with them."""

    groups: list[GroupNode]
    ungrouped: list[ListedConnection]
    sharedConnections: list[ListedConnection]
    otherConnections: NotRequired[list[ListedConnection]]


class Share(TypedDict):
    """One share."""

    shareType: Literal["user", "role"]
    targetId: str
    targetName: str | None
    createdAt: str


class ConnectionDetail(TypedDict):
    """One connection in full; secrets only as ``has*`` flags (``hasPassword``...)."""

    id: str
    name: str
    protocol: str
    host: str
    port: int
    username: str
    groupId: str | None
    tags: list[str]
    shared: bool
    isShared: bool
    ownerId: str
    skipCertValidation: bool
    recordingEnabled: bool
    sortOrder: int
    jumpHostId: str | None
    approvalRequired: bool
    moderation: str
    """``none``, or ``required``: a terminal session waits for a moderator to join."""
    actions: dict[str, bool]
    """Per-action switches: upload, download, delete, copy, paste (true: allowed)."""
    extraConfig: dict[str, Any]
    shares: list[Share]
    canEdit: bool
    canDelete: bool
    canShare: bool
    canUse: bool
    createdAt: str
    updatedAt: str
    hasPassword: bool
    hasPrivateKey: bool
    # and a has<Field> flag for each secret field of the protocol's pack


class Updated(TypedDict):
    """The connection as changed."""

    success: bool
    connection: ConnectionDetail


class Shares(TypedDict):
    """Who the connection is shared with."""

    shares: list[Share]


class SharesSet(Shares):
    """The new share list."""

    success: bool


class SessionCredentials(TypedDict):
    """What a browser client needs to log in itself (never a private key)."""

    connectionId: str
    name: str
    protocol: str
    host: str
    port: int
    username: str
    password: str | None  # only for the connection's owner (else passwordWithheld if set)
    passwordWithheld: bool
    extraConfig: dict[str, Any]
    skipCertValidation: bool


class HostKey(TypedDict):
    """A remembered or presented SSH host key (``host_key_json``)."""

    algorithm: str
    fingerprint: str
    publicKey: str
    seenAt: str


class HostKeys(TypedDict):
    """The trusted key and a changed one waiting for acceptance."""

    trusted: HostKey | None
    pending: HostKey | None


class HostKeyAccepted(TypedDict):
    """The key now trusted."""

    success: bool
    trusted: HostKey


class HostKeyScanned(TypedDict):
    """What the server presents now, compared with the remembered key."""

    state: Literal["trusted", "new", "changed"]
    presented: HostKey
    trusted: HostKey | None
    canAccept: bool


class HostKeyForgotten(TypedDict):
    """Whether keys were forgotten."""

    success: bool
    forgotten: Any


class ListQuery(BaseModel):
    """``?scope=``: ``all`` adds everyone else's connections."""

    scope: Literal["", "own", "all"] = ""


def create_schema(kernel: Kernel) -> dict[str, Any]:
    """The body ``POST /connections`` takes, from the protocols the packs declare."""
    return input_schema(kernel.protocols, creating=True)


def update_schema(kernel: Kernel) -> dict[str, Any]:
    """The body ``PUT /connections/:id`` takes."""
    return input_schema(kernel.protocols, creating=False)


def list_item(connection: Connection, *, is_shared: bool) -> dict[str, Any]:
    """A connection as listed (WIRE-FACTS §4); shared items carry ``groupId: null``."""
    return {
        "id": connection.id,
        "name": connection.name,
        "protocol": connection.protocol,
        "host": connection.host,
        "port": connection.port,
        "username": connection.username,
        "tags": list(connection.tags or []),
        "groupId": None if is_shared else connection.group_id,
        "isShared": is_shared,
        "shared": connection.shared,
        "sortOrder": connection.sort_order,
    }


def _creates_cycle(group_id: str, parent_id: str | None, parents: dict[str, str | None]) -> bool:
    seen = {group_id}
    while parent_id is not None:
        if parent_id in seen:
            return True
        seen.add(parent_id)
        parent_id = parents.get(parent_id)
    return False


def group_tree(
    groups: list[ConnectionGroup], own: list[Connection]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(groups tree, ungrouped)``: nested by ``parentId``, sorted by sortOrder then name."""
    ordered = sorted(groups, key=lambda g: (g.sort_order, g.name.casefold(), g.id))
    nodes: dict[str, dict[str, Any]] = {
        g.id: {"id": g.id, "name": g.name, "parentId": g.parent_id, "sortOrder": g.sort_order,
               "children": [], "connections": []}
        for g in ordered
    }  # fmt: skip
    parents = {g.id: g.parent_id for g in ordered}
    roots: list[dict[str, Any]] = []
    for group in ordered:
        parent = nodes.get(group.parent_id or "")
        if parent is not None and not _creates_cycle(group.id, group.parent_id, parents):
            parent["children"].append(nodes[group.id])
        else:
            nodes[group.id]["parentId"] = None
            roots.append(nodes[group.id])
    ungrouped: list[dict[str, Any]] = []
    for connection in own:
        node = nodes.get(connection.group_id or "")
        target = node["connections"] if node is not None else ungrouped
        target.append(list_item(connection, is_shared=False))
    return roots, ungrouped


def share_json(view: ShareView) -> dict[str, Any]:
    """One share."""
    return {
        "shareType": view.share_type,
        "targetId": view.target_id,
        "targetName": view.target_name,
        "createdAt": iso(view.created_at),
    }


async def detail(connection: Connection, access: Access) -> dict[str, Any]:
    """One connection in full, secrets reported only as ``has*`` flags."""
    kernel = app_kernel()
    caller = current_caller()
    shares: list[ShareView] = []
    if access.owner or caller.can(EDIT_ANY):
        shares = await kernel.connections.sharing.views(connection.id)
    return {
        "id": connection.id,
        "name": connection.name,
        "protocol": connection.protocol,
        "host": connection.host,
        "port": connection.port,
        "username": connection.username,
        "groupId": connection.group_id,
        "tags": list(connection.tags or []),
        "shared": connection.shared,
        "isShared": not access.owner,
        "ownerId": connection.owner_id,
        "skipCertValidation": connection.skip_cert_validation,
        "recordingEnabled": connection.recording_enabled,
        "sortOrder": connection.sort_order,
        "jumpHostId": connection.jump_host_id,
        "approvalRequired": connection.approval_required,
        "moderation": connection.moderation,
        "actions": rights.connection_actions(connection.actions),
        "extraConfig": kernel.connections.public_extra(connection),
        **kernel.connections.secret_flags(connection),
        "shares": [share_json(s) for s in shares],
        "canEdit": access.edit,
        "canDelete": access.delete,
        "canShare": access.share,
        "canUse": access.use,
        "createdAt": iso(connection.created_at),
        "updatedAt": iso(connection.updated_at),
    }


def _payload(data: ConnectionBody) -> dict[str, Any]:
    return data.model_dump(exclude_unset=True)


# ----- routes -------------------------------------------------------------------------


@blueprint.get("/connections")
@authenticated
@tag(["connections"])
@answers(ConnectionListing, query=ListQuery)
async def list_connections() -> Response:
    """The caller's group tree, ungrouped connections and connections shared with them.

    ``?scope=all`` (needs ``connections.edit_any`` or ``delete_any``) adds
    ``otherConnections``: everyone else's connections not shared with the caller.
    """
    current = current_request()
    # no query string (the usual listing): no arguments to parse
    scope = current.args.get("scope", "") if current.query_string else ""
    if scope not in ("", "own", "all"):
        raise InvalidInput("scope must be own or all")
    caller = current_caller()
    include_others = scope == "all"

    async def build() -> dict[str, Any]:
        listing = await app_kernel().connections.listing(caller, include_others=include_others)
        groups, ungrouped = group_tree(listing.groups, listing.own)
        body: dict[str, Any] = {
            "groups": groups,
            "ungrouped": ungrouped,
            "sharedConnections": [list_item(c, is_shared=True) for c in listing.shared],
        }
        if listing.others is not None:
            body["otherConnections"] = [list_item(c, is_shared=True) for c in listing.others]
        return body

    if include_others:
        # checked before the cache: the key holds the role, not its permissions
        app_kernel().connections.check_list_others(caller)
    return await cached_json(
        ("GET /connections", caller.user_id, caller.role_id, include_others),
        build,
    )


@blueprint.post("/connections")
@requires("connections.create")
@validate_request(ConnectionBody)
@tag(["connections"])
@answers(ConnectionDetail, status=201, errors=(404,), request=create_schema)
async def create_connection(data: ConnectionBody) -> tuple[dict[str, Any], int]:
    """Create a connection owned by the caller (201 with the connection)."""
    kernel = app_kernel()
    caller = current_caller()
    connection = await kernel.connections.create(caller, _payload(data))
    _, access = await kernel.connections.load(caller, connection.id)
    return await detail(connection, access), 201


class HealthCheckItem(BaseModel):
    """One connection to probe."""

    model_config = ConfigDict(extra="ignore", strict=True)
    id: str = Field(min_length=1, max_length=200)


class HealthCheckBody(BaseModel):
    """``{checks: [{id}]}``: the connections to probe."""

    model_config = ConfigDict(extra="forbid", strict=True)
    checks: list[HealthCheckItem] = Field(max_length=health_checks.MAX_CHECKS)


class HealthResult(TypedDict):
    """Whether one connection's target answered, and how fast."""

    id: str
    reachable: bool
    latencyMs: int | None
    # null when reachable; target_denied, no_answer or not_usable otherwise
    reason: str | None


class HealthResults(TypedDict):
    """One result per distinct id, in the order asked."""

    results: list[HealthResult]


@blueprint.post("/connections/health-check")
@authenticated
@validate_request(HealthCheckBody)
@tag(["connections"])
@answers(HealthResults, errors=(429,))
async def health_check(data: HealthCheckBody) -> dict[str, Any]:
    """Whether each connection's target answers a TCP connect (3 s), with the latency.

    Only connections the caller may use are probed, through the network policy;
    any other id answers unreachable. Rate-limited per user.
    """
    ids = [item.id for item in data.checks]
    results = await app_kernel().health_checks.check(current_caller(), ids)
    return {
        "results": [
            {
                "id": r.connection_id,
                "reachable": r.reachable,
                "latencyMs": r.latency_ms,
                "reason": r.reason,
            }
            for r in results
        ]
    }


@blueprint.get("/connections/<connection_id>")
@authenticated
@tag(["connections"])
@answers(ConnectionDetail)
async def get_connection(connection_id: str) -> dict[str, Any]:
    """One connection (owner, shared with the caller, or edit_any/delete_any)."""
    connection, access = await app_kernel().connections.load(current_caller(), connection_id)
    return await detail(connection, access)


@blueprint.put("/connections/<connection_id>")
@authenticated
@validate_request(ConnectionBody)
@tag(["connections"])
@answers(Updated, request=update_schema)
async def update_connection(connection_id: str, data: ConnectionBody) -> dict[str, Any]:
    """Change a connection. Omitted fields stay; ``""``/null clears a secret."""
    kernel = app_kernel()
    caller = current_caller()
    await kernel.connections.update(caller, connection_id, _payload(data))
    connection, access = await kernel.connections.load(caller, connection_id)
    return {"success": True, "connection": await detail(connection, access)}


@blueprint.delete("/connections/<connection_id>")
@authenticated
@tag(["connections"])
@answers(Success)
async def delete_connection(connection_id: str) -> Success:
    """Delete a connection."""
    await app_kernel().connections.delete(current_caller(), connection_id)
    return {"success": True}


@blueprint.get("/connections/<connection_id>/shares")
@authenticated
@tag(["connections"])
@answers(Shares)
async def get_shares(connection_id: str) -> dict[str, Any]:
    """Who the connection is shared with (owner or edit_any)."""
    views = await app_kernel().connections.sharing.get(current_caller(), connection_id)
    return {"shares": [share_json(v) for v in views]}


@blueprint.put("/connections/<connection_id>/shares")
@authenticated
@validate_request(SharesBody)
@tag(["connections"])
@answers(SharesSet)
async def put_shares(connection_id: str, data: SharesBody) -> dict[str, Any]:
    """Replace the share list (connections.share and ownership or edit_any)."""
    views = await app_kernel().connections.sharing.replace(
        current_caller(), connection_id, [(s.shareType, s.targetId) for s in data.shares]
    )
    return {"success": True, "shares": [share_json(v) for v in views]}


@blueprint.get("/connections/<connection_id>/session")
@authenticated
@tag(["connections"])
@answers(SessionCredentials)
async def session_credentials(connection_id: str) -> dict[str, Any]:
    """Credentials for browser clients that log in themselves (RDP); audited.

    Only for users who may use the connection; the password only for its owner;
    never a private key.
    """
    return await app_kernel().connections.session_credentials(current_caller(), connection_id)


def host_key_json(info: HostKeyInfo) -> dict[str, Any]:
    """A host key on the wire: ``{algorithm, fingerprint, publicKey, seenAt}``."""
    return {
        "algorithm": info.algorithm,
        "fingerprint": info.fingerprint,
        "publicKey": f"{info.algorithm} {info.public_key}",
        "seenAt": iso(info.seen_at),
    }


def _host_key_json(info: HostKeyInfo | None) -> dict[str, Any] | None:
    return None if info is None else host_key_json(info)


@blueprint.get("/connections/<connection_id>/host-key")
@authenticated
@tag(["connections"])
@answers(HostKeys)
async def get_host_key(connection_id: str) -> dict[str, Any]:
    """The trusted host key and a changed one waiting for acceptance, if any."""
    kernel = app_kernel()
    connection, _ = await kernel.connections.load(current_caller(), connection_id)
    keys = await kernel.connections.host_keys.view(connection.id)
    return {"trusted": _host_key_json(keys["trusted"]), "pending": _host_key_json(keys["pending"])}


async def _editable(connection_id: str) -> Connection:
    """The connection, when the caller may decide its host key for everyone (edit rights)."""
    kernel = app_kernel()
    connection, access = await kernel.connections.load(current_caller(), connection_id)
    if not access.edit:
        raise PermissionDenied(
            "Only someone who may edit this connection (its owner) can accept or forget "
            "its host key, since that decides the key for everyone who uses it; "
            "GET /connections/:id/host-key shows the key",
            code="host_key_edit_required",
        )
    return connection


@blueprint.post("/connections/<connection_id>/host-key/accept")
@authenticated
@tag(["connections"])
@answers(HostKeyAccepted, errors=(409,), request=AcceptBody)
async def accept_host_key(connection_id: str) -> dict[str, Any]:
    """Trust the pending (changed) host key; body ``{fingerprint}`` optional but advised."""
    connection = await _editable(connection_id)
    raw = await request.get_json(silent=True)
    try:
        body = AcceptBody.model_validate(raw if raw is not None else {})
    except ValidationError:
        raise InvalidInput('send {} or {"fingerprint": "SHA256:..."}') from None
    info = await app_kernel().connections.host_keys.accept(
        connection, expected=body.fingerprint, actor=current_caller()
    )
    return {"success": True, "trusted": host_key_json(info)}


@blueprint.post("/connections/<connection_id>/host-key/scan")
@authenticated
@tag(["connections"])
@answers(HostKeyScanned, errors=(400, 403, 404, 409, 502, 504))
async def scan_host_key(connection_id: str) -> dict[str, Any]:
    """Read the server's host key now (no login) and compare it with the trusted one.

    ``state`` is ``trusted`` (the remembered key), ``new`` (no key remembered yet; it
    is kept pending, not trusted) or ``changed`` (pending, as a refused connect would
    keep it). ``canAccept`` says whether the caller may accept it. For those who may use
    the connection; the target network policy applies.
    """
    kernel = app_kernel()
    caller = current_caller()
    scan = await kernel.connections.scan_host_key(caller, connection_id)
    _, access = await kernel.connections.load(caller, connection_id)
    return {
        "state": scan.state,
        "presented": host_key_json(scan.presented),
        "trusted": _host_key_json(scan.trusted),
        "canAccept": access.edit,
    }


@blueprint.delete("/connections/<connection_id>/host-key")
@authenticated
@tag(["connections"])
@answers(HostKeyForgotten)
async def forget_host_key(connection_id: str) -> HostKeyForgotten:
    """Forget the remembered keys; the next connection trusts the key it sees."""
    connection = await _editable(connection_id)
    removed = await app_kernel().connections.host_keys.forget(connection, actor=current_caller())
    return {"success": True, "forgotten": removed}
