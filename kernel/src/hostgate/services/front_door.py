"""What a pack that is a door of its own (the SSH front door) uses of the kernel.

``FrontDoor`` signs a user in through the shared login service and opens terminal
sessions exactly as the browser's terminal socket does (same access checks, caps,
recording, command log and audit); ``SealedValues`` keeps a pack's small secrets
(host keys) sealed in the database beside the kernel's own.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from ..adapters import TerminalSize
from ..db.models.connections import Connection
from ..db.models.settings import SystemValue
from ..errors import ApiError, Conflict, InvalidInput, NotAuthenticated, NotFound
from .identity.logins import check_login_name
from .netpolicy import conceal
from .sessions.attachment import Attachment
from .sessions.remote_session import Admission

if TYPE_CHECKING:
    from ..contract import Account, KernelAPI
    from ..db.engine import Database
    from ..descriptors import LoginMethod, ProtocolSpec
    from ..principals import Caller, ClientInfo, SignedIn
    from ..security.secretbox import SecretBox
    from .connections.connections import Connections
    from .identity.identity import Identity
    from .identity.logins import Logins
    from .sessions.terminal_session import TerminalSession
    from .sessions.terminal_sessions import TerminalSessions

PACK_PREFIX = "pack:"
MAX_NAME = 90
MAX_CONNECTION_REF = 200


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


class DoorSession:
    """A terminal session as a door sees it (``hostgate.DoorTerminal``)."""

    def __init__(self, session: TerminalSession) -> None:
        self._session = session
        self._attachment = Attachment()
        self._ended = False
        session.attach(self._attachment)

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
            # a str is a browser notice (someone watches): not terminal output
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
        login_methods: Mapping[str, LoginMethod],
        kernel: KernelAPI,
    ) -> None:
        self.login_methods = login_methods
        self.kernel = kernel
        self.db = db
        self.logins = logins
        self.identity = identity
        self.connections = connections
        self.protocols = protocols
        self.terminal_sessions = terminal_sessions

    async def sign_in(
        self,
        user: Account,
        client: ClientInfo,
        *,
        method: str,
        details: dict[str, Any] | None = None,
    ) -> Caller:
        """Complete the login (``auth.login``, a login session) and return its caller."""
        signed = await self.logins.complete_login(user, client, method=method, details=details)
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
        """The password step: the caller, or an MFA token when TOTP is on.

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
            user = await method.check_password(self.kernel, username.strip(), password, client)
            signed = await self.logins.complete_login(
                user,
                client,
                method=method.name,
                details={"provider": method.name, **(details or {})},
            )
            return await self._caller(user.id, signed, client)
        outcome = await self.logins.login_local(username, password, client, None, details=details)
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
        signed = await self.logins.login_mfa(mfa_token, code, client, details=details)
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
            offered = method.providers(self.kernel) if method.providers is not None else {}
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

    async def open_terminal(
        self,
        caller: Caller,
        connection: str,
        size: tuple[int, int] | None,
        *,
        command: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> DoorSession:
        """Open a shell, or run ``command``, on a connection the caller may use."""
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
        admission = Admission(caller=caller, spec=spec, target=target, details=dict(details or {}))
        shape = TerminalSize() if size is None else TerminalSize(cols=size[0], rows=size[1])
        session = await self.terminal_sessions.open_terminal(
            admission, shape, command=command, pty=size is not None
        )
        return DoorSession(session)
