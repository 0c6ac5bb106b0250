"""The pack's hooks: the ``smb`` file protocol."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from hostgate import (
    ConnectionField,
    ConnectionTarget,
    KernelAPI,
    ProtocolSpec,
    RemoteFiles,
    hookimpl,
)

SMB_FIELDS = (
    ConnectionField(
        "share",
        str,
        description=(
            "Name of the share to open, e.g. 'public' for \\\\host\\public; leave it empty"
            " to browse every share (then '/' lists the shares and the first path segment"
            " names one)"
        ),
    ),
    ConnectionField("domain", str, description="Windows domain or workgroup of the user"),
)


async def _open_files(kernel: KernelAPI, target: ConnectionTarget) -> RemoteFiles:
    from .files import open_files

    return await open_files(kernel, target)


@hookimpl
def register_protocols() -> Sequence[ProtocolSpec]:
    """``smb``: list, download, upload, mkdir, delete and rename on one share or all of them."""
    return [
        ProtocolSpec(
            name="smb",
            default_port=445,
            title="SMB",
            fields=SMB_FIELDS,
            open_files=_open_files,
            file_attributes="basic",
        )
    ]


@hookimpl
def register_permissions() -> Mapping[str, Sequence[str]]:
    """Using smb connections."""
    return {"connections": ["connections.use_smb"]}


@hookimpl
def startup(kernel: KernelAPI) -> None:
    """Keep smbprotocol below DEBUG: it renders every message (file data too) into its logs."""
    library = logging.getLogger("smbprotocol")
    library.setLevel(max(logging.INFO, library.getEffectiveLevel()))
