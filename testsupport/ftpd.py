"""Real FTP servers on free 127.0.0.1 ports, all state in temp dirs.

- ``vsftpd``: the Debian server, anonymous logins (as the unprivileged ``ftp``
  account) into a root whose ``pub`` directory is writable, explicit FTPS
  offered (not forced) with a self-signed certificate, no MLSD (so the LIST
  parser is exercised). The ``locked`` directory belongs to root: anonymous
  writes there are refused.
- ``pyftpd``: pyftpdlib in a subprocess with password users: ``alice`` (full
  rights) and ``reader`` (read-only); it speaks MLSD/MLST.
- ``start_pyftpd(base, pasv=...)``: the same server with a doctored passive-mode
  reply, for the relay's data-connection checks: ``masquerade:<ip>`` names another
  host in PASV replies (EPSV refused, so clients fall back to PASV), ``port:<n>``
  names port ``n`` in PASV and EPSV replies without listening there.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hostgate.security.tls import write_self_signed

from testsupport.peers import free_port, launch, peer_unavailable, running, which

FTP_USER = "alice"
FTP_PASSWORD = "Ftp-test-pw1"
READER_USER = "reader"
READER_PASSWORD = "Reader-pw-1"
SBIN = ("/usr/sbin", "/usr/local/sbin")


@dataclass(frozen=True)
class FtpServer:
    """Where a test FTP server listens and which directory it serves."""

    host: str
    port: int
    root: Path
    username: str | None = None
    password: str | None = None
    writable: str = "/"
    """The server path of a directory the test user may write to."""
    certificate: Path | None = None
    """The self-signed certificate offered for explicit FTPS, if any."""

    def local(self, path: str) -> Path:
        """The local file behind a server path."""
        return self.root / path.lstrip("/")


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """A certificate for ``localhost`` / 127.0.0.1 and its key, as PEM files."""
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    write_self_signed(cert_path, key_path, common_name="localhost", days=30)
    return cert_path, key_path


def _vsftpd_config(base: Path, root: Path, port: int, cert: Path, key: Path) -> str:
    return f"""listen=YES
listen_ipv6=NO
listen_address=127.0.0.1
listen_port={port}
background=NO
anonymous_enable=YES
no_anon_password=YES
anon_root={root}
anon_upload_enable=YES
anon_mkdir_write_enable=YES
anon_other_write_enable=YES
anon_world_readable_only=NO
anon_umask=022
write_enable=YES
local_enable=YES
pam_service_name=vsftpd
ftp_username=ftp
nopriv_user=nobody
secure_chroot_dir={base}/empty
allow_writeable_chroot=YES
pasv_enable=YES
pasv_address=127.0.0.1
port_enable=NO
seccomp_sandbox=NO
isolate=NO
isolate_network=NO
xferlog_enable=NO
vsftpd_log_file={base}/vsftpd.log
hide_ids=NO
use_localtime=NO
connect_from_port_20=NO
delay_failed_login=0
ssl_enable=YES
allow_anon_ssl=YES
force_local_data_ssl=NO
force_local_logins_ssl=NO
force_anon_logins_ssl=NO
force_anon_data_ssl=NO
require_ssl_reuse=NO
ssl_ciphers=HIGH
rsa_cert_file={cert}
rsa_private_key_file={key}
"""


def start_vsftpd(base: Path) -> tuple[FtpServer, subprocess.Popen[bytes]]:
    """Start vsftpd serving ``base/root`` anonymously; ``peer_unavailable`` when it cannot."""
    vsftpd = which("vsftpd", *SBIN)
    if vsftpd is None:
        peer_unavailable("vsftpd", "vsftpd is not installed")
    if os.geteuid() != 0:
        peer_unavailable("vsftpd", "vsftpd needs root to chroot anonymous sessions")
    try:
        pwd.getpwnam("ftp")
    except KeyError:
        peer_unavailable("vsftpd", "the 'ftp' account (created by the vsftpd package) is missing")
    root = base / "root"
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)  # vsftpd refuses a chroot its anonymous user can write to
    pub = root / "pub"
    pub.mkdir(exist_ok=True)
    pub.chmod(0o777)
    (base / "empty").mkdir(exist_ok=True)
    (base / "empty").chmod(0o755)
    locked = root / "locked"
    locked.mkdir(exist_ok=True)
    (locked / "keep.txt").write_text("root's file\n")
    locked.chmod(0o755)
    cert, key = self_signed_certificate(base)
    port = free_port()
    conf = base / "vsftpd.conf"
    conf.write_text(_vsftpd_config(base, root, port, cert, key))
    conf.chmod(0o600)
    process = launch("vsftpd", [vsftpd, str(conf)], base / "vsftpd.out", port)
    return FtpServer("127.0.0.1", port, root, writable="/pub", certificate=cert), process


_PYFTPD_SCRIPT = """
import sys
from pyftpdlib.authorizers import DummyAuthorizer
from pyftpdlib.handlers import FTPHandler
from pyftpdlib.servers import FTPServer

port, root = int(sys.argv[1]), sys.argv[2]
authorizer = DummyAuthorizer()
authorizer.add_user(sys.argv[3], sys.argv[4], root, perm="elradfmwMT")
authorizer.add_user(sys.argv[5], sys.argv[6], root, perm="elr")
handler = FTPHandler
handler.authorizer = authorizer
handler.banner = "hostgate test pyftpdlib"
handler.permit_foreign_addresses = False
handler.auth_failed_timeout = 0.1
pasv = sys.argv[7]
if pasv.startswith("masquerade:"):
    class Handler(FTPHandler):
        def ftp_EPSV(self, line):
            self.respond("502 EPSV is switched off on this server.")

    Handler.masquerade_address = pasv.split(":", 1)[1]
    handler = Handler
elif pasv.startswith("port:"):
    named = int(pasv.split(":", 1)[1])

    class Handler(FTPHandler):
        def ftp_PASV(self, line):
            self.respond("227 Entering passive mode (127,0,0,1,%d,%d)." % divmod(named, 256))

        def ftp_EPSV(self, line):
            self.respond("229 Entering extended passive mode (|||%d|)." % named)

    handler = Handler
server = FTPServer(("127.0.0.1", port), handler)
server.max_cons = 256
server.serve_forever(handle_exit=True)
"""


def start_pyftpd(base: Path, *, pasv: str = "") -> tuple[FtpServer, subprocess.Popen[bytes]]:
    """Start pyftpdlib with users alice (read-write) and reader (read-only).

    ``pasv`` doctors the passive-mode replies (see the module docstring).
    """
    root = base / "root"
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    users = [FTP_USER, FTP_PASSWORD, READER_USER, READER_PASSWORD]
    command = [sys.executable, "-c", _PYFTPD_SCRIPT, str(port), str(root), *users, pasv]
    process = launch("pyftpdlib", command, base / "pyftpd.out", port)
    return FtpServer("127.0.0.1", port, root, FTP_USER, FTP_PASSWORD), process


@pytest.fixture(scope="session")
def vsftpd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FtpServer]:
    """A running vsftpd (anonymous, writable root, FTPS offered) for the test session."""
    server, process = start_vsftpd(tmp_path_factory.mktemp("vsftpd"))
    with running(process):
        yield server


@pytest.fixture(scope="session")
def pyftpd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FtpServer]:
    """A running pyftpdlib server with password users for the test session."""
    server, process = start_pyftpd(tmp_path_factory.mktemp("pyftpd"))
    with running(process):
        yield server
