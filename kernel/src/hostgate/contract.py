"""The typed contract between the kernel and packs: what a pack may use of the kernel.

``KernelAPI`` is the kernel object every hook, factory and ``current_kernel()``
hands a pack; each attribute is a small ``typing.Protocol`` naming only what a
pack may call. The kernel's ``Kernel`` class satisfies it (mypy checks that where
``current_kernel()`` returns it). This module imports no kernel service, so
services, the WebSocket layer, hook specs and descriptors can all depend on it.
"""

from __future__ import annotations

import builtins
from collections.abc import (
    Awaitable,
    Callable,
    Collection,
    Hashable,
    Iterable,
    Mapping,
    MutableMapping,
    Sequence,
)
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, NotRequired, Protocol, TypeVar

# typing_extensions' TypedDict: pydantic reads it on Python 3.11 (SessionRecord is an API shape)
from typing_extensions import TypedDict, Unpack

from .closereasons import CloseReason
from .timefmt import iso

if TYPE_CHECKING:
    import ssl

    import httpx
    from pydantic import BaseModel
    from sqlmodel.ext.asyncio.session import AsyncSession

    from .errors import NotAuthenticated
    from .principals import Caller, ClientInfo, LoginOutcome, SignedIn

T = TypeVar("T")

SECRET_MASK = "\u2022" * 8
"""What a GET shows in place of a stored secret (eight bullets); sent back, it keeps the secret."""


@dataclass(frozen=True)
class AuditEvent:
    """One audit entry as handed to the ``track_event`` hook and rendered by the API."""

    id: str
    event_type: str
    user_id: str | None
    username: str | None
    display_name: str | None
    target: str
    details: Mapping[str, Any]
    ip_address: str
    timestamp: datetime
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The spec's audit entry shape."""
        return {
            "id": self.id,
            "userId": self.user_id or "",
            "username": self.username or "",
            "displayName": self.display_name or "",
            "eventType": self.event_type,
            "target": self.target,
            "details": dict(self.details),
            "ipAddress": self.ip_address,
            "timestamp": iso(self.timestamp),
        }


@dataclass(frozen=True)
class NotificationMessage:
    """A rendered notification, the same for every channel."""

    subject: str
    text: str
    event: Mapping[str, Any]
    recipients: tuple[str, ...] = ()
    rule_name: str = ""


ChannelSend = Callable[["KernelAPI", Mapping[str, Any], NotificationMessage], Awaitable[None]]


@dataclass(frozen=True)
class ChannelSpec:
    """A notification channel: its config model, which fields are secret, and ``send``.

    ``send`` raises any exception to report a failed delivery; its message is logged.
    """

    type: str
    config_model: builtins.type[BaseModel]
    send: ChannelSend
    secret_fields: tuple[str, ...] = ()
    title: str = ""


class Account(Protocol):
    """A user account as a login method sees it (read-only)."""

    @property
    def id(self) -> str:
        """The account's id (the ``userId`` of the API)."""

    @property
    def username(self) -> str:
        """The login name."""

    @property
    def display_name(self) -> str:
        """The name shown in the UI (may be empty)."""

    @property
    def email(self) -> str:
        """The e-mail address (may be empty)."""

    @property
    def role_id(self) -> str:
        """The id of the account's role."""

    @property
    def locked_until(self) -> datetime | None:
        """When a lock after failed logins ends (None: not locked)."""

    @property
    def auth_provider(self) -> str:
        """The login method that created the account: ``local``, ``ldap``, ``oidc``..."""


@dataclass(frozen=True)
class StoredCredential:
    """One credential a login pack keeps for a user (a snapshot, not a live row)."""

    id: str
    user_id: str
    kind: str
    name: str
    credential_id: str
    data: Mapping[str, Any]
    sign_count: int
    created_at: datetime
    last_used_at: datetime | None


class NewCredential(TypedDict):
    """A credential to add: the keyword arguments of ``kernel.credentials.add``.

    ``credential_id`` is the id the authenticator chose (unique per ``kind``);
    ``data`` what the pack needs to verify it later (a public key...);
    ``sign_count`` the authenticator's counter, 0 when it keeps none.
    """

    user_id: str
    kind: str
    name: str
    credential_id: str
    data: Mapping[str, Any]
    sign_count: NotRequired[int]


class DuplicateCredential(Exception):
    """The credential id is already registered (to this user or another)."""


class ConfigAPI(Protocol):
    """``kernel.config``: the start-up configuration a pack may read."""

    def plugin(self, name: str) -> Mapping[str, Any]:
        """Options for one pack from the TOML file's ``[plugins.<name>]`` table."""


