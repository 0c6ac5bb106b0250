"""The pack's hooks: the ``ftp`` file protocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hostgate import (
    ConnectionField,
    ConnectionTarget,
    KernelAPI,
    ProtocolSpec,
    RemoteFiles,
    hookimpl,
)

FTP_FIELDS = (
    ConnectionField(
        "ftps",
        bool,
        default=False,
        description="Explicit FTPS: upgrade with AUTH TLS before login (certificates verified "
        "unless the connection skips certificate validation)",
    ),
)


async def _open_files(kernel: KernelAPI, target: ConnectionTarget) -> RemoteFiles:
    from .files import open_files

    return await open_files(kernel, target)


@hookimpl
def register_protocols() -> Sequence[ProtocolSpec]:
    """``ftp``: list, download, upload, mkdir, delete, rename and stat."""
    return [
        ProtocolSpec(
            name="ftp",
            default_port=21,
            title="FTP",
            fields=FTP_FIELDS,
            open_files=_open_files,
            file_attributes="basic",
            stat_fields=("size", "mtime", "isDirectory"),
            jump_hosts=True,
        )
    ]


@hookimpl
def register_permissions() -> Mapping[str, Sequence[str]]:
    """Using ftp connections."""
    return {"connections": ["connections.use_ftp"]}
