"""The front door's routes: a user's SSH keys, an admin's view of them, the host keys.

``/profile/ssh-keys`` (the caller's own), ``/users/:id/ssh-keys`` (``users.manage``),
``/sshd/host-keys`` (any signed-in user: the fingerprints to check on first
connection) and ``/sshd/revoked-keys.krl`` (``settings.manage``: the revoked keys as a KRL).
"""

from __future__ import annotations

from typing import Any

from hostgate import (
    Conflict,
    DuplicateCredential,
    KernelAPI,
    NotFound,
    Ok,
    StoredCredential,
    answers,
    authenticated,
    current_caller,
    current_kernel,
    interactive,
    iso,
    requires,
)
from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint, Response
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from .approval import APPROVAL_SECONDS, Approvals
from .keys import host_key_views, load_host_keys, load_jump_host_key, parse_user_key
from .plugin import CA_SETTING, REVOKED_SETTING
from .revocation import export_krl, parse_revocations
from .server import KEY_KIND, SEPARATOR, FrontDoorServer

blueprint = Blueprint("sshd", __name__)
MAX_KEYS_PER_USER = 50
STATE_KEY = "sshd.server"


class SshKeyView(TypedDict):
    """A registered key: never more than its public line."""

    id: str
    name: str
    algorithm: str
    fingerprint: str
    publicKey: str
    createdAt: str
    lastUsedAt: str | None


class SshKeyList(TypedDict):
    """A user's SSH keys, oldest first."""

    keys: list[SshKeyView]


class SshKeyAdded(TypedDict):
    """The key registered."""

    ok: bool
    key: SshKeyView


class GatewayHostKeys(TypedDict):
    """The gateway's host keys and where the front door listens."""

    listening: bool
    address: str
    port: int
    separator: str
    hostKeys: list[dict[str, str]]
    jumpHostKey: dict[str, str] | None
    """The key presented for every connection reached by ProxyJump (``ssh -J``)."""


class SshApproval(TypedDict):
    """An SSH sign-in waiting for its user's approval in the browser."""

    code: str
    username: str
    clientAddress: str
    keyFingerprint: str
    createdAt: str
    expiresAt: str
    lifetimeSeconds: int


class SshApprovalDecided(TypedDict):
    """The decision was handed to the waiting SSH client."""

    ok: bool
    approved: bool


class ApprovalDecision(BaseModel):
    """Approve (true) or refuse (false) the SSH sign-in."""

    model_config = ConfigDict(extra="forbid")
    approve: bool


class NewSshKey(BaseModel):
    """A public key to register (one OpenSSH line) and a name for it."""

    model_config = ConfigDict(extra="forbid")
    publicKey: str = Field(min_length=1, max_length=16384)  # noqa: N815 - wire name
    name: str = Field(default="", max_length=100)


def _view(row: StoredCredential) -> SshKeyView:
    data = row.data
    return {
        "id": row.id,
        "name": row.name,
        "algorithm": str(data.get("algorithm", "")),
        "fingerprint": row.credential_id,
        "publicKey": str(data.get("publicKey", "")),
        "createdAt": iso(row.created_at),
        "lastUsedAt": iso(row.last_used_at) if row.last_used_at else None,
    }


def _server(kernel: KernelAPI) -> FrontDoorServer | None:
    server = kernel.state.get(STATE_KEY)
    return server if isinstance(server, FrontDoorServer) else None


def _name(text: str, fallback: str) -> str:
    name = "".join(ch for ch in text if ch.isprintable()).strip()
    return name or fallback or "SSH key"


async def _remove(kernel: KernelAPI, row: StoredCredential, target: str, who: str) -> None:
    """Delete a key, audit it, and disconnect whoever is signed in with it."""
    caller = current_caller()
    async with kernel.audit.atomic() as batch:
        await kernel.credentials.delete(batch, row)
        batch.record(
            "auth.ssh_key_removed",
            actor=caller,
            target=target,
            details={"keyId": row.id, "keyName": row.name, "fingerprint": row.credential_id},
        )
    server = _server(kernel)
    if server is not None:
        server.close_key(row.credential_id, f"this SSH key was removed by {who}")


