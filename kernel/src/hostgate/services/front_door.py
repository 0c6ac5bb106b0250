"""What a pack that is a door of its own (the SSH front door) uses of the kernel.

``FrontDoor`` signs a user in through the shared login service and opens terminal
sessions exactly as the browser's terminal socket does (same access checks, caps,
recording, command log and audit), and raw channels (SFTP, scp, rsync, git) recorded
as file-transfer sessions like the browser's file operations; ``SealedValues`` keeps
a pack's small secrets (host keys) sealed in the database beside the kernel's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from ..adapters import ConnectionTarget, Terminal, TerminalSize
from ..closereasons import CloseReason
from ..contract import DoorTarget
from ..db.models.connections import Connection
from ..db.models.settings import SystemValue
from ..errors import (
    ApiError,
    Conflict,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    PermissionDenied,
    RemoteError,
)
from ..rights import ActionDenied
from .identity.logins import check_login_name
from .netpolicy import conceal
from .sessions.attachment import Attachment
from .sessions.file_sessions import SessionRef, human_size
from .sessions.live_sessions import LiveSession
from .sessions.remote_session import Admission

if TYPE_CHECKING:
    from ..contract import Account, KernelAPI
    from ..db.engine import Database
    from ..descriptors import LoginMethod, ProtocolSpec
    from ..principals import Caller, ClientInfo, SignedIn
    from ..security.secretbox import SecretBox
    from .audit.audit import AuditLog
    from .connections.connections import Connections
    from .identity.identity import Identity
    from .identity.logins import Logins
    from .sessions.file_sessions import FileSessionLog
    from .sessions.interactive_terminal import TerminalSession
    from .sessions.live_sessions import LiveSessions
    from .sessions.session_service import TerminalSessions

log = logging.getLogger("hostgate.front_door")

PACK_PREFIX = "pack:"
MAX_NAME = 90
MAX_CONNECTION_REF = 200
MAX_COMMAND = 4096
FORWARDING_FIELD = "allowPortForwarding"
"""The connection field (``extraConfig``) that allows ``ssh -L`` through the door."""
MAX_HOST = 255
READ_SIZE = 64 * 1024
MAX_EVENT_PATH = 4096
CLOSE_SECONDS = 10.0


class SealedValues:
    """``kernel.sealed_values``: a pack's small secrets, sealed in ``system_values``."""

    def __init__(self, db: Database, secrets: SecretBox) -> None:
        self.db = db
        self.secrets = secrets

    async def get_or_create(self, name: str, make: Callable[[], Awaitable[str]]) -> str:
        """The value stored under ``name``, else ``make()``'s, stored (first writer wins)."""
        if not name or len(name) > MAX_NAME:
            raise ValueError(f"a sealed value's name has 1 to {MAX_NAME} characters")
        key = PACK_PREFIX + name
        async with self.db.session() as session:
            row = await session.get(SystemValue, key)
            if row is not None:
                return self.secrets.open(row.value)
            value = await make()
            session.add(SystemValue(name=key, value=self.secrets.seal(value)))
            try:
                await session.commit()
            except IntegrityError:  # another node stored it first: use theirs
                await session.rollback()
                row = await session.get(SystemValue, key)
                if row is None:
                    raise
                return self.secrets.open(row.value)
        return value


def joined_line(notice: str) -> bytes:
    """The line a front-door terminal prints for a notice, or none.

    Who joined or left, a moderation state (waiting for a moderator, paused), a refused
    action (a paste) and what a command rule did (blocked, held, approved, denied).
    """
    try:
        frame = json.loads(notice)
        spoken = frame.get("type") in ("moderation", "refused", "commandRule")
        said = frame.get("message") if spoken else frame.get("change")
    except (ValueError, AttributeError):
        return b""
    if not isinstance(said, str) or not said:
        return b""
    return f"\r\n[hostgate] {said}\r\n".encode()