class SettingsAPI(Protocol):
    """``kernel.settings``: instance settings (the spec's and every pack's)."""

    def get(self, key: str) -> Any:
        """The current value of a setting (secrets decrypted); KeyError for an unknown key."""

    async def change_in(
        self, batch: AuditBatchAPI, changes: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Validate and store ``changes`` in ``batch``; ``(before, after)`` as displayed.

        ``InvalidInput`` (400) for an unknown key or a bad value, before anything is
        written. The values are served (on every node) once the block has committed;
        the caller records its own audit entry in the same batch.
        """


class SecretsAPI(Protocol):
    """``kernel.secrets``: AES-256-GCM under the instance key."""

    def seal(self, plaintext: str | bytes) -> str:
        """Encrypt text or bytes into an envelope string."""

    def open(self, envelope: str) -> str:
        """Decrypt an envelope to text."""


class AuditFields(TypedDict, total=False):
    """What an audit entry names besides its type: the keyword arguments of ``record``.

    ``actor`` (the caller) fills the user and the IP address unless they are given
    explicitly, e.g. for a failed login where there is no caller yet. ``target`` is
    what the event is about (a username, ``host:port``...); ``details`` a JSON
    object (secrets in it are masked).
    """

    actor: Caller | None
    target: str
    details: Mapping[str, Any] | None
    ip_address: str | None
    user_id: str | None
    username: str | None
    display_name: str | None


class AuditBatchAPI(Protocol):
    """What ``async with kernel.audit.atomic() as batch`` gives: one commit for rows and entries."""

    @property
    def session(self) -> AsyncSession:
        """The open database session, for the pack's own tables."""

    def record(self, event_type: str, **fields: Unpack[AuditFields]) -> object:
        """Add one audit entry, stored by the block's commit."""

    def on_commit(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` once the block has committed."""


class AuditAPI(Protocol):
    """``kernel.audit``: the tamper-evident audit log."""

    async def record(self, event_type: str, **fields: Unpack[AuditFields]) -> AuditEvent:
        """Store one event (a fact, not a change) and notify subscribers."""

    def atomic(self) -> AbstractAsyncContextManager[AuditBatchAPI]:
        """A session whose changes and audit entries commit together."""


class DatabaseAPI(Protocol):
    """``kernel.db``: sessions for the pack's own tables (never the kernel's)."""

    def session(self) -> AbstractAsyncContextManager[AsyncSession]:
        """A session; commit explicitly, rolled back if the block raises."""

    @property
    def dialect(self) -> str:
        """The database engine's name: ``sqlite`` or ``postgresql`` (for engine-specific SQL)."""


class ReadCacheAPI(Protocol):
    """``kernel.readcache``: values kept until anyone commits to the database."""

    async def get(self, key: Hashable, load: Callable[[], Awaitable[T]]) -> T:
        """The cached value of ``key``, or ``await load()``."""


class LoginsAPI(Protocol):
    """``kernel.logins``: what every login method shares (limits, lockout, the session)."""

    async def limit_ip(self, client: ClientInfo) -> None:
        """Count a login attempt from the client's IP; RateLimited (429) past the limit.

        With several nodes the count is shared through Redis; while Redis is down this
        raises the 503 ``shared_state_unavailable`` instead of letting the attempt in.
        """

    def invalid_credentials(self) -> NotAuthenticated:
        """The one 401 every failed login answers with."""

    async def check_not_locked(
        self, user: Account | None, client: ClientInfo, *, username: str | None = None
    ) -> None:
        """Raise 429 ``account_locked`` when the account (or unknown username) is locked."""

    async def record_failure(
        self,
        user: Account | None,
        username: str,
        client: ClientInfo,
        *,
        reason: str,
        provider: str = "local",
    ) -> bool:
        """Count a failed login (audited); True when this failure locked the account."""

    async def complete_login(
        self,
        user: Account,
        client: ClientInfo,
        *,
        method: str,
        details: dict[str, Any] | None = None,
    ) -> SignedIn:
        """Reset failures, issue the session, audit ``auth.login``; who signed in with what."""

    async def find_user(self, username: str, *, provider: str | None = "local") -> Account | None:
        """A user by username (case-insensitive); ``provider`` None matches any."""

    async def find_external(self, provider: str, provider_id: str) -> Account | None:
        """The user linked to an external identity."""

    async def get_user(self, user_id: str) -> Account | None:
        """A user by id (None when there is no such user)."""

    async def provision_external(
        self,
        provider: str,
        provider_id: str,
        username: str,
        display_name: str,
        email: str,
        role_name: str | None = None,
    ) -> Account:
        """The local user for an external identity, created on first login."""

    async def after_first_factor(
        self,
        user: Account,
        client: ClientInfo,
        *,
        method: str,
        details: dict[str, Any] | None = None,
        device: str | None = None,
    ) -> LoginOutcome:
        """A login method's first factor checked out: a session, or the second step due.

        Call it instead of ``complete_login`` once the credential is verified (a
        directory bind, an SSO callback): the same decision as the local password
        login. ``challenge`` (an ``mfaToken``) when the account holds TOTP, or holds a
        pack's step in a role that requires two-step verification; otherwise
        ``signed_in``. ``device``: the trusted-device cookie, which skips the step.
        403 ``account_suspended`` for a suspended account. Answer with ``login_response``.
        """

    async def second_factors(self, user: Account) -> list[str]:
        """Every second sign-in step ``user`` holds: ``totp`` when TOTP is on, then the packs'."""

    async def begin_second_step(
        self, mfa_token: str, client: ClientInfo, *, method: str, attempt: bool = True
    ) -> Account:
        """The user of a pending sign-in's ``mfaToken``, for an attempt at step ``method``.

        401 ``invalid_mfa_token`` when the token is unknown, expired, used, or did not
        offer ``method``; counts one attempt (5 per 5 minutes per user, then 429); 429
        ``account_locked`` while the account is locked. The same state TOTP uses.
        ``attempt=False`` counts nothing (preparing the step: a passkey challenge).
        """

    async def second_step_failed(
        self, user: Account, client: ClientInfo, *, method: str, reason: str
    ) -> None:
        """Audit a wrong answer to the second step (``auth.login_failed``); raise a 401 after."""

    async def finish_second_step(
        self,
        mfa_token: str,
        user: Account,
        client: ClientInfo,
        *,
        method: str,
        details: dict[str, Any] | None = None,
    ) -> SignedIn:
        """A right answer: the token is used up and the session issued.

        Answer with ``signed_in_response``; ``auth.login`` records ``mfa: true`` and
        ``secondFactor``.
        """


class CredentialsAPI(Protocol):
    """``kernel.credentials``: credentials login packs keep for users (passkeys, ...)."""

    async def for_user(self, user_id: str, kind: str) -> list[StoredCredential]:
        """A user's credentials of one kind, oldest first."""

    async def count(self, user_id: str, kind: str) -> int:
        """How many credentials of one kind a user has."""

    async def get(self, id: str, *, user_id: str, kind: str) -> StoredCredential | None:
        """One of a user's credentials by its hostgate id."""

    async def find(self, kind: str, credential_id: str) -> StoredCredential | None:
        """The credential of ``kind`` with this authenticator-chosen id."""

    async def add(
        self, batch: AuditBatchAPI, **credential: Unpack[NewCredential]
    ) -> StoredCredential:
        """Add a credential in ``batch``; DuplicateCredential when the id is known."""

    async def rename(self, batch: AuditBatchAPI, credential: StoredCredential, name: str) -> None:
        """Give a credential a new name in ``batch``."""

    async def delete(self, batch: AuditBatchAPI, credential: StoredCredential) -> None:
        """Remove a credential in ``batch``."""

    async def record_use(self, credential: StoredCredential, sign_count: int) -> bool:
        """Store a new sign counter unless someone used the credential meanwhile."""

    async def owner(self, credential: StoredCredential) -> Account | None:
        """The account a credential belongs to."""


class LiveSessionsAPI(Protocol):
    """``kernel.live``: every open terminal, desktop and file session."""

    def count(self, *, user_id: str | None = None, kinds: tuple[str, ...] = ()) -> int:
        """How many sessions are open (of a user, of some kinds)."""

    async def close_where(self, reason: str, *, reason_code: CloseReason, **match: Any) -> int:
        """Close every session whose fields equal ``match``; how many were closed.

        ``reason`` is the text the client reads, ``reason_code`` the stable code of the
        socket's ``error`` frame.
        """

    def access_changed(self) -> None:
        """Something about access changed: every node re-checks its open sessions.

        Each session's connection and jump hosts are checked again (permissions,
        shares, ``grant_connection_access``); those no longer allowed close.
        """


class StoredConnection(Protocol):
    """A stored connection as a pack reads it (never its secrets)."""

    @property
    def id(self) -> str:
        """The connection's id (the ``connectionId`` of the API)."""

    @property
    def name(self) -> str:
        """Its name."""

    @property
    def protocol(self) -> str:
        """Its protocol (``ssh``, ``rdp``...)."""

    @property
    def owner_id(self) -> str:
        """The id of the user who owns it."""

    @property
    def approval_required(self) -> bool:
        """True when others use it only while a pack grants it (``grant_connection_access``)."""


class ConnectionsAPI(Protocol):
    """``kernel.connections``: stored connections, as far as a pack may read them."""

    async def get(self, connection_id: str) -> StoredConnection | None:
        """A connection by id, whoever may see it (None when there is none)."""

    async def visible(self, caller: Caller, connection_id: str) -> StoredConnection:
        """A connection the caller owns or that is shared with them; else ``NotFound``."""


class SealedValuesAPI(Protocol):
    """``kernel.sealed_values``: small secrets a pack keeps in the database, sealed.

    Stored beside the kernel's own (the token-signing key), so they are in backups,
    re-sealed by ``hostgate keys rotate`` and the same on every node.
    """

    async def get_or_create(self, name: str, make: Callable[[], Awaitable[str]]) -> str:
        """The value stored under ``name`` (prefixed with the pack's name), else ``make``'s.

        The first caller stores ``await make()``; nodes that start together all get the one
        stored value. ``name`` is at most 90 characters.
        """


class SharedValuesAPI(Protocol):
    """``kernel.shared``: short-lived values every node sees (a pending approval...).

    In this node's memory, or in the Redis the nodes share: a value put on one node is
    read and taken on any. Names are the pack's own (start them with the pack's name),
    at most 200 printable characters; values at most 64 KiB of text; lifetimes at
    most a day. While the shared Redis is down each call raises the 503
    ``shared_state_unavailable``. Never for secrets that must survive a restart.
    """

    async def put(self, name: str, value: str, *, ttl: float) -> None:
        """Store ``value`` under ``name`` for ``ttl`` seconds, replacing any value."""

    async def get(self, name: str) -> str | None:
        """The value, or None when there is none (never put, taken or expired)."""

    async def take(self, name: str) -> str | None:
        """The value, removed at once: of callers racing for it, exactly one gets it."""


class DoorTerminal(Protocol):
    """A terminal session opened by ``kernel.front_door.open_terminal``."""

    @property
    def id(self) -> str:
        """The session's id (the ``sessionId`` of history, recordings and audit)."""

    @property
    def end_reason(self) -> str:
        """Why the session ended, once ``read()`` returned ``b""`` (empty before)."""

    @property
    def exit_status(self) -> int | None:
        """The remote command's or shell's exit status once ended, when the server said."""

    async def read(self) -> bytes:
        """The next output bytes; ``b""`` once the session ended (never raises)."""

    async def write(self, data: bytes) -> None:
        """Input for the remote side (keystrokes, a command's stdin)."""

    async def resize(self, cols: int, rows: int) -> None:
        """A window-size change."""

    async def write_eof(self) -> None:
        """The client's input ended (a no-op when the protocol cannot say so)."""

    async def close(self) -> None:
        """The client went away: end the session (history, recording, audit)."""


class DoorChannel(Protocol):
    """A raw byte channel opened by ``kernel.front_door.open_channel``: a file session.

    The bytes pass unchanged both ways (SFTP packets, the scp protocol, rsync's and
    git's); the door that parses them reports what happened with ``file_event``, which
    goes to the channel's file-transfer session as the browser's file operations do.
    """

    @property
    def id(self) -> str:
        """The file session's id (``fileSessionId`` of its audit entries)."""

    @property
    def end_reason(self) -> str:
        """Why the gateway ended the channel (an administrator, revoked access), else empty."""

    @property
    def exit_status(self) -> int | None:
        """The remote command's exit status once ``read()`` returned ``b""``, when said."""

    @property
    def bytes_in(self) -> int:
        """Bytes written to the server so far (the client's uploads and requests)."""

    @property
    def bytes_out(self) -> int:
        """Bytes read from the server so far."""

    async def read(self) -> bytes:
        """The server's next bytes; ``b""`` once the channel ended (never raises)."""

    async def write(self, data: bytes) -> None:
        """Bytes for the server."""

    async def write_eof(self) -> None:
        """The client's input ended."""

    async def file_event(
        self, action: str, path: str, *, size: int | None = None, detail: str = ""
    ) -> None:
        """Record one file event (after the server said it succeeded).

        ``action`` is one of the file history's (``upload``, ``download``, ``mkdir``,
        ``delete``, ``rename``, ``chmod``, ``browse``, ``copy``); ``size`` (bytes)
        becomes the detail (``4.2 MiB``) the browser's uploads and downloads show,
        ``detail`` is used as it is otherwise. Paths longer than 4096 characters are cut.
        """

    async def close(self) -> None:
        """End the channel (idempotent): ``connection.session_ended`` with its bytes."""

    @property
    def denied(self) -> frozenset[str]:
        """Per-action rights the user may not use on this connection (``upload``...).

        A door that parses the channel's protocol (SFTP) refuses those operations itself
        and calls ``refuse`` for each.
        """

    async def refuse(self, action: str, detail: str = "") -> None:
        """Audit one refused action (``session.action_denied``)."""


class DoorStream(Protocol):
    """A TCP stream opened by ``kernel.front_door.open_forward`` (``ssh -L``)."""

    @property
    def end_reason(self) -> str:
        """Why the gateway ended the stream (revoked access...), else empty."""

    @property
    def bytes_in(self) -> int:
        """Bytes sent to the destination so far."""

    @property
    def bytes_out(self) -> int:
        """Bytes received from the destination so far."""

    async def read(self) -> bytes:
        """The destination's next bytes; ``b""`` once it closed (never raises)."""

    async def write(self, data: bytes) -> None:
        """Bytes for the destination."""

    async def write_eof(self) -> None:
        """The client will send no more."""

    async def close(self) -> None:
        """End the stream (idempotent): ``connection.port_forward`` with its bytes."""


@dataclass(frozen=True)
class DoorTarget:
    """A connection a door may open for a caller, as ``kernel.front_door`` names it.

    No credentials: what a menu or a client configuration shows.
    """

    id: str
    name: str
    protocol: str
    host: str
    port: int
    owned: bool
    """The caller owns it (else it is shared with them)."""
    shell: bool
    """Its protocol offers a shell through a door."""


class FrontDoorAPI(Protocol):
    """``kernel.front_door``: what a pack that lets clients in by another door uses.

    The SSH front door (``hostgate-sshd``) signs users in with the shared login
    service and opens terminal sessions exactly as the browser's socket does: the
    same permission, access-request, session-cap, host-key and recording rules.
    """

    async def sign_in(
        self,
        user: Account,
        client: ClientInfo,
        *,
        method: str,
        details: dict[str, Any] | None = None,
    ) -> Caller:
        """Complete a login (``auth.login``, a login session) and return its caller."""

    async def sign_in_password(
        self,
        username: str,
        password: str,
        client: ClientInfo,
        *,
        details: dict[str, Any] | None = None,
    ) -> Caller | str:
        """The web's password step: the caller, or an MFA token when TOTP is on.

        A directory account's password is checked by its login pack
        (``LoginMethod.check_password``, e.g. LDAP), a name no account has by the first
        enabled such method, else locally. Rate limit, lockout, failure count and audit
        are the web sign-in's own; a refusal raises its ``ApiError`` (401, 429
        ``account_locked``, 502 when the directory is down...).
        """

    async def sign_in_totp(
        self,
        mfa_token: str,
        code: str,
        client: ClientInfo,
        *,
        details: dict[str, Any] | None = None,
    ) -> Caller:
        """The web's TOTP step for the token ``sign_in_password`` returned."""

    async def sign_out(self, caller: Caller) -> None:
        """End the login session ``sign_in`` made (the client disconnected)."""

    async def open_terminal(
        self,
        caller: Caller,
        connection: str,
        size: tuple[int, int] | None,
        *,
        command: str | None = None,
        details: Mapping[str, Any] | None = None,
        agent_path: str | None = None,
        notice: Callable[[str], None] | None = None,
    ) -> DoorTerminal:
        """Open a shell (or run ``command``) on a connection named by id or name.

        ``size`` is the PTY's ``(cols, rows)``; None asks a command for no PTY. Refusals
        raise ``ApiError`` (``NotFound`` for an unknown or hidden connection,
        ``PermissionDenied``...) or
        ``SessionClosed`` (caps, the server refused, host key changed); their message
        is meant for the user. ``details`` go into ``connection.session_started``.
        ``agent_path``: a UNIX socket of the client's forwarded ssh-agent, offered to
        the server's session (``ConnectionTarget.agent_forward_path``); the door decides
        whether the client may forward its agent at all. ``notice`` is called with a
        line for the user while the session opens (a ``command`` held by an ``approve``
        command rule says at once that it waits for an approver, and how long).
        """

    async def open_channel(
        self,
        caller: Caller,
        connection: str,
        *,
        subsystem: str | None = None,
        command: str | None = None,
        details: Mapping[str, Any] | None = None,
        actions: Collection[str] = (),
    ) -> DoorChannel:
        """Open a raw channel to a subsystem (``sftp``) or a command (``scp -t dir``).

        ``actions`` are the per-action rights the command needs as a whole (``upload``
        for ``scp -t``, ``download`` for ``scp -f``...): one the user may not do is
        refused (``hostgate.rights.ActionDenied``, 403 ``action_denied``, audited as
        ``session.action_denied``) before anything is opened.

        Exactly one of ``subsystem`` and ``command``. The same access checks as
        ``open_terminal`` (permission, access request, network policy, host key, jump
        hosts); the channel is a file-transfer session (``connection.session_started``
        with ``details`` and ``fileSessionId``), listed in ``kernel.live`` (revoked access
        or an administrator ends it), not a terminal recording. Refusals raise
        ``ApiError`` with a message for the user (``InvalidInput`` when the connection's
        protocol offers no such channel).
        """

    async def open_forward(
        self,
        caller: Caller,
        connection: str,
        host: str,
        port: int,
        *,
        details: Mapping[str, Any] | None = None,
    ) -> DoorStream:
        """Open a TCP stream to ``host:port`` from the connection's server (``ssh -L``).

        Only where the connection allows it (its ``allowPortForwarding`` field, off by
        default: ``PermissionDenied`` code ``port_forwarding_off`` otherwise), after the
        access checks of ``open_terminal``; the destination passes the network policy as
        a host beyond a jump host does. The stream is in ``kernel.live`` (kind
        ``forward``); closing it writes ``connection.port_forward`` (destination, bytes
        each way, duration, ``details``).
        """

    def announce(self, door: str, port: int) -> None:
        """A door pack says it listens on ``port`` of this gateway (``0``: it stopped).

        The SSH front door announces itself as ``"ssh"``; an exporter (ssh_config) then
        writes configurations that go through it.
        """

    @property
    def doors(self) -> Mapping[str, int]:
        """The doors announced on this node, by name, with their ports."""

    async def find_target(self, caller: Caller, connection: str) -> DoorTarget:
        """The connection named by id or exact name that the caller sees.

        The same resolution ``open_terminal`` uses (an owned connection wins a shared
        one of the same name); ``NotFound`` for an unknown or hidden one, ``Conflict``
        when the name is ambiguous. It opens nothing and checks no access request.
        """

    async def targets(self, caller: Caller) -> list[DoorTarget]:
        """The connections the caller owns or that are shared with them, by name."""


@dataclass(frozen=True)
class ConnectionSummary:
    """A stored connection without its credentials: what an exporter or importer shows."""

    id: str
    """For a dry-run import, a provisional id (what ``jump_host_id`` of the others names)."""
    name: str
    protocol: str
    host: str
    port: int
    username: str
    tags: tuple[str, ...]
    jump_host_id: str | None
    private_key: bool
    """A private key is stored (or would be) for it."""
    tunnels: bool
    """Its protocol can serve as a jump host (SSH)."""


class ConnectionTransferAPI(Protocol):
    """``kernel.connection_transfer``: what a pack reading or writing connections uses.

    An importer turns its format into the kernel's own import document (format
    ``hostgate-connections``, as ``POST /connections/import`` takes) and hands it over
    here: the kernel checks all of it and creates everything in one transaction.
    ``owner`` is the caller, or a user name (the CLI); an unknown name is ``NotFound``.
    """

    async def visible(self, owner: Caller | str) -> list[ConnectionSummary]:
        """The connections the owner owns or that are shared with them."""

    async def import_document(
        self,
        owner: Caller | str,
        document: Mapping[str, Any],
        *,
        plain_secrets: Mapping[str, Mapping[str, Any]] | None = None,
        group_id: str | None = None,
        dry_run: bool = False,
    ) -> list[ConnectionSummary]:
        """Create the document's connections for the owner (all or none), in its order.

        ``plain_secrets`` are credentials by item id (``password``, ``privateKey``)
        the importer read itself; ``group_id`` an existing group for connections the
        document puts in none; ``dry_run`` checks and answers what would be created.
        Refusals raise ``ApiError`` (``InvalidInput`` naming the item...).
        """


class HttpResponse(Protocol):
    """What ``kernel.outbound.request`` returns."""

    @property
    def status(self) -> int:
        """The HTTP status code."""

    @property
    def headers(self) -> Mapping[str, str]:
        """The response headers."""

    @property
    def body(self) -> bytes:
        """The first 64 KiB of the body."""

    @property
    def text(self) -> str:
        """The body as text (invalid bytes replaced)."""

    def json(self) -> Any:
        """The body parsed as JSON, or None when it is not JSON."""


class OutboundAPI(Protocol):
    """``kernel.outbound``: the one way a pack reaches an HTTP service."""

    async def request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        purpose: str = "webhook",
    ) -> HttpResponse:
        """One request to an address the network policy allows; Remote* errors on failure."""

    async def check(self, host: str, port: int, *, purpose: str) -> str:
        """Resolve ``host`` under the network policy; the address to connect to."""

    def transport(
        self, *, purpose: str, verify: ssl.SSLContext | bool = True
    ) -> httpx.AsyncBaseTransport:
        """An httpx transport for a pack's own client (e.g. an OAuth library's).

        Every request it sends, to whatever URL, is checked by the network policy
        and pinned to the checked address; give the client ``trust_env=False`` so
        proxy variables cannot route around it.
        """


class NotificationsAPI(Protocol):
    """``kernel.notifications``: kept for channel packs written before ``kernel.outbound``.

    The rules engine and delivery log are the ``hostgate-notifications`` pack.
    """

    @property
    def outbound(self) -> OutboundAPI:
        """Deprecated alias of ``kernel.outbound`` (a ``DeprecationWarning`` on each use)."""


class UserEventsAPI(Protocol):
    """``kernel.events``: live nudges to the browser app's open pages.

    A nudge carries no data: every ``/ws/events`` socket of ``users``, and of every
    user whose role holds ``permission``, on every node, gets ``{"type": "changed",
    "topic": topic}`` and the page asks the API again (which decides what it may see).
    Delivery is at most once and may be late; a page also fetches when it opens.
    """

    def notify(
        self, topic: str, *, users: Iterable[str] = (), permission: str | None = None
    ) -> None:
        """Tell ``users`` and the holders of ``permission`` that ``topic`` changed."""


@dataclass(frozen=True)
class RoleSummary:
    """A role as ``kernel.directory`` lists it."""

    id: str
    name: str


class DirectoryAPI(Protocol):
    """``kernel.directory``: the users and roles a feature pack may name (read-only)."""

    async def users(self) -> list[Account]:
        """Every user account, by login name (``Account.role_id`` names its role)."""

    async def roles(self) -> list[RoleSummary]:
        """Every role, by name."""


BusHandler = Callable[[dict[str, Any]], Awaitable[None]]


class BusAPI(Protocol):
    """``kernel.cluster.bus``: messages to the other nodes (through Redis).

    A node never hears its own messages; a single gateway sends nothing. At most
    once and maybe late: a node that missed one must catch up on its own. Start a
    pack's topics with the pack's name.
    """

    def subscribe(self, topic: str, handler: BusHandler) -> None:
        """Call ``handler`` with every message another node publishes on ``topic``.

        Call it from the ``startup`` hook (or later); with Redis the subscription
        is in place a moment after the call, not at its return.
        """

    async def publish(self, topic: str, message: dict[str, Any]) -> None:
        """Send a JSON object to the other nodes; 503 when Redis cannot take it."""


class LeaseAPI(Protocol):
    """``kernel.cluster.lease``: held by one node at a time, for once-only work."""

    def held(self) -> bool:
        """True while this node holds the lease (always on a single node)."""

    def on_acquired(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Call ``hook`` whenever this node takes the lease (also at start on one node)."""


class ClaimsAPI(Protocol):
    """``kernel.cluster.claims``: short claims on one piece of work, one node at a time."""

    async def claim(self, name: str, seconds: float) -> bool:
        """Claim ``name`` for ``seconds``; False when another holder has it."""

    async def release(self, name: str) -> None:
        """Give a claim back before it expires."""


class ClusterAPI(Protocol):
    """``kernel.cluster``: what a pack doing background work on several nodes uses."""

    @property
    def bus(self) -> BusAPI:
        """Messages between the nodes."""

    @property
    def lease(self) -> LeaseAPI:
        """The once-only lease (retries, digests, retention run where it is held)."""

    @property
    def claims(self) -> ClaimsAPI:
        """Claims on single pieces of work."""

    @property
    def several_nodes(self) -> bool:
        """True when nodes share state through Redis; False for a single gateway."""


class MetricsAPI(Protocol):
    """``kernel.metrics``: the figures a pack reports to ``/metrics``."""

    def delivery(self, channel: str, outcome: str) -> None:
        """A notification delivery attempt ended ``sent`` or ``failed``."""


class SessionRecord(TypedDict):
    """A terminal or RDP session."""

    id: str
    userId: str | None
    protocol: str
    startedAt: str
    endedAt: str | None
    hasRecording: bool
    fileSize: int | None
    connectionName: str | None
    username: str | None
    connectionId: str | None
    recordingState: str | None
    recordingComplete: bool | None
    """Whether the recording covers the whole session: true once ``complete``, false
    while it is written or when it was cut short (``stopped``, ``damaged``), null when
    the session was not recorded or its file was purged (a hostgate choice)."""
    via: str
    """How the client came in: ``""`` the browser app, ``"ssh"`` the SSH front door."""


@dataclass(frozen=True)
class SessionText:
    """A piece of a session's text, as the ``session_text`` hook hands it to packs.

    ``kind`` is ``command`` (a command-log line; never what was typed at a password
    prompt) or ``output`` (terminal output as plain text, only while a pack's
    ``wants_session_output`` says yes). ``offset_ms``: milliseconds since the session
    started, when the text's first character appeared; ``marks``: (character index,
    milliseconds) pairs saying when later parts of an output text appeared.
    """

    session_id: str
    kind: Literal["command", "output"]
    offset_ms: int
    text: str
    marks: tuple[tuple[int, int], ...] = ()


class SessionListFilter(Protocol):
    """The filters of ``GET /sessions`` as ``kernel.session_history.filter_from`` reads them."""

    @property
    def user_id(self) -> str | None:
        """``userId``: one user's sessions only."""

    @property
    def connection_id(self) -> str | None:
        """``connectionId``: one connection's sessions only."""


class SessionHistoryAPI(Protocol):
    """``kernel.session_history``: the session list, for a pack that lists sessions its way.

    A pack that keeps rows per session (the ``recsearch`` pack's index) joins them to
    ``table`` under ``conditions`` and shows each session as ``GET /sessions`` does.
    """

    @property
    def table(self) -> Any:
        """The ``sessions`` table, a SQLAlchemy ``Table`` (``id``, ``user_id``...)."""

    def filter_from(self, args: Mapping[str, str]) -> SessionListFilter:
        """The list's filters from query arguments (``SessionQuery``); InvalidInput when bad."""

    def sees_all(self, caller: Caller) -> bool:
        """True when ``caller`` may see every user's sessions (``sessions.view_any``)."""

    def conditions(self, caller: Caller, flt: SessionListFilter) -> list[Any]:
        """WHERE clauses on ``table``: the filters, and only what ``caller`` may see."""

    async def records(self, session_ids: Sequence[str]) -> dict[str, SessionRecord]:
        """The sessions that exist among ``session_ids``, as the session list shows them."""


class KernelAPI(Protocol):
    """The kernel as a pack sees it: handed to hooks and factories, and ``current_kernel()``."""

    @property
    def config(self) -> ConfigAPI:
        """Start-up configuration (``config.plugin(name)`` for the pack's own options)."""

    @property
    def settings(self) -> SettingsAPI:
        """Instance settings."""

    @property
    def secrets(self) -> SecretsAPI:
        """Encryption under the instance key."""

    @property
    def audit(self) -> AuditAPI:
        """The audit log."""

    @property
    def db(self) -> DatabaseAPI:
        """Database sessions for the pack's own tables."""

    @property
    def readcache(self) -> ReadCacheAPI:
        """A cache of reads, dropped on every commit."""

    @property
    def logins(self) -> LoginsAPI:
        """What login methods share."""

    @property
    def credentials(self) -> CredentialsAPI:
        """The credential store for login packs."""

    @property
    def live(self) -> LiveSessionsAPI:
        """Open sessions."""

    @property
    def outbound(self) -> OutboundAPI:
        """Outbound HTTP (and address checks) under the target network policy."""

    @property
    def notifications(self) -> NotificationsAPI:
        """What channel packs use (``notifications.outbound``: deprecated, use ``outbound``)."""

    @property
    def connections(self) -> ConnectionsAPI:
        """Stored connections (read-only)."""

    @property
    def events(self) -> UserEventsAPI:
        """Live nudges to the browser app's open pages (``/ws/events``)."""

    @property
    def sealed_values(self) -> SealedValuesAPI:
        """Small sealed secrets a pack keeps in the database (host keys...)."""

    @property
    def connection_transfer(self) -> ConnectionTransferAPI:
        """Connections read and created in bulk by an importer or exporter pack."""

    @property
    def shared(self) -> SharedValuesAPI:
        """Short-lived values every node sees (memory, or the shared Redis)."""

    @property
    def front_door(self) -> FrontDoorAPI:
        """Sign-in and terminal sessions for a pack that is a door of its own (sshd)."""

    @property
    def serving(self) -> bool:
        """True in a process that serves (``hostgate serve``); False in a CLI command's."""

    @property
    def directory(self) -> DirectoryAPI:
        """The users and roles (read-only)."""

    @property
    def cluster(self) -> ClusterAPI:
        """The bus, the once-only lease and work claims shared by the nodes."""

    @property
    def metrics(self) -> MetricsAPI:
        """Figures for ``/metrics``."""

    @property
    def session_history(self) -> SessionHistoryAPI:
        """The session list: its table, filters and records (read-only)."""

    @property
    def channels(self) -> Mapping[str, ChannelSpec]:
        """The notification channels the installed packs register, by type."""

    @property
    def state(self) -> MutableMapping[str, Any]:
        """A dict for packs' own in-memory state (key it by the pack's name)."""
