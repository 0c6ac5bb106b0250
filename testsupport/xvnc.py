"""A real TigerVNC ``Xvnc`` server on 127.0.0.1 for tests.

Import the fixtures into a test package's ``conftest.py``::

    from testsupport.xvnc import xvnc, xvnc_open  # noqa: F401

Both are session-scoped and yield an :class:`XvncServer` (``host``, ``port``,
``password``, ``width``, ``height``, ``desktop``, ``display`` such as ``":41"`` for X
clients of :mod:`testsupport.xdisplay`):

- ``xvnc``: ``-SecurityTypes VncAuth`` with a password file written here in the
  DES-obfuscated format ``vncpasswd`` produces (the fixed VNC key).
- ``xvnc_open``: ``-SecurityTypes None`` (no authentication).

Each runs ``Xvnc :<free display> -rfbport <free port> -localhost -nolisten tcp``
with an 800x600 (resp. 640x480) screen and the blacklist off, so that tests of
wrong passwords do not lock the next test out. Its log is ``<root>/xvnc.log``.
When Xvnc cannot start, ``peer_unavailable`` fails the test under ``CI=true``
and skips otherwise.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher, modes

from .peers import launch_on_free_port, log_text, peer_unavailable, serving, which

# The key vncpasswd obfuscates stored passwords with (d3des bit order).
OBFUSCATION_KEY = bytes([23, 82, 107, 6, 35, 78, 88, 7])
TEST_PASSWORD = "vnc-Pw7!"


@dataclass
class XvncServer:
    """A running Xvnc."""

    host: str
    port: int
    password: str | None
    width: int
    height: int
    desktop: str
    root: Path
    process: subprocess.Popen[bytes]
    display: str = ""

    def log(self) -> str:
        """The server's log so far."""
        return log_text(self.root / "xvnc.log")


def _reverse_bits(data: bytes) -> bytes:
    return bytes(int(f"{byte:08b}"[::-1], 2) for byte in data)


def obfuscated_password(password: str) -> bytes:
    """The 8 bytes ``vncpasswd -f`` writes for ``password``."""
    plain = password.encode()[:8].ljust(8, b"\0")
    encryptor = Cipher(TripleDES(_reverse_bits(OBFUSCATION_KEY)), modes.ECB()).encryptor()
    return encryptor.update(plain) + encryptor.finalize()


def _free_display() -> int:
    for number in range(40, 400):
        if (
            not Path(f"/tmp/.X{number}-lock").exists()
            and not Path(f"/tmp/.X11-unix/X{number}").exists()
        ):
            return number
    peer_unavailable("Xvnc", "no free X display number")


def start_xvnc(
    root: Path, *, password: str | None, width: int, height: int, desktop: str
) -> XvncServer:
    """Start Xvnc (VncAuth when ``password`` is given, else None); wait until it listens."""
    binary = which("Xvnc") or which("Xtigervnc")
    if binary is None:
        peer_unavailable("Xvnc", "Xvnc not installed (apt-get install tigervnc-standalone-server)")
    root.mkdir(parents=True, exist_ok=True)
    security = ["-SecurityTypes", "None"]
    if password is not None:
        password_file = root / "passwd"
        password_file.write_bytes(obfuscated_password(password))
        password_file.chmod(0o600)
        security = ["-SecurityTypes", "VncAuth", "-PasswordFile", str(password_file)]

    chosen: dict[str, str] = {}

    def command(port: int) -> list[str]:
        chosen["display"] = f":{_free_display()}"
        return [
            binary,
            chosen["display"],
            "-rfbport",
            str(port),
            "-localhost",
            "-nolisten",
            "tcp",
            "-geometry",
            f"{width}x{height}",
            "-depth",
            "24",
            "-desktop",
            desktop,
            "-UseBlacklist=0",
            *security,
        ]

    process, port = launch_on_free_port("Xvnc", command, root / "xvnc.log", timeout=15, cwd=root)
    return XvncServer(
        host="127.0.0.1",
        port=port,
        password=password,
        width=width,
        height=height,
        desktop=desktop,
        root=root,
        process=process,
        display=chosen["display"],
    )


def _fixture(
    prefix: str, *, password: str | None, width: int, height: int, desktop: str
) -> Iterator[XvncServer]:
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield from serving(
            start_xvnc(Path(tmp), password=password, width=width, height=height, desktop=desktop)
        )


@pytest.fixture(scope="session")
def xvnc() -> Iterator[XvncServer]:
    """Xvnc with VNC Authentication (password ``TEST_PASSWORD``), 800x600."""
    yield from _fixture(
        "hg-xvnc-", password=TEST_PASSWORD, width=800, height=600, desktop="hostgate-vnc-test"
    )


@pytest.fixture(scope="session")
def xvnc_open() -> Iterator[XvncServer]:
    """Xvnc without authentication (security type None), 640x480."""
    yield from _fixture(
        "hg-xvnc-open-", password=None, width=640, height=480, desktop="hostgate-open-desktop"
    )
