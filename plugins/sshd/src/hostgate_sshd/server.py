"""The SSH front door: an asyncssh server that signs users in and relays their sessions.

The login name carries the target: ``alice:prod-db`` is user ``alice`` opening the
stored connection ``prod-db`` (its name or id). Public keys registered in the
profile sign in; each refusal counts in the same lockout, rate limit and audit
(``auth.login`` / ``auth.login_failed``) as the web sign-in. A shell or an ``exec``
command then opens through ``kernel.front_door``: the same access checks,
recording, command log and audit as a browser terminal. The ``sftp`` subsystem and
file-transfer commands are relayed raw as file sessions (``channels.py``), and
``ssh -L`` where the connection allows it (``forwarding.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

import asyncssh
from hostgate import (
    Account,
    ApiError,
    Caller,
    ClientCertificate,
    ClientInfo,
    DoorTerminal,
    KernelAPI,
    SessionClosed,
    StoredCredential,
    watch_certificates,
    watch_forwarding_requests,
)

from .agent import agent_path, audit_forwarded
from .approval import APPROVAL_SECONDS, APPROVED, REFUSED, Approvals, approval_link
from .certs import CERT_METHOD, CaCache, authorized_cas
from .channels import DoorProcess
from .forwarding import forward_requested
from .plugin import CA_SETTING, REVOKED_SETTING, WEB_URL_SETTING
from .revocation import RevocationCache, Revocations

log = logging.getLogger("hostgate.sshd")

SEPARATOR = ":"
"""Between the user and the connection in the login name (``alice:prod-db``)."""
MAX_LOGIN_NAME = 512
KEY_KIND = "ssh-key"
READ_SIZE = 64 * 1024
LOGIN_GRACE_SECONDS = APPROVAL_SECONDS + 30
"""Long enough for a browser approval, as sshd's own LoginGraceTime (120 s)."""
REFUSED_EXIT = 255
MAX_KBDINT_FAILURES = 3
STOP_GRACE_SECONDS = 5.0
VIA = "ssh"
APPROVAL_METHOD = "ssh-approval"
APPROVAL_HINT = "(An empty password asks for an approval in the browser instead.)\r\n"
DOOR_CIPHERS = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "aes128-ctr",
    "aes192-ctr",
    "aes256-ctr",
)
"""The ciphers the door's own leg offers: AES, no chacha20-poly1305. OpenSSH's clients list
chacha20 first, and asyncssh makes three cipher objects for it per packet: with it left out
they land on aes128-ctr (their next choice), and the gateway spends about a third less CPU
per GiB moved (docs/performance-log/2026-12-lab-notes.md)."""


@dataclass(frozen=True)
class LoginName:
    """A parsed login name: who signs in and which connection they open."""

    user: str
    target: str


def parse_login_name(name: str) -> LoginName | None:
    """``user:target`` (the target may be empty); None when it cannot be a login name."""
    if not name or len(name) > MAX_LOGIN_NAME or not name.isprintable():
        return None
    user, _, target = name.partition(SEPARATOR)
    user, target = user.strip(), target.strip()
    if not user:
        return None
    return LoginName(user=user, target=target)


REFUSED_ACCOUNT_CODES = frozenset(
    {"account_suspended", "mfa_enrollment_required", "password_change_required"}
)


