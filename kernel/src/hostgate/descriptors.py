"""What plugins describe and the kernel mounts: protocols, login methods, channels, settings."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .adapters import STAT_FIELDS
from .contract import AuditEvent, ChannelSend, ChannelSpec, NotificationMessage

if TYPE_CHECKING:
    from quart import Blueprint

    from .adapters import (
        ConnectionTarget,
        RemoteFiles,
        Stream,
        Terminal,
        TerminalSize,
        TunnelOpener,
    )
    from .contract import Account, KernelAPI
    from .principals import ClientInfo


@dataclass(frozen=True)
class ConnectionField:
    """One protocol-specific connection field, stored in ``extraConfig``.

    ``type`` is ``str``, ``int`` or ``bool``. Secret fields are encrypted at rest
    and never returned by any GET.
    """

    name: str
    type: type = str
    secret: bool = False
    required: bool = False
    default: Any = None
    description: str = ""


FilesFactory = Callable[["KernelAPI", "ConnectionTarget"], Awaitable["RemoteFiles"]]
TerminalFactory = Callable[["KernelAPI", "ConnectionTarget", "TerminalSize"], Awaitable["Terminal"]]
StreamFactory = Callable[["KernelAPI", "ConnectionTarget"], Awaitable["Stream"]]
CommandFactory = Callable[
    ["KernelAPI", "ConnectionTarget", str, "TerminalSize | None"], Awaitable["Terminal"]
]
"""``await open_command(kernel, target, command, size)``: one command (``ssh host cmd``)
as a ``Terminal``; ``size`` None asks for no PTY. Its ``exit_status`` attribute, when
set, is the command's exit status once ``read()`` returned ``b""``."""
ChannelFactory = Callable[["KernelAPI", "ConnectionTarget", str, str], Awaitable["Terminal"]]
"""``await open_channel(kernel, target, kind, value)``: a raw byte channel, ``kind``
``"subsystem"`` (``value`` its name, such as ``sftp``) or ``"exec"`` (``value`` the
command, such as ``scp -t /tmp``), as a ``Terminal`` whose ``read()`` is the channel's
stdout (stderr is not mixed in: it would corrupt the protocol carried); no PTY. Its
``write_eof()`` ends the input and ``exit_status``, when set, is the command's once
``read()`` returned ``b""``. The SSH front door relays SFTP, scp, rsync and git over it."""
HostKeyFetch = Callable[["ConnectionTarget"], Awaitable[tuple[str, bytes]]]
"""``await fetch(target)``: the server's host key ``(algorithm, public-key blob)``, no login."""


@dataclass(frozen=True)
class ProtocolSpec:
    """A connection protocol a pack provides.

    ``open_files`` mounts ``/api/v1/<name>/<connectionId>/...``; ``open_terminal``
    serves ``/ws/<name>``; ``open_stream`` serves the relay socket. ``accepts``
    lists the connection protocols this adapter may be used with (``sftp``
    file routes also serve ``ssh`` connections). ``socket_aliases`` are further
    names the socket is served under (``/ws/<alias>``), for browser clients that
    hard-code another path. ``relay_authenticates`` says the relay logs in to
    the server itself, so the stored password is never handed to a browser
    (``GET /connections/:id/session`` withholds it). ``fetch_host_key`` reads the
    server's host key without logging in, for protocols whose adapters check one
    (``POST /connections/:id/host-key/scan``: the browser shows a first or changed
    key before a session opens). ``jump_hosts`` says the pack's adapters reach their
    target through ``ConnectionTarget.via`` (with ``open_tcp``), so its connections may
    name a jump host. ``open_tunnel`` is offered by a protocol whose connections can
    serve as jump hosts (ssh): it opens a TCP channel through a chain of them.
    ``open_command`` runs one command instead of a shell (the SSH front door's
    ``ssh gateway cmd``); it is recorded and audited as a terminal session.
    ``open_channel`` opens a raw byte channel (a subsystem or a command without a
    PTY) for the front door's file transfers, recorded as a file session.
    """

    name: str
    default_port: int
    title: str = ""
    fields: tuple[ConnectionField, ...] = ()
    open_files: FilesFactory | None = None
    open_terminal: TerminalFactory | None = None
    open_stream: StreamFactory | None = None
    accepts: tuple[str, ...] = ()
    file_attributes: str = "basic"
    stat_fields: tuple[str, ...] = ()
    socket_aliases: tuple[str, ...] = ()
    relay_authenticates: bool = False
    fetch_host_key: HostKeyFetch | None = None
    jump_hosts: bool = False
    open_tunnel: TunnelOpener | None = None
    open_command: CommandFactory | None = None
    open_channel: ChannelFactory | None = None

    def __post_init__(self) -> None:
        unknown = [name for name in self.stat_fields if name not in STAT_FIELDS]
        if unknown:
            raise ValueError(
                f"protocol {self.name!r}: unknown stat_fields {unknown} "
                f"(valid: {', '.join(STAT_FIELDS)})"
            )
        if self.file_attributes not in ("basic", "full"):
            raise ValueError(
                f"protocol {self.name!r}: file_attributes must be 'basic' or 'full', "
                f"not {self.file_attributes!r}"
            )

    def accepted_protocols(self) -> tuple[str, ...]:
        """The stored connection protocols this protocol's adapters serve."""
        return self.accepts or (self.name,)


