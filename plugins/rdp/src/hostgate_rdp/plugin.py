"""The pack's hooks: the ``rdp`` protocol and its permission."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hostgate import ConnectionTarget, KernelAPI, ProtocolSpec, Stream, hookimpl


async def _open_stream(kernel: KernelAPI, target: ConnectionTarget) -> Stream:
    from .relay import open_stream

    return await open_stream(kernel, target)


@hookimpl
def register_protocols() -> Sequence[ProtocolSpec]:
    """``rdp``: a relay socket at ``/ws/rdp-raw?connectionId=`` (IronRDP's path) and ``/ws/rdp``."""
    return [
        ProtocolSpec(
            name="rdp",
            default_port=3389,
            title="RDP",
            open_stream=_open_stream,
            socket_aliases=("rdp-raw",),
            jump_hosts=True,
        )
    ]


@hookimpl
def register_permissions() -> Mapping[str, Sequence[str]]:
    """Using rdp connections."""
    return {"connections": ["connections.use_rdp"]}