class DoorConnection(asyncssh.SSHServer):
    """One client connection: its sign-in, then its sessions."""

    def __init__(self, door: FrontDoorServer) -> None:
        self.door = door
        self.kernel = door.kernel
        self.conn: asyncssh.SSHServerConnection | None = None
        self.client = ClientInfo()
        self.login: LoginName | None = None
        self.user: Account | None = None
        self.refused = ""
        self.attempted = False
        self.credential: StoredCredential | None = None
        self.caller: Caller | None = None
        self.terminals: set[DoorTerminal] = set()
        self.signing_in: asyncio.Future[None] | None = None
        self.mfa_token: str | None = None
        self.kbdint_failures = 0
        self.offered_key = ""
        self.approval: tuple[str, float] | None = None
        self.closed = False
        self.certificate: ClientCertificate | None = None
        """The certificate this connection signed in with (when it did)."""
        self.certificates_watched = False
        self.handlers: set[asyncio.Task[Any]] = set()
        """The connection's shell and command channels still running."""

    # -- connection ---------------------------------------------------------------

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        """Remember where the client is."""
        self.conn = conn
        peer = conn.get_extra_info("peername")
        version = str(conn.get_extra_info("client_version") or "")
        self.client = ClientInfo(
            ip_address=str(peer[0]) if peer else "",
            user_agent=version[:512],
            browser="ssh",
            os="Unknown",
        )
        self.certificates_watched = watch_certificates(conn, self._certificate_offered)
        self.door.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        """End every terminal of the connection and its login session."""
        self.closed = True
        self.door.connections.discard(self)
        self.door.spawn(self._closed())

    async def _closed(self) -> None:
        for terminal in list(self.terminals):
            await terminal.close()
        if self.signing_in is not None:  # a sign-in still completing gets ended too
            with contextlib.suppress(Exception):
                await asyncio.shield(self.signing_in)
        if self.caller is not None:
            await self.kernel.front_door.sign_out(self.caller)

    def _refuse(self, message: str) -> None:
        """Refuse every method of this connection; the client prints ``message``."""
        self.refused = message
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.send_auth_banner(f"hostgate: {message}\r\n")

    # -- sign-in ------------------------------------------------------------------

    async def begin_auth(self, username: str) -> bool:
        """Parse the login name and check the rate limit and lockout before any method."""
        self.login = parse_login_name(username)
        if self.login is None:
            self._refuse(f"the login name is not user{SEPARATOR}connection")
            return True
        logins = self.kernel.logins
        try:
            await logins.limit_ip(self.client)
            self.user = await logins.find_user(self.login.user, provider=None)
            await logins.check_not_locked(self.user, self.client, username=self.login.user)
        except ApiError as refused:
            self._refuse(refused.message)
            return True
        if self.user is not None and self.conn is not None:
            cas = self.door.cas.get(str(self.kernel.settings.get(CA_SETTING) or ""))
            revoked = self.revocations()
            if revoked and not self.certificates_watched:
                cas = []  # a certificate that cannot be checked against the list is refused
            cas = [ca for ca in cas if not revoked.key_revoked(ca.fingerprint)]
            trusted = authorized_cas(cas, self.user.username)
            if trusted is not None:
                self.conn.set_authorized_keys(trusted)
        return True

    def public_key_auth_supported(self) -> bool:
        """Public keys registered in the profile."""
        return True

    async def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        """True when the key is registered to the user signing in."""
        if self.refused or self.login is None:
            return False
        if self.revocations().key_revoked(key.get_fingerprint("sha256")):
            self.offered_key = key.get_fingerprint("sha256")
            await self._failed("ssh_key_revoked")
            return False
        credential = await self.kernel.credentials.find(KEY_KIND, key.get_fingerprint("sha256"))
        if credential is not None and self.user is not None and credential.user_id == self.user.id:
            self.credential = credential
            return True
        self.offered_key = key.get_fingerprint("sha256")
        await self._failed("ssh_key_rejected")
        return False

    async def validate_ca_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        """A certificate no trusted CA entry of this user accepted: count it and refuse.

        asyncssh asks only when the CA is unknown or the principals do not name the
        user; the CAs themselves are checked through ``set_authorized_keys``.
        """
        await self._failed("ssh_certificate_rejected")
        return False

    def revocations(self) -> Revocations:
        """The revoked keys and certificates (``sshd.revoked_keys``) as they are now."""
        return self.door.revoked.get(str(self.kernel.settings.get(REVOKED_SETTING) or ""))

    async def _certificate_offered(self, certificate: ClientCertificate) -> bool:
        """A certificate asyncssh accepted: refused (and counted) when it is revoked."""
        if self.revocations().certificate_revoked(certificate):
            self.offered_key = certificate.key.get_fingerprint("sha256")
            await self._failed("ssh_certificate_revoked")
            return False
        self.certificate = certificate
        return True

    async def _failed(self, reason: str) -> None:
        """Count one failed sign-in per connection, as the web counts a wrong password.

        Counted before the client hears of it (a client offering several keys is
        counted once; a later key that signs in resets the count as any login does).
        """
        if self.attempted or self.login is None:
            return
        self.attempted = True
        try:
            await self.kernel.logins.record_failure(
                self.user, self.login.user, self.client, reason=reason
            )
        except ApiError as refused:
            self._refuse(refused.message)

    def auth_completed(self) -> None:
        """The key's signature checked out: complete the login as the web does.

        asyncssh does not wait for this hook on the server side, so the login runs as a
        task that every session channel waits for.
        """
        if self.caller is None:  # a key or certificate: keyboard-interactive signed in already
            self.signing_in = asyncio.ensure_future(self._sign_in())

    async def _sign_in(self) -> None:
        user, credential = self.user, self.credential
        if user is None:  # never: asyncssh only calls this after a key or certificate
            return
        try:
            if credential is None:  # no registered key checked out: a CA's certificate did
                method, details = CERT_METHOD, self.details()
            else:
                await self.kernel.credentials.record_use(credential, credential.sign_count)
                method, details = (
                    "ssh-key",
                    {
                        "via": VIA,
                        "keyId": credential.id,
                        "keyFingerprint": credential.credential_id,
                    },
                )
            self.caller = await self.kernel.front_door.sign_in(
                user, self.client, method=method, details=details
            )
        except ApiError as refused:
            self.refused = refused.message
        except Exception:
            log.exception("completing an SSH sign-in failed")
            self.refused = "the sign-in could not be completed; try again"

    def kbdint_auth_supported(self) -> bool:
        """Passwords (local accounts) and then the TOTP code, as the web asks them."""
        return True

    def get_kbdint_challenge(
        self, username: str, lang: str, submethods: str
    ) -> tuple[str, str, str, list[tuple[str, bool]]]:
        """Ask for the password; an empty one asks for a browser approval instead."""
        self.mfa_token = None
        return "", APPROVAL_HINT, "", [("Password: ", False)]

    async def validate_kbdint_response(
        self, username: str, responses: Sequence[str]
    ) -> bool | tuple[str, str, str, list[tuple[str, bool]]]:
        """Check the password, then the TOTP code, with the web's limits and audit.

        An empty password asks for a browser approval (``approval.py``) instead.
        """
        if self.refused or self.login is None:
            return self._kbdint_failed()
        if self.approval is not None:  # the client read the link: wait for the browser
            return await self._approved(*self.approval)
        if len(responses) != 1:
            return self._kbdint_failed()
        if self.mfa_token is None and responses[0] == "":
            return await self._ask_approval()
        details = {"via": VIA}
        try:
            if self.mfa_token is None:
                outcome = await self.kernel.front_door.sign_in_password(
                    self.login.user, responses[0], self.client, details=details
                )
                if isinstance(outcome, str):
                    self.mfa_token = outcome
                    return "", "", "", [("Verification code: ", True)]
                self.caller = outcome
            else:
                self.caller = await self.kernel.front_door.sign_in_totp(
                    self.mfa_token, responses[0].strip(), self.client, details=details
                )
        except ApiError as refused:
            # locked or rate limited, or a suspended account or one with a step to take
            # in the browser first (told only after its password checked out): say so
            if refused.status == 429 or refused.code in REFUSED_ACCOUNT_CODES:
                self._refuse(refused.message)
            return self._kbdint_failed()
        self.attempted = True  # counted by the password check itself
        return True

    async def _ask_approval(self) -> tuple[str, str, str, list[tuple[str, bool]]]:
        """Make a request and show its link; the client answers at once (no prompt)."""
        user = self.user
        code = await Approvals(self.kernel).create(
            user.id if user is not None else "",
            user.username if user is not None else "",
            self.client.ip_address,
            self.offered_key,
        )
        self.approval = (code, time.time() + APPROVAL_SECONDS)
        link = approval_link(str(self.kernel.settings.get(WEB_URL_SETTING) or ""), code)
        minutes = APPROVAL_SECONDS // 60
        instructions = (
            "Approve this sign-in in the hostgate browser app, where you are signed in:\r\n"
            f"    {link}\r\n"
            f"Code {code}; it expires in {minutes} minutes. Waiting...\r\n"
        )
        return "hostgate", instructions, "", []

    async def _approved(self, code: str, deadline: float) -> bool:
        """Wait for the browser's decision; sign in when the user approved."""
        decision = await Approvals(self.kernel).wait(code, deadline, lambda: self.closed)
        self.approval = None
        if decision == APPROVED and self.user is not None:
            try:
                self.caller = await self.kernel.front_door.sign_in(
                    self.user,
                    self.client,
                    method=APPROVAL_METHOD,
                    details={"via": VIA, "approvalCode": code},
                )
            except ApiError as refused:
                self._refuse(refused.message)
                return self._kbdint_failed()
            self.attempted = True
            return True
        if self.closed:  # the client gave up waiting (Ctrl-C): not a failed sign-in
            return False
        await self._failed(
            "ssh_approval_refused" if decision == REFUSED else "ssh_approval_expired"
        )
        self._refuse(
            "the sign-in was refused in the browser"
            if decision == REFUSED
            else "the sign-in was not approved in time"
        )
        return self._kbdint_failed()

    def _kbdint_failed(self) -> bool:
        """A wrong answer; the ``MAX_KBDINT_FAILURES``-th closes the connection.

        As sshd's MaxAuthTries: no client tries passwords without end on one connection.
        """
        self.kbdint_failures += 1
        if self.kbdint_failures >= MAX_KBDINT_FAILURES and self.conn is not None:
            self.conn.disconnect(
                asyncssh.DISC_NO_MORE_AUTH_METHODS_AVAILABLE, "too many authentication failures"
            )
        return False

    # -- what is refused ----------------------------------------------------------

    def connection_requested(
        self, dest_host: str, dest_port: int, orig_host: str, orig_port: int
    ) -> Any:
        """``direct-tcpip``: a forward, or ProxyJump to a stored connection.

        With a connection in the login, ``ssh -L`` from its server where it allows
        forwarding (``forwarding.py``); without one, ProxyJump (``proxyjump.py``).
        No raw TCP to arbitrary hosts.
        """
        if self.login is not None and self.login.target:
            return forward_requested(self, dest_host, dest_port)
        from .proxyjump import direct_tcpip

        return direct_tcpip(self, dest_host, dest_port)

    def server_requested(self, listen_host: str, listen_port: int) -> bool:
        """Remote forwarding (``-R``) is not offered."""
        return False

    # -- sessions -----------------------------------------------------------------

    def details(self) -> dict[str, Any]:
        """What ``connection.session_started`` says about the door."""
        credential, certificate = self.credential, self.certificate
        details: dict[str, Any] = {"via": VIA, "clientAddress": self.client.ip_address}
        if credential is not None:
            details["keyFingerprint"] = credential.credential_id
        elif certificate is not None:
            details.update(
                keyFingerprint=certificate.key.get_fingerprint("sha256"),
                certificateSerial=certificate.serial,
                certificateKeyId=certificate.key_id[:200],
                caFingerprint=certificate.signing_key.get_fingerprint("sha256"),
            )
        return details

    async def run(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        """One session channel: refuse it with a reason, or relay it to the connection."""
        try:
            code = await self._run(process)
        except (asyncssh.Error, BrokenPipeError, ConnectionError):
            return
        with contextlib.suppress(Exception):
            process.exit(code)

    def _tell(self, process: asyncssh.SSHServerProcess[bytes], message: str) -> None:
        """One ``hostgate:`` line on the client's stderr now (while a session opens)."""
        eol = "\r\n" if process.get_terminal_type() else "\n"
        with contextlib.suppress(Exception):  # the client may have gone
            process.stderr.write(f"hostgate: {message}{eol}".encode())

    async def _say(self, process: asyncssh.SSHServerProcess[bytes], message: str) -> None:
        self._tell(process, message)
        with contextlib.suppress(Exception):
            await process.stderr.drain()

    async def audit_refusal(self, message: str, ref: str) -> None:
        """``sshd.session_refused``: a signed-in user was refused a channel."""
        if self.caller is not None:
            await self.kernel.audit.record(
                "sshd.session_refused",
                actor=self.caller,
                target=ref[:200],
                details={**self.details(), "reason": message[:500]},
            )

    async def _refused(
        self, process: asyncssh.SSHServerProcess[bytes], message: str, ref: str
    ) -> int:
        """Tell the client why, audit it, and give the exit status of a refusal."""
        await self._say(process, message)
        await self.audit_refusal(message, ref)
        return REFUSED_EXIT

    async def ready(self) -> tuple[Caller, LoginName] | str:
        """Once the sign-in completed: who and which connection, else why not.

        A missing target is refused here (and audited); a refused sign-in is not (it was).
        """
        if self.signing_in is not None:
            await asyncio.shield(self.signing_in)
        caller, login = self.caller, self.login
        if caller is None or login is None:
            return self.refused or "not signed in"
        if not login.target:
            message = (
                f"name the connection in the login: ssh {login.user}{SEPARATOR}CONNECTION@gateway"
            )
            await self.audit_refusal(message, login.target)
            return message
        return caller, login

    def session_requested(
        self,
    ) -> tuple[asyncssh.SSHServerChannel[bytes], DoorProcess] | DoorProcess:
        """Every session channel: a shell or command, or a raw file-transfer channel.

        Its X11 forwarding requests (which asyncssh refuses) and its agent forwarding
        requests (refused unless allowed: ``agent.py``) are told to the user and audited.
        """
        process = DoorProcess(self, self.door.handle)
        if self.conn is None:
            return process
        channel: asyncssh.SSHServerChannel[bytes] = self.conn.create_server_channel()
        watch_forwarding_requests(channel, process.forwarding_requested)
        return channel, process

    async def forwarding_refused(self, process: DoorProcess, what: str) -> None:
        """Tell the client that ``what`` (agent or X11 forwarding) is not offered; audit it."""
        message = f"{what} is not offered by this gateway"
        process.say(message)
        if self.signing_in is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.signing_in)
        await self.audit_refusal(message, self.login.target if self.login is not None else "")

    async def _run(self, process: asyncssh.SSHServerProcess[bytes]) -> int:
        if self.signing_in is not None:
            await asyncio.shield(self.signing_in)
        caller, login = self.caller, self.login
        if caller is None or login is None:
            await self._say(process, self.refused or "not signed in")
            return REFUSED_EXIT
        if process.subsystem:
            message = f"the {process.subsystem} subsystem is not offered by this gateway"
            return await self._refused(process, message, login.target)
        target, typeahead = login.target, b""
        term_type = process.get_terminal_type()
        if not target and term_type and not process.command:
            from .menu import choose

            picked = await choose(self.kernel, caller, process)
            if picked is None:
                return 0
            target, typeahead = picked.target.id, picked.typeahead
        if not target:
            message = (
                f"name the connection in the login: ssh {login.user}{SEPARATOR}CONNECTION@gateway"
            )
            return await self._refused(process, message, target)
        cols, rows, _, _ = process.get_terminal_size()
        size = (cols or 80, rows or 24) if term_type else None
        forwarded = agent_path(self.kernel, process.channel)
        try:
            terminal = await self.kernel.front_door.open_terminal(
                caller,
                target,
                size,
                command=process.command,
                details=self.details(),
                agent_path=forwarded,
                notice=lambda message: self._tell(process, message),
            )
        except ApiError as refused:
            return await self._refused(process, refused.message, target)
        except SessionClosed as closed:
            return await self._refused(process, closed.reason, target)
        self.terminals.add(terminal)
        if forwarded is not None:
            await audit_forwarded(self.kernel, caller, target, self.details())
        try:
            if typeahead:  # typed after choosing in the menu: the shell's first input
                await terminal.write(typeahead)
            return await self._relay(process, terminal)
        finally:
            self.terminals.discard(terminal)
            await terminal.close()

    async def _relay(
        self, process: asyncssh.SSHServerProcess[bytes], terminal: DoorTerminal
    ) -> int:
        """Pump both ways until the session ends; its exit status, or 255 with the reason."""
        feeding = asyncio.create_task(self._feed(process, terminal))
        try:
            while data := await terminal.read():
                process.stdout.write(data)
                await process.stdout.drain()
        finally:
            feeding.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await feeding
        status = terminal.exit_status
        if status is not None:
            return status
        if terminal.end_reason:
            await self._say(process, terminal.end_reason)
        return REFUSED_EXIT

    async def _feed(
        self, process: asyncssh.SSHServerProcess[bytes], terminal: DoorTerminal
    ) -> None:
        """Client input and window changes to the session; EOF ends the remote input."""
        while True:
            try:
                data = await process.stdin.read(READ_SIZE)
            except asyncssh.TerminalSizeChanged as change:
                await terminal.resize(change.width, change.height)
                continue
            if not data:
                await terminal.write_eof()
                return
            await terminal.write(data)