SignInCheck = Callable[["KernelAPI", Callable[[str], Any], "Account"], "bool | Awaitable[bool]"]
"""``can_sign_in(kernel, setting, account)`` of a ``LoginMethod``."""

PasswordCheck = Callable[["KernelAPI", str, str, "ClientInfo"], Awaitable["Account"]]
"""``check_password(kernel, username, password, client)`` of a ``LoginMethod``."""


@dataclass(frozen=True)
class LoginMethod:
    """A login method beyond local passwords.

    ``blueprint`` is mounted under ``/api/v1``; ``providers(kernel)`` returns the
    keys this method adds to ``GET /auth/providers`` (e.g. ``{"ldap": True}``).
    """

    name: str
    blueprint: Blueprint | None = None
    providers: Callable[[KernelAPI], Mapping[str, Any]] | None = None
    can_sign_in: SignInCheck | None = None
    """Whether ``account`` could sign in with this method were the settings what
    ``setting(key)`` returns (a change not yet stored). The kernel asks it before a
    settings change, and refuses one that leaves no administrator a way in; a method
    without it never counts as one."""
    check_password: PasswordCheck | None = None
    """A user name and password this method checks (LDAP's directory bind), for the
    doors that only ask for a password (the SSH front door's keyboard-interactive).
    It does what the method's own route does between the rate limit and the login:
    the lockout check, counting a failure (``record_failure``) before raising
    ``invalid_credentials()``, creating the account on first use; it returns the
    account. The kernel calls ``limit_ip`` before it and ``complete_login`` after."""


FactorCheck = Callable[["KernelAPI", "Account"], "bool | Awaitable[bool]"]
"""``holds(kernel, account)`` of a ``SecondFactor``."""


@dataclass(frozen=True)
class SecondFactor:
    """A second sign-in step a pack offers after the password (a passkey).

    ``holds(kernel, account)`` says whether the account has what this step needs (a
    registered passkey, while passkeys are on). Such an account counts as having set up
    two-step verification (``security.require_mfa``) and, after its password, is asked
    for this step (or another one it holds: TOTP is the kernel's own, ``totp``). The
    pack's route checks the step against the pending sign-in with
    ``kernel.logins.begin_second_step`` and ends it with ``finish_second_step``.
    """

    name: str
    """The method's name: in the password step's ``mfaMethods`` and the ``auth.login``
    entry's ``secondFactor`` (``totp`` is taken by the kernel)."""
    holds: FactorCheck


@dataclass(frozen=True)
class SettingSpec:
    """One instance setting: key, type, default, visibility, validation.

    ``type`` is ``bool``, ``int`` (whole numbers), ``float`` (any number) or ``str``.
    Secret settings are encrypted at rest and masked in ``GET /settings``. ``group``
    names the section the settings screen shows it in (``GET /settings/schema``);
    empty, it follows from the key (see ``hostgate.services.settings.setting_group``).
    """

    key: str
    type: type
    default: Any
    public: bool = False
    nullable: bool = False
    secret: bool = False
    description: str = ""
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    max_length: int = 4096
    readonly: bool = False
    validate: Callable[[Any], None] | None = None
    group: str = ""


CommandRun = Callable[["KernelAPI"], Awaitable[str]]
"""``await run(kernel)``: one pack command's work; the text it returns is printed."""

CommandRunWithArguments = Callable[["KernelAPI", Mapping[str, Any]], Awaitable[str]]
"""``await run(kernel, arguments)``: an action that takes arguments (``CommandArgument``)."""


@dataclass(frozen=True)
class CommandArgument:
    """One argument of a pack command's action.

    ``name`` is a positional name (``file``) or an option (``--owner``); its value
    reaches ``run`` under the name without dashes, ``-`` as ``_`` (``dry_run``). A
    ``flag`` is an option without a value (True when given).
    """

    name: str
    help: str
    flag: bool = False
    required: bool = False
    default: str | None = None


@dataclass(frozen=True)
class CommandSpec:
    """A ``hostgate <name> <action>`` command a pack adds to the CLI.

    Each action runs with a started kernel that does not serve (``kernel.serving`` is
    False: no listener starts) and prints what its ``run`` returns. ``actions`` maps
    an action's name to its one-line help and its ``run``. An action named in
    ``arguments`` takes those arguments and its run is a ``CommandRunWithArguments``.
    An ``ApiError`` a run raises is printed as ``hostgate: <message>`` (exit status 1).
    """

    name: str
    help: str
    actions: Mapping[str, tuple[str, CommandRun | CommandRunWithArguments]]
    arguments: Mapping[str, Sequence[CommandArgument]] = field(default_factory=dict)


__all__ = [
    "AuditEvent",
    "ChannelSend",
    "ChannelSpec",
    "ChannelFactory",
    "CommandArgument",
    "CommandFactory",
    "CommandRun",
    "CommandRunWithArguments",
    "CommandSpec",
    "ConnectionField",
    "FilesFactory",
    "LoginMethod",
    "NotificationMessage",
    "ProtocolSpec",
    "SettingSpec",
    "StreamFactory",
    "TerminalFactory",
]