class DoorSession:
    """A terminal session as a door sees it (``hostgate.DoorTerminal``)."""

    def __init__(self, session: TerminalSession) -> None:
        self._session = session
        self._attachment = Attachment()
        self._ended = False
        session.attach(self._attachment)
        if session.moderation is not None:
            self._attachment.notify(session.moderation)

    @property
    def id(self) -> str:
        """The session's id."""
        return self._session.id

    @property
    def end_reason(self) -> str:
        """Why the session ended (empty while it runs)."""
        return self._attachment.reason if self._attachment.finished else ""

    @property
    def exit_status(self) -> int | None:
        """The exit status the server reported, if any."""
        status = getattr(self._session.terminal, "exit_status", None)
        return status if isinstance(status, int) else None

    async def read(self) -> bytes:
        """Output; ``b""`` once the session ended."""
        queue = self._attachment.queue
        while not self._ended:
            item = await queue.get()
            if item is None:
                self._ended = True
            elif isinstance(item, bytes):
                return item
            else:  # a str is a notice for the browser; who joined or left is printed
                line = joined_line(item)
                if line:
                    return line
        return b""

    async def write(self, data: bytes) -> None:
        """Input for the remote side."""
        await self._session.write(data)

    async def resize(self, cols: int, rows: int) -> None:
        """A window-size change."""
        await self._session.resize(TerminalSize(cols=cols, rows=rows))

    async def write_eof(self) -> None:
        """The client's input ended: end the remote side's, when the pack can."""
        eof = getattr(self._session.terminal, "write_eof", None)
        if eof is not None:
            await eof()

    async def close(self) -> None:
        """End the session (idempotent)."""
        await self._session.end(1000, "Client disconnected", None)
        self._session.detach(self._attachment)
        if not self._attachment.finished:
            self._attachment.finish(1000, "Client disconnected")
        # a reader still waiting (the client left mid-session) must see the end, and
        # detaching may have dropped its marker with the unread output
        self._attachment.discard()
        self._attachment.queue.put_nowait(None)


def channel_protocol(subsystem: str | None, command: str | None) -> str:
    """The file session's protocol: the subsystem's name or the command's program."""
    if subsystem is not None:
        return subsystem[:32]
    program = (command or "").split(maxsplit=1)[0] if (command or "").strip() else "exec"
    return program.rsplit("/", 1)[-1][:32] or "exec"


