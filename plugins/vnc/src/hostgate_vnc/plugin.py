"""The pack's hooks: the ``vnc`` protocol and its permission."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hostgate import ConnectionTarget, KernelAPI, ProtocolSpec, Stream, hookimpl


async def _open_stream(kernel: KernelAPI, target: ConnectionTarget) -> Stream:
    from .relay import open_stream

    return await open_stream(kernel, target)


@hookimpl
def register_protocols() -> Sequence[ProtocolSpec]:
    """``vnc``: a relay socket at ``/ws/vnc/<connectionId>`` (and ``/ws/vnc?connectionId=``).

    The relay does VNC authentication itself, so the password stays on the gateway.
    """
    return [
        ProtocolSpec(
            name="vnc",
            default_port=5900,
            title="VNC",
            open_stream=_open_stream,
            relay_authenticates=True,
            jump_hosts=True,
        )
    ]


@hookimpl
def register_permissions() -> Mapping[str, Sequence[str]]:
    """Using vnc connections."""
    return {"connections": ["connections.use_vnc"]}
