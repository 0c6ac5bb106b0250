"""The pack's hooks: the ``telnet`` protocol and its permission."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hostgate import ConnectionTarget, KernelAPI, ProtocolSpec, Terminal, TerminalSize, hookimpl


async def _open_terminal(
    kernel: KernelAPI, target: ConnectionTarget, size: TerminalSize
) -> Terminal:
    from .terminal import open_terminal

    return await open_terminal(kernel, target, size)


@hookimpl
def register_protocols() -> Sequence[ProtocolSpec]:
    """``telnet``: a terminal; credentials, when stored, answer the login prompts."""
    return [
        ProtocolSpec(
            name="telnet",
            default_port=23,
            title="Telnet",
            open_terminal=_open_terminal,
            jump_hosts=True,
        )
    ]


@hookimpl
def register_permissions() -> Mapping[str, Sequence[str]]:
    """Using telnet connections."""
    return {"connections": ["connections.use_telnet"]}
