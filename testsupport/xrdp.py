"""A real ``xrdp`` server on 127.0.0.1 for tests (TLS security layer, no sesman).

Import the fixture into a test package's ``conftest.py``::

    from testsupport.xrdp import xrdp  # noqa: F401

``xrdp`` (session-scoped) yields an :class:`XrdpServer`: ``host``, ``port``,
``cert_der`` (the DER of the certificate xrdp presents) and ``cert_path`` (its
PEM file, usable as a trust store because the certificate is self-signed for
``127.0.0.1`` / ``localhost``).

The server runs ``xrdp --nodaemon --config <tmp>/xrdp.ini`` with
``security_layer=tls``, a freshly generated RSA certificate, ``fork=false`` and
its log in ``<root>/xrdp.log``. That carries a client through X.224 negotiation,
TLS and the MCS Connect exchange; logging in to a desktop (sesman, Xorg) is not
configured. When xrdp cannot start, ``peer_unavailable`` fails the test under
``CI=true`` and skips otherwise.

``start_xrdp(root, desktop=xvnc)`` puts a real desktop behind it instead: xrdp's
own VNC module (``libvnc.so``) connects straight to that Xvnc (no sesman), with the
clipboard (``cliprdr``) and dynamic channels on. xrdp holds the Xvnc's password
(as a gateway holds a VNC password) and first paints its login window, with no
field to fill: OK (or Enter) shows the Xvnc desktop through RDP.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from hostgate.security.tls import write_self_signed

from .peers import launch_on_free_port, log_text, peer_unavailable, serving, which
from .xvnc import XvncServer

XRDP_INI = """\
[Globals]
ini_version=1
fork=false
port=tcp://127.0.0.1:{port}
use_vsock=false
tcp_nodelay=true
security_layer=tls
crypt_level=high
certificate={cert}
key_file={key}
ssl_protocols=TLSv1.2, TLSv1.3
max_bpp=32

[Logging]
LogFile={log}
LogLevel=INFO
EnableSyslog=false

[Channels]
rdpdr=false
rdpsnd=false
drdynvc=false
cliprdr=false
rail=false
xrdpvr=false

[Xvnc]
name=Xvnc
lib=libvnc.so
username=ask
password=ask
ip=127.0.0.1
port=-1
"""

# xrdp in front of an Xvnc: its VNC module connects to that server directly.
DESKTOP_CHANNELS = """\
[Channels]
rdpdr=false
rdpsnd=false
drdynvc=true
cliprdr=true
rail=false
xrdpvr=false

[Desktop]
name=hostgate test desktop
lib=libvnc.so
username=na
password={vnc_password}
ip=127.0.0.1
port={vnc_port}
"""


@dataclass
class XrdpServer:
    """A running xrdp."""

    host: str
    port: int
    cert_der: bytes
    cert_path: Path
    root: Path
    process: subprocess.Popen[bytes]

    def log(self) -> str:
        """The server's log so far."""
        return log_text(self.root / "xrdp.log")


def make_self_signed(directory: Path) -> tuple[Path, Path, bytes]:
    """An RSA certificate for 127.0.0.1 / localhost: (cert PEM path, key PEM path, cert DER)."""
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert = write_self_signed(
        cert_path, key_path, common_name="hostgate xrdp test", days=2, rsa_key=True, ca=True
    )
    return cert_path, key_path, cert.public_bytes(serialization.Encoding.DER)


def _desktop_ini(port: int, cert: Path, key: Path, log: Path, desktop: XvncServer) -> str:
    plain = XRDP_INI.format(port=port, cert=cert, key=key, log=log)
    globals_and_logging = plain.split("[Channels]")[0]
    # xrdp joins no static channel at all unless allow_channels is on
    globals_and_logging = globals_and_logging.replace(
        "max_bpp=32\n", "max_bpp=16\nallow_channels=true\n"
    )
    return globals_and_logging + DESKTOP_CHANNELS.format(
        vnc_port=desktop.port, vnc_password=desktop.password or ""
    )


def start_xrdp(root: Path, desktop: XvncServer | None = None) -> XrdpServer:
    """Write the config and certificate, start xrdp, wait until it listens.

    With ``desktop``, xrdp shows that Xvnc's screen (see the module's docstring).
    """
    binary = which("xrdp", "/usr/sbin")
    if binary is None:
        peer_unavailable("xrdp", "xrdp not installed (apt-get install xrdp)")
    root.mkdir(parents=True, exist_ok=True)
    cert_path, key_path, cert_der = make_self_signed(root)
    config = root / "xrdp.ini"

    def command(port: int) -> list[str]:
        log = root / "xrdp.log"
        if desktop is None:
            config.write_text(XRDP_INI.format(port=port, cert=cert_path, key=key_path, log=log))
        else:
            config.write_text(_desktop_ini(port, cert_path, key_path, log, desktop))
        return [binary, "--nodaemon", "--config", str(config)]

    process, port = launch_on_free_port("xrdp", command, root / "xrdp.out", timeout=15, cwd=root)
    return XrdpServer("127.0.0.1", port, cert_der, cert_path=cert_path, root=root, process=process)


@pytest.fixture(scope="session")
def xrdp() -> Iterator[XrdpServer]:
    """xrdp with the TLS security layer and a self-signed certificate."""
    with tempfile.TemporaryDirectory(prefix="hg-xrdp-") as tmp:
        yield from serving(start_xrdp(Path(tmp)))