# -- the caller's own keys ------------------------------------------------------------


@blueprint.get("/profile/ssh-keys")
@authenticated
@tag(["profile"])
@answers(SshKeyList)
async def list_own_keys() -> dict[str, Any]:
    """The caller's SSH keys with fingerprint, creation and last use."""
    kernel = current_kernel()
    rows = await kernel.credentials.for_user(current_caller().user_id, KEY_KIND)
    return {"keys": [_view(row) for row in rows]}


@blueprint.post("/profile/ssh-keys")
@interactive
@validate_request(NewSshKey)
@tag(["profile"])
@answers(SshKeyAdded, errors=(400, 409))
async def add_own_key(data: NewSshKey) -> dict[str, Any]:
    """Register a public key for signing in to the SSH front door."""
    kernel = current_kernel()
    caller = current_caller()
    key = parse_user_key(data.publicKey)
    name = _name(data.name, key.comment)
    if await kernel.credentials.count(caller.user_id, KEY_KIND) >= MAX_KEYS_PER_USER:
        raise Conflict(
            f"You already have the maximum of {MAX_KEYS_PER_USER} SSH keys", code="ssh_key_limit"
        )
    try:
        async with kernel.audit.atomic() as batch:
            row = await kernel.credentials.add(
                batch,
                user_id=caller.user_id,
                kind=KEY_KIND,
                name=name,
                credential_id=key.fingerprint,
                data={"publicKey": key.line, "algorithm": key.algorithm},
            )
            batch.record(
                "auth.ssh_key_added",
                actor=caller,
                target=caller.username,
                details={"keyId": row.id, "keyName": name, "fingerprint": key.fingerprint},
            )
    except DuplicateCredential:
        raise Conflict("This SSH key is already registered", code="ssh_key_exists") from None
    return {"ok": True, "key": _view(row)}


@blueprint.delete("/profile/ssh-keys/<key_id>")
@interactive
@tag(["profile"])
@answers(Ok, errors=(404,))
async def delete_own_key(key_id: str) -> Ok:
    """Remove one of the caller's keys; connections signed in with it are closed."""
    kernel = current_kernel()
    caller = current_caller()
    row = await kernel.credentials.get(key_id, user_id=caller.user_id, kind=KEY_KIND)
    if row is None:
        raise NotFound("SSH key not found")
    await _remove(kernel, row, caller.username, "its owner")
    return {"ok": True}


# -- an admin's view --------------------------------------------------------------------


@blueprint.get("/users/<user_id>/ssh-keys")
@requires("users.manage")
@tag(["users"])
@answers(SshKeyList)
async def list_user_keys(user_id: str) -> dict[str, Any]:
    """A user's SSH keys (an unknown user has none)."""
    kernel = current_kernel()
    rows = await kernel.credentials.for_user(user_id, KEY_KIND)
    return {"keys": [_view(row) for row in rows]}


@blueprint.delete("/users/<user_id>/ssh-keys/<key_id>")
@requires("users.manage")
@tag(["users"])
@answers(Ok, errors=(404,))
async def delete_user_key(user_id: str, key_id: str) -> Ok:
    """Revoke a user's key; connections signed in with it are closed."""
    kernel = current_kernel()
    row = await kernel.credentials.get(key_id, user_id=user_id, kind=KEY_KIND)
    if row is None:
        raise NotFound("SSH key not found")
    owner = await kernel.credentials.owner(row)
    await _remove(kernel, row, owner.username if owner else user_id, "an administrator")
    return {"ok": True}


# -- the host keys ----------------------------------------------------------------------


