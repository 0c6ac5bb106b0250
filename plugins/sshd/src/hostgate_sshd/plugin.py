"""The pack's hooks: the listener's setting, its start and stop, and its routes."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hostgate import AuditEvent, CommandArgument, CommandSpec, KernelAPI, SettingSpec, hookimpl

if TYPE_CHECKING:
    from quart import Blueprint

log = logging.getLogger("hostgate.sshd")

LISTEN_SETTING = "sshd.listen_address"
LISTEN_ENV = "HOSTGATE_SSHD_LISTEN"
DEFAULT_LISTEN = "127.0.0.1:2222"
STATE_KEY = "sshd.server"
DOOR_NAME = "ssh"
"""How the door announces itself to other packs (``kernel.front_door.doors``)."""
CA_SETTING = "sshd.trusted_user_ca_keys"
WEB_URL_SETTING = "sshd.web_url"
AGENT_SETTING = "sshd.agent_forwarding"
MAX_CA_TEXT = 64 * 1024
REVOKED_SETTING = "sshd.revoked_keys"
MAX_REVOKED_TEXT = 256 * 1024


def parse_listen(text: str) -> tuple[str, int] | None:
    """``host:port`` (``[v6]:port``) as a pair; None for ``""`` or ``off`` (not listening).

    ValueError for anything else.
    """
    text = text.strip()
    if text.lower() in {"", "off"}:
        return None
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    if (
        not sep
        or not host
        or not (port_text.isascii() and port_text.isdigit())
        or not 0 <= int(port_text) <= 65535
    ):
        raise ValueError(f"{text!r} is not host:port (such as 127.0.0.1:2222) or off")
    return host, int(port_text)


def _check_listen(value: Any) -> None:
    parse_listen(str(value))


def _check_web_url(value: Any) -> None:
    text = str(value).strip()
    if text and (
        not text.startswith(("https://", "http://"))
        or not text.isprintable()
        or any(ch.isspace() for ch in text)
    ):
        raise ValueError("an http(s):// address such as https://gateway.example.org, or empty")


def _check_ca_keys(value: Any) -> None:
    from .certs import parse_ca_keys  # asyncssh: loaded when the setting is changed

    parse_ca_keys(str(value))


def _check_revoked(value: Any) -> None:
    from .revocation import parse_revocations

    parse_revocations(str(value))


SSHD_SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        LISTEN_SETTING,
        str,
        DEFAULT_LISTEN,
        max_length=300,
        validate=_check_listen,
        description=(
            "Where the SSH front door listens (host:port, or off); read at start-up, "
            f"the {LISTEN_ENV} environment variable wins"
        ),
        group="sshd",
    ),
    SettingSpec(
        WEB_URL_SETTING,
        str,
        "",
        max_length=500,
        validate=_check_web_url,
        description=(
            "The browser app's address (https://gateway.example.org) in the link the "
            "front door prints for a browser approval; empty: the path alone"
        ),
        group="sshd",
    ),
    SettingSpec(
        CA_SETTING,
        str,
        "",
        max_length=MAX_CA_TEXT,
        validate=_check_ca_keys,
        description=(
            "OpenSSH CA public keys (one per line) whose user certificates sign in; "
            "a certificate's principal is the hostgate user name"
        ),
        group="sshd",
    ),
    SettingSpec(
        REVOKED_SETTING,
        str,
        "",
        max_length=MAX_REVOKED_TEXT,
        validate=_check_revoked,
        description=(
            "Revoked keys and certificates, as ssh-keygen's KRL specification (key:, hash:, "
            "and serial: or id: after a ca: line); refused at sign-in, and open sessions "
            "signed in with them close at once"
        ),
        group="sshd",
    ),
    SettingSpec(
        AGENT_SETTING,
        bool,
        False,
        description=(
            "Let front-door users forward their ssh-agent (ssh -A) to the server's shells "
            "and commands; off: refused with a message and an audit entry"
        ),
        group="sshd",
    ),
)


@hookimpl
def register_settings() -> Sequence[SettingSpec]:
    """The listen address, the web URL, the trusted user CAs and agent forwarding."""
    return SSHD_SETTINGS


@hookimpl
def register_blueprints() -> Sequence[Blueprint]:
    """``/profile/ssh-keys``, ``/users/:id/ssh-keys`` and ``/sshd/host-keys``."""
    from .routes import blueprint

    return [blueprint]


async def _print_host_keys(kernel: KernelAPI) -> str:
    from .keys import host_key_views, load_host_keys, load_jump_host_key

    views = host_key_views(await load_host_keys(kernel))
    [jump] = host_key_views([await load_jump_host_key(kernel)])
    lines = [f"{view.algorithm} {view.fingerprint}" for view in views]
    lines.append(f"{jump.algorithm} {jump.fingerprint} (ProxyJump: every connection's name)")
    return "\n".join(lines)


async def _write_krl(kernel: KernelAPI, arguments: Mapping[str, Any]) -> str:
    from pathlib import Path

    from .revocation import export_krl, parse_revocations

    revocations = parse_revocations(str(kernel.settings.get(REVOKED_SETTING) or ""))
    krl = await export_krl(revocations, str(kernel.settings.get(CA_SETTING) or ""))
    path = Path(str(arguments["file"]))
    path.write_bytes(krl)
    return f"wrote the KRL ({len(krl)} bytes) to {path}; sshd reads it with RevokedKeys {path}"


@hookimpl
def register_commands() -> Sequence[CommandSpec]:
    """``hostgate sshd host-keys`` (the fingerprints users check) and ``sshd krl FILE``."""
    return [
        CommandSpec(
            name="sshd",
            help="the SSH front door",
            actions={
                "host-keys": (
                    "print the front door's host-key fingerprints (made on first use)",
                    _print_host_keys,
                ),
                "krl": (
                    f"write the revoked keys and certificates ({REVOKED_SETTING}) "
                    "as an OpenSSH KRL file (ssh-keygen -k)",
                    _write_krl,
                ),
            },
            arguments={"krl": [CommandArgument("file", "where to write the KRL")]},
        )
    ]


@hookimpl
async def track_event(event: AuditEvent, kernel: KernelAPI) -> None:
    """A change of the revoked keys closes the sessions signed in with what it revokes."""
    if event.event_type != "settings.updated":
        return
    from .revocation import close_revoked, parse_revocations, revoked_text

    text = revoked_text(event.details, REVOKED_SETTING)
    server = kernel.state.get(STATE_KEY)
    if text is None or server is None:
        return
    try:
        revocations = parse_revocations(text)
    except ValueError:  # never: the setting's validator refused it
        return
    await close_revoked(server, revocations)


def listen_address(kernel: KernelAPI) -> tuple[str, int] | None:
    """The address to listen on: the environment variable, else the setting."""
    configured = os.environ.get(LISTEN_ENV)
    if configured is None:
        configured = str(kernel.settings.get(LISTEN_SETTING))
    return parse_listen(configured)


@hookimpl
async def startup(kernel: KernelAPI) -> None:
    """Load (or make) the host keys and listen.

    A port that cannot be bound is logged and the gateway serves HTTP anyway: the
    web app must not go down because port 2222 is taken.
    """
    from .keys import load_host_keys, load_jump_host_key
    from .server import FrontDoorServer

    if not kernel.serving:  # a command-line process: no listener
        return
    server = FrontDoorServer(kernel)
    kernel.state[STATE_KEY] = server
    try:
        address = listen_address(kernel)
    except ValueError as bad:
        log.error("the SSH front door is off: %s: %s", LISTEN_ENV, bad)
        return
    if address is None:
        log.info("the SSH front door is off")
        return
    # made (an RSA key takes about half a second) only by a node that listens; the
    # API and the CLI make them on first use otherwise
    server.host_keys = await load_host_keys(kernel)
    server.jump_key = await load_jump_host_key(kernel)
    try:
        await server.start(address[0], address[1], server.host_keys)
    except OSError as exc:
        log.error("the SSH front door cannot listen on %s:%s: %s", *address, exc)
    # another worker may hold the port: clients still reach the door there
    kernel.front_door.announce(DOOR_NAME, server.port or address[1])


@hookimpl
async def shutdown(kernel: KernelAPI) -> None:
    """Stop listening and close every front-door connection."""
    server = kernel.state.pop(STATE_KEY, None)
    if server is not None:
        kernel.front_door.announce(DOOR_NAME, 0)
        await server.stop()