class FrontDoorServer:
    """The listener: made in ``startup``, closed in ``shutdown``."""

    def __init__(self, kernel: KernelAPI) -> None:
        self.kernel = kernel
        self.connections: set[DoorConnection] = set()
        self.host_keys: list[asyncssh.SSHKey] = []
        self.jump_key: asyncssh.SSHKey | None = None
        self.options: dict[str, Any] = {}
        """What every SSH server connection is made with (the door's and ProxyJump's)."""
        self.cas = CaCache()
        self.revoked = RevocationCache()
        self.address = ""
        self.port = 0
        self._server: asyncssh.SSHAcceptor | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._handlers: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run background work, keeping a reference until it is done; log what it raised."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("front-door background work failed", exc_info=exc)

    async def handle(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        """A shell or command channel (asyncssh's process factory)."""
        owner = process.channel.get_connection().get_owner()
        if not isinstance(owner, DoorConnection):
            return
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
            owner.handlers.add(task)
        try:
            await owner.run(process)
        finally:
            if task is not None:
                self._handlers.discard(task)
                owner.handlers.discard(task)

    def run_handler(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run a raw channel's relay; ``stop`` lets it end before the connections go."""
        task = asyncio.ensure_future(coro)
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)

    async def start(self, host: str, port: int, host_keys: list[asyncssh.SSHKey]) -> None:
        """Listen on ``host:port``.

        No SO_REUSEPORT: a second gateway on the same port is refused loudly instead of
        silently sharing its clients.
        """
        self.host_keys = host_keys
        self.options = {
            "encoding": None,
            "line_editor": False,
            "agent_forwarding": True,  # refused per request unless allowed (agent.py)
            "x11_forwarding": False,
            "login_timeout": LOGIN_GRACE_SECONDS,
            "encryption_algs": DOOR_CIPHERS,
        }
        self._server = await asyncssh.create_server(
            lambda: DoorConnection(self), host, port, server_host_keys=host_keys, **self.options
        )
        sockname = self._server.sockets[0].getsockname()
        self.address, self.port = str(sockname[0]), int(sockname[1])
        log.info("SSH front door listening on %s:%s", self.address, self.port)

    async def stop(self) -> None:
        """Stop listening and close every client connection with a reason."""
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        # the kernel has ended every session ("Server shutting down"): let each channel
        # tell its client and exit before the connections go
        if self._handlers:
            await asyncio.wait(set(self._handlers), timeout=STOP_GRACE_SECONDS)
        for connection in list(self.connections):
            for terminal in list(connection.terminals):
                with contextlib.suppress(Exception):
                    await terminal.close()
            if connection.conn is not None:
                connection.conn.disconnect(
                    asyncssh.DISC_BY_APPLICATION, "hostgate is shutting down"
                )
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def close_key(self, fingerprint: str, reason: str) -> int:
        """Disconnect every connection signed in with this key (it was deleted)."""
        closed = 0
        for connection in list(self.connections):
            credential = connection.credential
            same = credential is not None and credential.credential_id == fingerprint
            if same and connection.conn is not None:
                connection.conn.disconnect(asyncssh.DISC_BY_APPLICATION, reason)
                closed += 1
        return closed
