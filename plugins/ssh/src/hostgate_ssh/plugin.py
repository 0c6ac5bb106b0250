"""The pack's hooks: the ``ssh`` and ``sftp`` protocols."""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence

from hostgate import (
    ConnectionField,
    ConnectionTarget,
    KernelAPI,
    ProtocolSpec,
    RemoteFiles,
    Terminal,
    TerminalSize,
    hookimpl,
)

SSH_FIELDS = (
    ConnectionField("passphrase", str, secret=True, description="Passphrase of the private key"),
)
TERMINAL_FIELDS = (
    *SSH_FIELDS,
    ConnectionField(
        "promptOnConnect",
        bool,
        default=False,
        description="The browser sends the password when a terminal opens (never stored)",
    ),
    ConnectionField(
        "allowPortForwarding",
        bool,
        default=False,
        description=(
            "Users may open ssh -L tunnels through the SSH gateway to this server; each is audited"
        ),
    ),
)


async def _open_files(kernel: KernelAPI, target: ConnectionTarget) -> RemoteFiles:
    from .sftp import open_files

    return await open_files(kernel, target)


async def _fetch_host_key(target: ConnectionTarget) -> tuple[str, bytes]:
    from .client import fetch_host_key

    return await fetch_host_key(target)


async def _open_tunnel(hops: Sequence[ConnectionTarget], host: str, port: int) -> socket.socket:
    from .tunnel import open_tunnel

    return await open_tunnel(hops, host, port)


async def _open_terminal(
    kernel: KernelAPI, target: ConnectionTarget, size: TerminalSize
) -> Terminal:
    from .terminal import open_terminal

    return await open_terminal(kernel, target, size)


async def _open_command(
    kernel: KernelAPI, target: ConnectionTarget, command: str, size: TerminalSize | None
) -> Terminal:
    from .terminal import open_command

    return await open_command(kernel, target, command, size)


async def _open_channel(
    kernel: KernelAPI, target: ConnectionTarget, kind: str, value: str
) -> Terminal:
    from .terminal import open_channel

    return await open_channel(kernel, target, kind, value)


@hookimpl
def register_protocols() -> Sequence[ProtocolSpec]:
    """``ssh`` (terminal) and ``sftp`` (files; also serves ``ssh`` connections)."""
    return [
        ProtocolSpec(
            name="ssh",
            default_port=22,
            title="SSH",
            fields=TERMINAL_FIELDS,
            open_terminal=_open_terminal,
            open_command=_open_command,
            open_channel=_open_channel,
            fetch_host_key=_fetch_host_key,
            jump_hosts=True,
            open_tunnel=_open_tunnel,
        ),
        ProtocolSpec(
            name="sftp",
            default_port=22,
            title="SFTP",
            fields=SSH_FIELDS,
            open_files=_open_files,
            fetch_host_key=_fetch_host_key,
            jump_hosts=True,
            accepts=("sftp", "ssh"),
            file_attributes="full",
            stat_fields=(
                "size",
                "mode",
                "permissions",
                "uid",
                "gid",
                "atime",
                "mtime",
                "isDirectory",
            ),
        ),
    ]


@hookimpl
def register_permissions() -> Mapping[str, Sequence[str]]:
    """Using ssh and sftp connections."""
    return {"connections": ["connections.use_ssh", "connections.use_sftp"]}
