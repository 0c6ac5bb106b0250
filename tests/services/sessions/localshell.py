"""A test plugin: the ``localshell`` terminal protocol, a real bash under a local PTY.

The kernel's terminal machinery is protocol-agnostic; this backend lets its tests
run real shells without an SSH server (the ssh and telnet packs test their own).
"""

from __future__ import annotations

import tempfile
from typing import Any

from hostgate import ConnectionTarget, ProtocolSpec, TerminalSize, hookimpl

from testsupport.asyncssh_shell import SHELL, PtyProcess, shell_env


class LocalTerminal:
    """A ``Terminal`` over a local PTY."""

    term_type = "xterm-256color"
    shell = "/bin/bash"

    def __init__(self, process: PtyProcess) -> None:
        self.process = process

    async def read(self) -> bytes:
        return await self.process.read()

    async def write(self, data: bytes) -> None:
        await self.process.write(data)

    async def resize(self, size: TerminalSize) -> None:
        self.process.resize(size.cols, size.rows)

    async def close(self) -> None:
        await self.process.close()


async def open_terminal(kernel: Any, target: ConnectionTarget, size: TerminalSize) -> LocalTerminal:
    home = str(target.extra.get("home") or tempfile.gettempdir())
    process = await PtyProcess.spawn(
        SHELL, cols=size.cols, rows=size.rows, env=shell_env(home), cwd=home
    )
    return LocalTerminal(process)


@hookimpl
def register_protocols() -> list[ProtocolSpec]:
    return [ProtocolSpec(name="localshell", default_port=1, open_terminal=open_terminal)]


@hookimpl
def register_permissions() -> dict[str, list[str]]:
    # connections.use_rdp stands in for the rdp pack (browser-recorded RDP sessions).
    return {"connections": ["connections.use_localshell", "connections.use_rdp"]}
