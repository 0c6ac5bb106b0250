"""A real Samba ``smbd`` on a free 127.0.0.1 port, all of its state in a temp dir.

Shares:
- ``files``: writable by the test user ``alice`` (mapped to the Unix account
  running the tests, so it needs no system user of its own);
- ``public``: writable by guests (anonymous sessions);
- ``readonly``: readable by ``alice``, every write refused.

``start_samba(root, strict=True)`` (the ``strict_samba`` fixture) requires every
request of every session to be signed (``server signing = mandatory``) and serves
one more share, ``sealed``: like ``files``, but every request to it must be
encrypted (SMB 3).
"""

from __future__ import annotations

import getpass
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from testsupport.peers import free_port, launch, peer_unavailable, running, which

SAMBA_USER = "alice"
SAMBA_PASSWORD = "Samba-test-pw1"
SBIN = ("/usr/sbin", "/usr/local/sbin")


@dataclass(frozen=True)
class SambaServer:
    """Where the test smbd listens and what it serves."""

    host: str
    port: int
    username: str
    password: str
    root: Path

    def share_dir(self, share: str) -> Path:
        """The local directory behind a share."""
        return self.root / "shares" / share


SHARES = ("files", "public", "readonly", "sealed")

_SEALED = """
[sealed]
    path = {shares}/sealed
    read only = no
    guest ok = no
    valid users = {users}
    smb encrypt = required
"""


def _config(root: Path, port: int, unix_user: str, *, strict: bool = False) -> str:
    shares = root / "shares"
    signing = "mandatory" if strict else "default"
    return f"""[global]
    server signing = {signing}
    workgroup = HOSTGATE
    netbios name = HGTEST
    server role = standalone server
    smb ports = {port}
    interfaces = 127.0.0.1
    bind interfaces only = yes
    disable netbios = yes
    private dir = {root}/private
    lock directory = {root}/lock
    state directory = {root}/state
    cache directory = {root}/cache
    pid directory = {root}/pid
    ncalrpc dir = {root}/ncalrpc
    binddns dir = {root}/bind-dns
    log file = {root}/log/%m.log
    log level = 1
    passdb backend = tdbsam:{root}/passdb.tdb
    username map = {root}/users.map
    map to guest = Bad User
    guest account = {unix_user}
    server min protocol = SMB2_02
    load printers = no
    printing = bsd
    printcap name = /dev/null
    disable spoolss = yes
    unix extensions = no
    max log size = 1000

[files]
    path = {shares}/files
    read only = no
    guest ok = no
    valid users = {SAMBA_USER} {unix_user}

[public]
    path = {shares}/public
    read only = no
    guest ok = yes

[readonly]
    path = {shares}/readonly
    read only = yes
    guest ok = no
""" + (_SEALED.format(shares=shares, users=f"{SAMBA_USER} {unix_user}") if strict else "")


def start_samba(root: Path, *, strict: bool = False) -> tuple[SambaServer, subprocess.Popen[bytes]]:
    """Write the config, add the user, start smbd; ``peer_unavailable`` when it cannot.

    ``strict``: the server refuses any request that is not signed.
    """
    smbd = which("smbd", *SBIN)
    smbpasswd = which("smbpasswd", *SBIN)
    if smbd is None or smbpasswd is None:
        peer_unavailable("smbd", "samba (smbd, smbpasswd) is not installed")
    unix_user = getpass.getuser()
    for name in ("private", "lock", "state", "cache", "pid", "ncalrpc", "bind-dns", "log"):
        (root / name).mkdir(parents=True, exist_ok=True)
    for share in SHARES:
        directory = root / "shares" / share
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o777)
    (root / "users.map").write_text(f"{unix_user} = {SAMBA_USER}\n")
    port = free_port()
    conf = root / "smb.conf"
    conf.write_text(_config(root, port, unix_user, strict=strict))
    added = subprocess.run(
        [smbpasswd, "-c", str(conf), "-s", "-a", unix_user],
        input=f"{SAMBA_PASSWORD}\n{SAMBA_PASSWORD}\n".encode(),
        capture_output=True,
        timeout=30,
    )
    if added.returncode != 0:
        peer_unavailable("smbd", f"smbpasswd failed: {added.stderr.decode(errors='replace')}")
    process = launch(
        "smbd",
        [smbd, "--foreground", "--no-process-group", "--debug-stdout", "-s", str(conf)],
        root / "log" / "smbd.out",
        port,
        timeout=30,
        # smbd signals its whole process group when it stops: give it its own.
        start_new_session=True,
    )
    server = SambaServer("127.0.0.1", port, SAMBA_USER, SAMBA_PASSWORD, root)
    return server, process


@pytest.fixture(scope="session")
def samba(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SambaServer]:
    """A running smbd for the whole test session."""
    server, process = start_samba(tmp_path_factory.mktemp("samba"))
    with running(process):
        yield server


@pytest.fixture(scope="module")
def strict_samba(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SambaServer]:
    """A running smbd that requires every request to be signed, for one test module."""
    server, process = start_samba(tmp_path_factory.mktemp("samba-strict"), strict=True)
    with running(process):
        yield server
