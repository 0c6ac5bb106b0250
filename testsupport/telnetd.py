"""A real telnet server for tests: inetutils ``telnetd`` behind a tiny inetd.

Import the fixture into a test package's ``conftest.py``::

    from testsupport.telnetd import telnetd, telnetd_echoing  # noqa: F401

``telnetd`` (session-scoped) yields a :class:`TelnetServer` with ``host``, ``port``,
``username``, ``password`` and ``home``. Each TCP connection gets its own
``/usr/sbin/telnetd -h -E <login program>`` with the socket as stdin/stdout (what
inetd does), so option negotiation (TTYPE, NAWS, ECHO, SGA) is the real daemon's.
The login program is a small script: it asks ``login:`` and, with echo turned
off first as ``login`` does, ``Password:``; on the right answers it starts
``bash --norc -i`` with the prompt ``$ `` in ``home``, otherwise it prints
``Login incorrect`` and exits.

The inetd runs in a subprocess (``python -m testsupport.telnetd``) so its work
never competes with the test's event loop.
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .peers import free_port, launch_module, peer_unavailable, server_arguments, serving

TELNETD = "/usr/sbin/telnetd"
USERNAME = "tnuser"
PASSWORD = "tn-Test-passw0rd"

LOGIN_SCRIPT = """#!/bin/bash
printf 'Debian GNU/Linux test box\\r\\n'
printf 'login: '
read -r user
{echo_off}
printf 'Password: '
read -r pass
stty echo
printf '\\r\\n'
if [ "$user" = "{username}" ] && [ "$pass" = "{password}" ]; then
  cd "{home}"
  export HOME="{home}" PS1='$ ' PS2='> ' LANG=C.UTF-8
  exec bash --norc --noprofile -i
fi
printf 'Login incorrect\\r\\n'
exit 1
"""


@dataclass
class TelnetServer:
    """A running telnet server."""

    port: int
    home: Path
    process: subprocess.Popen[bytes]
    host: str = "127.0.0.1"
    username: str = USERNAME
    password: str = PASSWORD


def write_login_program(base: Path, *, echo_password: bool = False) -> tuple[Path, Path]:
    """The login program and the home it starts the shell in, under ``base``: (home, login)."""
    if not Path(TELNETD).exists():
        peer_unavailable("telnetd", f"{TELNETD} not installed (apt-get install inetutils-telnetd)")
    home = base / "home"
    home.mkdir()
    login = base / "login.sh"
    login.write_text(
        LOGIN_SCRIPT.format(
            username=USERNAME,
            password=PASSWORD,
            home=home,
            echo_off="" if echo_password else "stty -echo",
        )
    )
    login.chmod(0o755)
    return home, login


def start_server(*, echo_password: bool = False) -> tuple[TelnetServer, Path]:
    """Write the login program and start the inetd subprocess.

    ``echo_password`` leaves echo on at the password prompt (a badly behaved server).
    """
    if not Path(TELNETD).exists():
        peer_unavailable("telnetd", f"{TELNETD} not installed (apt-get install inetutils-telnetd)")
    base = Path(tempfile.mkdtemp(prefix="hostgate-telnetd-"))
    home, login = write_login_program(base, echo_password=echo_password)
    port = free_port()
    process = launch_module(
        "telnetd", "testsupport.telnetd", base, port, "--login", str(login), log="inetd.log"
    )
    return TelnetServer(port=port, home=home, process=process), base


@pytest.fixture(scope="session")
def telnetd() -> Iterator[TelnetServer]:
    """inetutils telnetd on a free port, one daemon per connection."""
    yield from serving(*start_server(echo_password=False))


@pytest.fixture(scope="session")
def telnetd_echoing() -> Iterator[TelnetServer]:
    """The same, but its login program echoes what is typed at the password prompt."""
    yield from serving(*start_server(echo_password=True))


def serve(port: int, login: str) -> None:
    """Accept connections and hand each to a fresh telnetd (inetd ``nowait``)."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    children: list[subprocess.Popen[bytes]] = []
    while True:
        connection, _ = listener.accept()
        with connection:
            children.append(
                subprocess.Popen(
                    [TELNETD, "-h", "-E", login],
                    stdin=connection,
                    stdout=connection,
                    stderr=subprocess.DEVNULL,
                )
            )
        children = [child for child in children if child.poll() is None]


def main() -> None:
    """Run the inetd until killed."""
    args = server_arguments(__doc__, "--login").parse_args()
    serve(args.port, str(args.login))


if __name__ == "__main__":
    main()
