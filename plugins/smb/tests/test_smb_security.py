"""Signing and encryption are smbprotocol's: a real smbd that requires both, each dialect.

The pack builds no signature and encrypts nothing itself; these tests show that the
pipelined transfers go through smbprotocol's signing and sealing against a server
that refuses what is not signed (``server signing = mandatory``) or not encrypted
(``smb encrypt = required`` on the ``sealed`` share), and that the server checks them.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hostgate import RemoteError, RemotePermissionDenied
from hostgate_smb import share as smb_share
from hostgate_smb.files import SmbFiles, open_files
from smbprotocol import Dialects
from smbprotocol.connection import Connection, SigningAlgorithms

from testsupport.samba import SambaServer, strict_samba  # noqa: F401
from testsupport.streams import file_digest, pattern, pattern_digest, read_all

from .conftest import smb_target

MIB = 1024 * 1024
SIZE = 24 * MIB + 12345
"""Past the first 1 MiB writes into 4 MiB ones, several in flight each way."""

DIALECTS = {
    "smb2.1-hmac-sha256": (Dialects.SMB_2_1_0, None),
    "smb3.0.2-aes-cmac": (Dialects.SMB_3_0_2, None),
    "smb3.1.1-aes-gmac": (Dialects.SMB_3_1_1, SigningAlgorithms.AES_GMAC),
}
"""Test id -> (the dialect the client offers alone, the signing algorithm 3.1.1 agrees on)."""


@pytest.fixture(params=sorted(DIALECTS))
def dialect(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The adapter's connections offer only this dialect."""
    chosen = DIALECTS[request.param][0]
    monkeypatch.setattr(
        smb_share.CreditWaitingConnection,
        "connect",
        functools.partialmethod(Connection.connect, dialect=chosen),
    )
    return str(request.param)


def workdir_in(server: SambaServer, share: str) -> tuple[str, Path]:
    """A fresh directory in ``share``: (share path, local path)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    local = server.share_dir(share) / name
    local.mkdir()
    local.chmod(0o777)
    return f"/{name}", local


@pytest.fixture
async def opened(strict_samba: SambaServer) -> AsyncIterator[list[SmbFiles]]:  # noqa: F811
    """The adapters a test opens (append them), closed after it."""
    adapters: list[SmbFiles] = []
    try:
        yield adapters
    finally:
        for adapter in adapters:
            await adapter.close()


async def round_trip(files: SmbFiles, base: str, local: Path) -> None:
    """Upload and download SIZE bytes through the pipelined paths; both arrive intact."""
    assert await files.write(f"{base}/big.bin", pattern(SIZE, seed=11)) == SIZE
    assert file_digest(local / "big.bin") == pattern_digest(SIZE, seed=11)
    assert await read_all(files, f"{base}/big.bin") == (local / "big.bin").read_bytes()


async def test_a_server_requiring_signatures_gets_them_on_every_transfer(
    strict_samba,  # noqa: F811
    dialect,
    opened,
):
    files = await open_files(None, smb_target(strict_samba))
    opened.append(files)
    base, local = workdir_in(strict_samba, "files")
    await round_trip(files, base, local)
    tree = files.share.ensure()
    connection = tree.session.connection
    assert tree.session.signing_required and tree.session.signing_key
    assert connection.dialect == DIALECTS[dialect][0]
    if connection.dialect == Dialects.SMB_3_1_1:
        assert connection.signing_algorithm_id == DIALECTS[dialect][1]

    # the server checks them: a request signed with another key creates nothing (and the
    # client cannot verify the answer either)
    tree.session.signing_key = bytes(len(tree.session.signing_key))
    with pytest.raises(RemoteError):
        await files.write(f"{base}/refused.bin", pattern(MIB, seed=12))
    assert [path.name for path in local.iterdir()] == ["big.bin"]  # not even a temporary


@pytest.mark.parametrize("dialect", ["smb3.0.2-aes-cmac", "smb3.1.1-aes-gmac"], indirect=True)
async def test_a_share_requiring_encryption_gets_every_transfer_encrypted(
    strict_samba,  # noqa: F811
    dialect,
    opened,
):
    files = await open_files(None, smb_target(strict_samba, share="sealed"))
    opened.append(files)
    base, local = workdir_in(strict_samba, "sealed")
    await round_trip(files, base, local)
    tree = files.share.ensure()
    assert tree.encrypt_data or tree.session.encrypt_data

    # the server decrypts them: a request sealed with another key creates nothing (smbd
    # drops the connection)
    tree.session.encryption_key = bytes(len(tree.session.encryption_key))
    with pytest.raises(RemoteError):
        await files.write(f"{base}/refused.bin", pattern(MIB, seed=12))
    assert [path.name for path in local.iterdir()] == ["big.bin"]  # not even a temporary


async def test_an_unencrypted_dialect_cannot_reach_a_sealed_share(strict_samba, opened):  # noqa: F811
    """SMB 2.1 has no encryption: the share refuses it rather than serve it in the clear."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            smb_share.CreditWaitingConnection,
            "connect",
            functools.partialmethod(Connection.connect, dialect=Dialects.SMB_2_1_0),
        )
        with pytest.raises(RemotePermissionDenied):
            opened.append(await open_files(None, smb_target(strict_samba, share="sealed")))
