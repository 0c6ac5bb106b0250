"""A real OpenSSH ``sshd`` on 127.0.0.1 for tests, with a throwaway login user.

Import the fixtures into a test package's ``conftest.py``::

    from testsupport.sshd import private_sshd, sshd  # noqa: F401

``sshd`` (session-scoped) and ``private_sshd`` (one per test, for tests that
restart the server or change its host key) yield an :class:`SshdServer`:

- ``host`` (``"127.0.0.1"``), ``port``
- ``username`` (``hgtest``), ``password``: password login works
- ``private_key``: an ed25519 client key (OpenSSH PEM text) authorised for the user
- ``home``: the user's home directory (tests may create files there; use a
  per-test sub-directory)
- ``host_key_fingerprint``: ``SHA256:...`` of the current host key (OpenSSH style)
- ``restart_with_new_host_key()``: stop, generate another host key, start again on
  the same port (simulates a re-installed or impersonated server); returns the new
  fingerprint

The server runs ``/usr/sbin/sshd -D -e -f <tmp>/sshd_config`` with
``PasswordAuthentication yes``, ``UsePAM no``, ``StrictModes no``,
``AllowUsers hgtest`` and ``Subsystem sftp internal-sftp``; its log is
``<root>/sshd.log`` (``SshdServer.log()``). The user ``hgtest`` is created
idempotently with ``useradd`` (root only; CI runs as root). When sshd cannot
start, ``peer_unavailable`` fails the test under ``CI=true`` and skips otherwise.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh
import pytest

from .peers import free_port, launch, log_text, peer_unavailable, stop

SSHD = "/usr/sbin/sshd"
TEST_USER = "hgtest"
TEST_PASSWORD = "hg-test-Passw0rd"


def _retry(
    command: list[str], *, stdin: str | None = None, ok_codes: tuple[int, ...] = (0,)
) -> None:
    """Run a user-database command, retrying while another process holds its lock."""
    last = ""
    for _ in range(40):
        proc = subprocess.run(command, input=stdin, capture_output=True, text=True)
        if proc.returncode in ok_codes:
            return
        last = (proc.stderr or proc.stdout).strip()
        time.sleep(0.25)
    peer_unavailable("sshd", f"{' '.join(command[:1])} failed: {last[-300:]}")


def ensure_test_user() -> Path:
    """Create ``hgtest`` (idempotent) with the known password; return its home directory."""
    if os.geteuid() != 0:
        peer_unavailable("sshd", "creating the test user needs root")
    try:
        entry = pwd.getpwnam(TEST_USER)
    except KeyError:
        # exit code 9: created meanwhile by a parallel test run
        _retry(["useradd", "-m", "-s", "/bin/bash", TEST_USER], ok_codes=(0, 9))
        entry = pwd.getpwnam(TEST_USER)
    _retry(["chpasswd"], stdin=f"{TEST_USER}:{TEST_PASSWORD}\n")
    home = Path(entry.pw_dir)
    if not home.exists():
        home.mkdir(parents=True)
        shutil.chown(home, entry.pw_uid, entry.pw_gid)
    return home


def _fingerprint(key: asyncssh.SSHKey) -> str:
    return str(key.get_fingerprint("sha256"))


@dataclass
class SshdServer:
    """One sshd process and everything a test needs to log in to it."""

    root: Path
    port: int
    home: Path
    private_key: str
    public_key: str
    host: str = "127.0.0.1"
    username: str = TEST_USER
    password: str = TEST_PASSWORD
    host_key_fingerprint: str = ""
    extra_config: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    @property
    def config_path(self) -> Path:
        """The sshd_config in use."""
        return self.root / "sshd_config"

    @property
    def host_key_path(self) -> Path:
        """The host private key file."""
        return self.root / "ssh_host_ed25519_key"

    def log(self) -> str:
        """The server's log so far (for assertion messages)."""
        return log_text(self.root / "sshd.log")

    def _write_host_key(self) -> None:
        key = asyncssh.generate_private_key("ssh-ed25519")
        self.host_key_path.write_bytes(key.export_private_key("openssh"))
        self.host_key_path.chmod(0o600)
        self.host_key_fingerprint = _fingerprint(key)

    def _write_config(self) -> None:
        options = {
            "ListenAddress": f"{self.host}:{self.port}",
            "HostKey": str(self.host_key_path),
            "PidFile": str(self.root / "sshd.pid"),
            "AuthorizedKeysFile": str(self.root / "authorized_keys" / "%u"),
            "PasswordAuthentication": "yes",
            "KbdInteractiveAuthentication": "no",
            "PubkeyAuthentication": "yes",
            "UsePAM": "no",
            "StrictModes": "no",
            "PermitRootLogin": "no",
            "AllowUsers": self.username,
            "Subsystem": "sftp internal-sftp",
            "UseDNS": "no",
            "PrintMotd": "no",
            "MaxStartups": "300",
            "MaxSessions": "300",
            "MaxAuthTries": "10",
            "LogLevel": "VERBOSE",
            **self.extra_config,
        }
        text = "".join(f"{name} {value}\n" for name, value in options.items())
        self.config_path.write_text(text)

    def start(self) -> None:
        """Start sshd (config and host key must exist) and wait until it listens."""
        Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
        self._write_config()
        command = [SSHD, "-D", "-e", "-f", str(self.config_path)]
        self.process = launch("sshd", command, self.root / "sshd.log", self.port, host=self.host)

    def stop(self) -> None:
        """Stop the server (idempotent)."""
        stop(self.process)
        self.process = None

    def restart_with_new_host_key(self) -> str:
        """Restart on the same port with a freshly generated host key; the new fingerprint."""
        self.stop()
        self._write_host_key()
        self.start()
        return self.host_key_fingerprint


def start_sshd(extra_config: dict[str, str] | None = None, *, start: bool = True) -> SshdServer:
    """Create the user, keys and config in a fresh directory and start sshd.

    With ``start=False`` nothing is started (a caller that runs it elsewhere, e.g. in a
    network namespace, writes the config and starts it).
    """
    if not Path(SSHD).exists():
        peer_unavailable("sshd", f"{SSHD} not installed (apt-get install openssh-server)")
    home = ensure_test_user()
    # sshd reads authorized_keys as the user: the directory must be traversable by it.
    root = Path(tempfile.mkdtemp(prefix="hostgate-sshd-"))
    root.chmod(0o711)
    keys_dir = root / "authorized_keys"
    keys_dir.mkdir(mode=0o755)
    client = asyncssh.generate_private_key("ssh-ed25519", comment="hostgate-test")
    public = client.export_public_key("openssh").decode()
    (keys_dir / TEST_USER).write_text(public)
    (keys_dir / TEST_USER).chmod(0o644)
    server = SshdServer(
        root=root,
        port=free_port(),
        home=home,
        private_key=client.export_private_key("openssh").decode(),
        public_key=public.strip(),
        extra_config=dict(extra_config or {}),
    )
    server._write_host_key()
    if start:
        server.start()
    return server


def _teardown(server: SshdServer) -> None:
    server.stop()
    shutil.rmtree(server.root, ignore_errors=True)


@pytest.fixture(scope="session")
def sshd() -> Iterator[SshdServer]:
    """A shared sshd for the whole test session. Do not restart it: use ``private_sshd``."""
    server = start_sshd()
    try:
        yield server
    finally:
        _teardown(server)


@pytest.fixture
def private_sshd() -> Iterator[SshdServer]:
    """An sshd of this test's own (safe to restart or re-key)."""
    server = start_sshd()
    try:
        yield server
    finally:
        _teardown(server)