class DoorFileChannel:
    """A raw channel as a door sees it (``hostgate.DoorChannel``): a file session."""

    def __init__(
        self,
        *,
        channel: Terminal,
        files: FileSessionLog,
        audit: AuditLog,
        live: LiveSessions,
        ref: SessionRef,
        session_id: str,
        caller: Caller,
        details: Mapping[str, Any],
        target: ConnectionTarget | None = None,
    ) -> None:
        self._target = target
        self._channel = channel
        self._files = files
        self._audit = audit
        self._live = live
        self._ref = ref
        self._id = session_id
        self._caller = caller
        self._details = dict(details)
        self._reason = ""
        self._closed = False
        self._started = time.monotonic()
        self.bytes_in = 0
        self.bytes_out = 0

    @property
    def id(self) -> str:
        """The file session's id."""
        return self._id

    @property
    def end_reason(self) -> str:
        """Why the gateway ended the channel (empty when the server or the client did)."""
        return self._reason

    @property
    def exit_status(self) -> int | None:
        """The command's exit status, when the server said."""
        status = getattr(self._channel, "exit_status", None)
        return status if isinstance(status, int) else None

    async def read(self) -> bytes:
        """The server's next bytes; ``b""`` once the channel ended."""
        if self._closed:
            return b""
        try:
            data = await self._channel.read()
        except Exception as exc:  # the server went away: the channel ends, as its EOF
            log.debug("door channel %s ended: %s", self._id, exc)
            return b""
        self.bytes_out += len(data)
        return data

    async def write(self, data: bytes) -> None:
        """Bytes for the server (dropped once the channel ended: ``read`` says so)."""
        if self._closed:
            return
        self.bytes_in += len(data)
        try:
            await self._channel.write(data)
        except Exception as exc:
            log.debug("writing to door channel %s failed: %s", self._id, exc)

    async def write_eof(self) -> None:
        """The client's input ended."""
        eof = getattr(self._channel, "write_eof", None)
        if eof is not None and not self._closed:
            with contextlib.suppress(Exception):
                await eof()

    async def file_event(
        self, action: str, path: str, *, size: int | None = None, detail: str = ""
    ) -> None:
        """One event of the file session, as the browser's file routes record them."""
        text = (
            detail
            if size is None
            else f"{human_size(size)}, {detail}"
            if detail
            else human_size(size)
        )
        await self._files.record(self._ref, action, path[:MAX_EVENT_PATH], text, actor=self._caller)

    async def end(self, reason: str, reason_code: CloseReason | None = None) -> None:
        """The ``kernel.live`` closer: end the channel, saying why."""
        self._reason = reason
        await self.close()

    @property
    def denied(self) -> frozenset[str]:
        """Per-action rights the user may not use on this connection."""
        return self._target.denied if self._target is not None else frozenset()

    async def refuse(self, action: str, detail: str = "") -> None:
        """Audit one refused action (``session.action_denied``)."""
        if self._target is not None:
            await self._target.refuse(action, f"front door: {detail}" if detail else "front door")

    async def close(self) -> None:
        """End the channel and audit its end (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._live.remove(self._id)
        try:
            await asyncio.wait_for(self._channel.close(), CLOSE_SECONDS)
        except Exception as exc:
            log.debug("closing door channel %s failed: %s", self._id, exc)
        await self._audit.record(
            "connection.session_ended",
            actor=self._caller,
            target=self._ref.connection_id,
            details={
                **self._details,
                "protocol": self._ref.protocol,
                "connectionName": self._ref.connection_name,
                "fileSessionId": self._id,
                "reason": self._reason or "Client disconnected",
                "durationMs": int((time.monotonic() - self._started) * 1000),
                "bytesIn": self.bytes_in,
                "bytesOut": self.bytes_out,
            },
        )


class DoorForward:
    """A forwarded TCP stream as a door sees it (``hostgate.DoorStream``)."""

    def __init__(
        self,
        *,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        audit: AuditLog,
        live: LiveSessions,
        live_id: str,
        caller: Caller,
        connection_id: str,
        destination: str,
        details: Mapping[str, Any],
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._audit = audit
        self._live = live
        self._live_id = live_id
        self._caller = caller
        self._connection_id = connection_id
        self._destination = destination
        self._details = dict(details)
        self._reason = ""
        self._closed = False
        self._started = time.monotonic()
        self.bytes_in = 0
        self.bytes_out = 0

    @property
    def end_reason(self) -> str:
        """Why the gateway ended the stream (empty otherwise)."""
        return self._reason

    async def read(self) -> bytes:
        """The destination's next bytes; ``b""`` at its end."""
        if self._closed:
            return b""
        try:
            data = await self._reader.read(READ_SIZE)
        except Exception:
            return b""
        self.bytes_out += len(data)
        return data

    async def write(self, data: bytes) -> None:
        """Bytes for the destination (dropped once it closed: ``read`` says so)."""
        if self._closed or self._writer.is_closing():
            return
        self.bytes_in += len(data)
        self._writer.write(data)
        with contextlib.suppress(Exception):
            await self._writer.drain()

    async def write_eof(self) -> None:
        """Half-close towards the destination."""
        if not self._closed and self._writer.can_write_eof():
            with contextlib.suppress(Exception):
                self._writer.write_eof()

    async def end(self, reason: str, reason_code: CloseReason | None = None) -> None:
        """The ``kernel.live`` closer."""
        self._reason = reason
        await self.close()

    async def close(self) -> None:
        """Close the stream and audit it (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._live.remove(self._live_id)
        self._writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._writer.wait_closed(), CLOSE_SECONDS)
        await self._audit.record(
            "connection.port_forward",
            actor=self._caller,
            target=self._connection_id,
            details={
                **self._details,
                "connectionId": self._connection_id,
                "destination": self._destination,
                "bytesIn": self.bytes_in,
                "bytesOut": self.bytes_out,
                "durationMs": int((time.monotonic() - self._started) * 1000),
                "reason": self._reason or "Client disconnected",
            },
        )


class FrontDoor:
    """``kernel.front_door``: sign-in and terminal sessions for another door."""

    def __init__(
        self,
        *,
        db: Database,
        logins: Logins,
        identity: Identity,
        connections: Connections,
        protocols: Mapping[str, ProtocolSpec],
        terminal_sessions: TerminalSessions,
        file_sessions: FileSessionLog,
        live: LiveSessions,
        audit: AuditLog,
        api: KernelAPI,
        login_methods: Mapping[str, LoginMethod],
    ) -> None:
        self.login_methods = login_methods
        self.db = db
        self.api = api
        self.file_sessions = file_sessions
        self.live = live
        self.audit = audit
        self.logins = logins
        self.identity = identity
        self.connections = connections
        self.protocols = protocols
        self.terminal_sessions = terminal_sessions
        self._doors: dict[str, int] = {}

    def announce(self, door: str, port: int) -> None:
        """A door pack listens on ``port`` (``0``: it stopped)."""
        if port:
            self._doors[door] = port
        else:
            self._doors.pop(door, None)

    @property
    def doors(self) -> Mapping[str, int]:
        """The doors announced on this node and their ports."""
        return dict(self._doors)

    async def sign_in(
        self,
        user: Account,
        client: ClientInfo,
        *,
        method: str,
        details: dict[str, Any] | None = None,
    ) -> Caller:
        """Complete the login (``auth.login``, a login session) and return its caller."""
        signed = await self.logins.complete_login(
            user, client, method=method, details=details, door=True
        )
        caller = await self.identity.caller_for_user(user.id, signed.issued.session.id, client)
        if caller is None:  # deleted between the check and the login
            raise NotAuthenticated("User not found", code="user_deleted")
        return caller

    async def sign_in_password(
        self,
        username: str,
        password: str,
        client: ClientInfo,
        *,
        details: dict[str, Any] | None = None,
    ) -> Caller | str:
        """The password step: the caller, or an MFA token when a second step is due.

        The account's own method checks the password (a directory account's through
        its pack's ``check_password``); a name no account has goes to the first enabled
        method that checks passwords (LDAP creates the account), else to the local
        check, which counts it as the web does. One attempt, one rate-limit hit, one
        failure counted, whichever method.
        """
        check_login_name(username)
        method = await self._password_method(username)
        if method is not None and method.check_password is not None:
            await self.logins.limit_ip(client)
            user = await method.check_password(self.api, username.strip(), password, client)
            # the same second step as the local check: a directory account's TOTP code
            outcome = await self.logins.after_first_factor(
                user,
                client,
                method=method.name,
                details={"provider": method.name, **(details or {})},
                door=True,
            )
        else:
            outcome = await self.logins.login_local(
                username, password, client, None, details=details, door=True
            )
        if outcome.challenge is not None:
            return outcome.challenge.token
        assert outcome.signed_in is not None
        return await self._caller(outcome.signed_in.user_id, outcome.signed_in, client)

    async def sign_in_totp(
        self,
        mfa_token: str,
        code: str,
        client: ClientInfo,
        *,
        details: dict[str, Any] | None = None,
    ) -> Caller:
        """The TOTP step for a token ``sign_in_password`` returned."""
        signed = await self.logins.login_mfa(mfa_token, code, client, details=details, door=True)
        return await self._caller(signed.user_id, signed, client)

    async def _password_method(self, username: str) -> LoginMethod | None:
        """The pack method that checks this name's password; None for the local check."""
        checks = {
            name: method
            for name, method in sorted(self.login_methods.items())
            if method.check_password is not None
        }
        if not checks:
            return None
        user = await self.logins.find_user(username, provider=None)
        if user is not None:
            return checks.get(user.auth_provider)
        for name, method in checks.items():
            offered = method.providers(self.api) if method.providers is not None else {}
            if inspect.isawaitable(offered):
                offered = await offered
            if (offered or {}).get(name):
                return method
        return None

    async def _caller(self, user_id: str, signed: SignedIn, client: ClientInfo) -> Caller:
        caller = await self.identity.caller_for_user(user_id, signed.issued.session.id, client)
        if caller is None:  # deleted between the check and the login
            raise NotAuthenticated("User not found", code="user_deleted")
        return caller

    async def sign_out(self, caller: Caller) -> None:
        """End the login session of a door's connection."""
        if caller.login_session_id is not None:
            await self.identity.revoke_session(
                caller.login_session_id, user_id=caller.user_id, reason="logout"
            )

    async def resolve(self, caller: Caller, ref: str) -> Connection:
        """The connection ``ref`` names (its id, else its exact name) that the caller sees."""
        if not ref or len(ref) > MAX_CONNECTION_REF or not ref.isprintable():
            raise NotFound("Connection not found")
        try:
            return await self.connections.visible(caller, ref)
        except NotFound:
            pass
        async with self.db.session() as session:
            rows = (await session.exec(select(Connection).where(col(Connection.name) == ref))).all()
            seen = [
                row
                for row in rows
                if await self.connections.is_visible(session, caller.user_id, caller.role_id, row)
            ]
        owned = [row for row in seen if row.owner_id == caller.user_id]
        if len(owned) == 1:
            return owned[0]
        if len(seen) == 1:
            return seen[0]
        if seen:
            raise Conflict(f"Several connections are named {ref!r}: use its id")
        raise NotFound("Connection not found")

    def _target(self, caller: Caller, row: Connection) -> DoorTarget:
        spec = self.protocols.get(row.protocol)
        return DoorTarget(
            id=row.id,
            name=row.name,
            protocol=row.protocol,
            host=row.host,
            port=row.port,
            owned=row.owner_id == caller.user_id,
            shell=spec is not None and spec.open_terminal is not None,
        )

    async def find_target(self, caller: Caller, connection: str) -> DoorTarget:
        """The connection ``connection`` names (id or exact name) that the caller sees."""
        return self._target(caller, await self.resolve(caller, connection))

    async def targets(self, caller: Caller) -> list[DoorTarget]:
        """The caller's own connections and those shared with them, by name."""
        listing = await self.connections.listing(caller)
        rows = {row.id: row for row in [*listing.own, *listing.shared]}
        found = [self._target(caller, row) for row in rows.values()]
        return sorted(found, key=lambda t: (t.name.casefold(), t.id))

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
    ) -> DoorSession:
        """Open a shell, or run ``command``, on a connection the caller may use.

        ``agent_path``: the client's forwarded ssh-agent, offered to the server's session.
        ``notice``: lines for the user while it opens (a command held for approval).
        """
        row = await self.resolve(caller, connection)
        spec = self.protocols.get(row.protocol)
        opener = (
            None if spec is None else spec.open_terminal if command is None else spec.open_command
        )
        if spec is None or opener is None:
            what = "a shell" if command is None else "commands"
            raise InvalidInput(f"{row.protocol} connections offer no {what} through this door")
        self.terminal_sessions.check_caps(caller)
        try:
            target = await self.connections.target_for(caller, row.id, spec)
        except ApiError as exc:
            raise conceal(caller, exc) from None
        if agent_path is not None:
            target = dataclasses.replace(target, agent_forward_path=agent_path)
        if command is not None and target.moderated:
            raise PermissionDenied(
                "This connection needs a moderator: commands run only in a shell a moderator joins"
            )
        admission = Admission(
            caller=caller, spec=spec, target=target, details=dict(details or {}), notice=notice
        )
        shape = TerminalSize() if size is None else TerminalSize(cols=size[0], rows=size[1])
        session = await self.terminal_sessions.open_terminal(
            admission, shape, command=command, pty=size is not None
        )
        return DoorSession(session)

    async def open_channel(
        self,
        caller: Caller,
        connection: str,
        *,
        subsystem: str | None = None,
        command: str | None = None,
        details: Mapping[str, Any] | None = None,
        actions: Collection[str] = (),
    ) -> DoorFileChannel:
        """Open a raw subsystem or command channel, recorded as a file session."""
        if (subsystem is None) == (command is None):
            raise ValueError("name a subsystem or a command")
        value = subsystem if subsystem is not None else command
        assert value is not None
        if not value.strip() or len(value) > MAX_COMMAND or "\x00" in value:
            raise InvalidInput("The command or subsystem is empty or too long")
        row = await self.resolve(caller, connection)
        spec = self.protocols.get(row.protocol)
        if spec is None or spec.open_channel is None:
            raise InvalidInput(
                f"{row.protocol} connections offer no file transfers through this door"
            )
        try:
            target = await self.connections.target_for(caller, row.id, spec)
        except ApiError as exc:
            raise conceal(caller, exc) from None
        for action in actions:
            if not target.allows(action):
                await target.refuse(action, f"front door: {value[:300]}")
                raise ActionDenied(action)
        kind = "subsystem" if subsystem is not None else "exec"
        try:
            channel = await spec.open_channel(self.api, target, kind, value)
        except ApiError as exc:
            raise conceal(caller, exc) from None
        except Exception as exc:
            raise conceal(caller, RemoteError(f"Connection failed: {exc}")) from None
        ref = SessionRef(
            user_id=caller.user_id,
            username=caller.username,
            connection_id=target.connection_id,
            connection_name=target.name,
            protocol=channel_protocol(subsystem, command),
            client_key=f"door:{uuid.uuid4()}",
        )
        door_details = {**dict(details or {}), "connectionId": target.connection_id}
        try:
            session_id = await self.file_sessions.open(ref, actor=caller, details=door_details)
        except BaseException:
            with contextlib.suppress(Exception):
                await channel.close()
            raise
        opened = DoorFileChannel(
            channel=channel,
            files=self.file_sessions,
            audit=self.audit,
            live=self.live,
            ref=ref,
            session_id=session_id,
            caller=caller,
            details=door_details,
            target=target,
        )
        self.live.add(
            LiveSession(
                id=session_id,
                kind="files",
                protocol=ref.protocol,
                user_id=caller.user_id,
                login_session_id=caller.login_session_id,
                connection_id=target.connection_id,
                close=opened.end,
                info={"connectionName": target.name, "via": "door"},
            )
        )
        return opened

    async def open_forward(
        self,
        caller: Caller,
        connection: str,
        host: str,
        port: int,
        *,
        details: Mapping[str, Any] | None = None,
    ) -> DoorForward:
        """A TCP stream to ``host:port`` from the connection's server, where it is allowed."""
        if not host or len(host) > MAX_HOST or not host.isprintable() or not 0 < port < 65536:
            raise InvalidInput("The forwarding destination is not host:port")
        row = await self.resolve(caller, connection)
        spec = self.protocols.get(row.protocol)
        if spec is None or spec.open_tunnel is None:
            raise InvalidInput(f"{row.protocol} connections offer no port forwarding")
        try:
            target = await self.connections.target_for(caller, row.id, spec)
        except ApiError as exc:
            raise conceal(caller, exc) from None
        if target.extra.get(FORWARDING_FIELD) is not True:
            raise PermissionDenied(
                "port forwarding is not allowed on this connection",
                code="port_forwarding_off",
            )
        destination = f"{host}:{port}"
        try:
            await self.connections.netpolicy.check_beyond(
                host, port, actor=caller, purpose="port_forward"
            )
            sock = await spec.open_tunnel((*target.via, target), host, port)
        except ApiError as exc:
            raise conceal(caller, exc) from None
        except Exception as exc:
            raise conceal(caller, RemoteError(f"Cannot reach {destination}: {exc}")) from None
        reader, writer = await asyncio.open_connection(sock=sock)
        live_id = str(uuid.uuid4())
        stream = DoorForward(
            reader=reader,
            writer=writer,
            audit=self.audit,
            live=self.live,
            live_id=live_id,
            caller=caller,
            connection_id=target.connection_id,
            destination=destination,
            details=details or {},
        )
        self.live.add(
            LiveSession(
                id=live_id,
                kind="forward",
                protocol=row.protocol,
                user_id=caller.user_id,
                login_session_id=caller.login_session_id,
                connection_id=target.connection_id,
                close=stream.end,
                info={"connectionName": target.name, "destination": destination},
            )
        )
        return stream