@blueprint.get("/sshd/host-keys")
@authenticated
@tag(["sshd"])
@answers(GatewayHostKeys)
async def host_keys() -> dict[str, Any]:
    """The front door's host-key fingerprints (to check on first connection) and port."""
    kernel = current_kernel()
    server = _server(kernel)
    if server is None:
        return {
            "listening": False,
            "address": "",
            "port": 0,
            "separator": SEPARATOR,
            "hostKeys": [],
            "jumpHostKey": None,
        }
    if not server.host_keys:  # not listening: the keys it would present
        server.host_keys = await load_host_keys(kernel)
    if server.jump_key is None:
        server.jump_key = await load_jump_host_key(kernel)
    [jump] = host_key_views([server.jump_key])
    return {
        "listening": server.port > 0,
        "address": server.address,
        "port": server.port,
        "separator": SEPARATOR,
        "hostKeys": [view.to_json() for view in host_key_views(server.host_keys)],
        "jumpHostKey": jump.to_json(),
    }


# -- browser approval of an SSH sign-in -------------------------------------------------

NO_APPROVAL = "No SSH sign-in of yours is waiting under this code (it may have expired)"


@blueprint.get("/sshd/approvals/<code>")
@authenticated
@tag(["sshd"])
@answers(SshApproval, errors=(404,))
async def show_approval(code: str) -> dict[str, Any]:
    """The SSH sign-in waiting under ``code``: who asks, from where, since when.

    Only the user the client named sees it; for anyone else, and for an unknown,
    used or expired code, 404.
    """
    request = await Approvals(current_kernel()).view(code, current_caller().user_id)
    if request is None:
        raise NotFound(NO_APPROVAL, code="ssh_approval_not_found")
    return {**request.to_json(), "lifetimeSeconds": APPROVAL_SECONDS}


@blueprint.post("/sshd/approvals/<code>")
@interactive
@validate_request(ApprovalDecision)
@tag(["sshd"])
@answers(SshApprovalDecided, errors=(404,))
async def decide_approval(code: str, data: ApprovalDecision) -> dict[str, Any]:
    """Approve or refuse the SSH sign-in waiting under ``code``: once, by its user.

    Audited as ``sshd.login_approved`` or ``sshd.login_refused``; the client signs in
    (``auth.login``, method ``ssh-approval``) or is refused.
    """
    kernel = current_kernel()
    caller = current_caller()
    request = await Approvals(kernel).decide(code, caller.user_id, data.approve)
    if request is None:
        raise NotFound(NO_APPROVAL, code="ssh_approval_not_found")
    await kernel.audit.record(
        "sshd.login_approved" if data.approve else "sshd.login_refused",
        actor=caller,
        target=caller.username,
        details={
            "code": request.code,
            "clientAddress": request.client_address,
            **({"keyFingerprint": request.key_fingerprint} if request.key_fingerprint else {}),
        },
    )
    return {"ok": True, "approved": data.approve}


# -- the revoked keys as an OpenSSH KRL -------------------------------------------------


@blueprint.get("/sshd/revoked-keys.krl")
@requires("settings.manage")
@tag(["sshd"])
@answers(None, media_type="application/octet-stream", errors=(409, 503))
async def revoked_keys_krl() -> Response:
    """The revoked keys and certificates (``sshd.revoked_keys``) as an OpenSSH KRL.

    Made by ``ssh-keygen -k``; sshd reads it with ``RevokedKeys``. 409 when a ``ca:``
    line names a CA by fingerprint that is not among the trusted CA keys.
    """
    kernel = current_kernel()
    revocations = parse_revocations(str(kernel.settings.get(REVOKED_SETTING) or ""))
    krl = await export_krl(revocations, str(kernel.settings.get(CA_SETTING) or ""))
    return Response(
        krl,
        mimetype="application/octet-stream",
        headers={
            "Content-Disposition": 'attachment; filename="hostgate-revoked-keys.krl"',
            "Cache-Control": "no-store",
        },
    )
