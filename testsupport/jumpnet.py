"""A network only a jump host reaches, for testing connections that go through one.

Import the fixture into a test package's ``conftest.py``::

    from testsupport.jumpnet import jump_net  # noqa: F401

``jump_net`` (session-scoped) makes a Linux network namespace joined to the test's
namespace by a veth pair (``10.231.N.1`` here, ``10.231.N.2`` inside), and starts in it:

- ``jump``: a real OpenSSH sshd listening on ``10.231.N.2`` (reachable from the test);
- ``target``: a second sshd listening on the namespace's own ``127.0.0.1`` only;
- ``telnet``: the suite's telnetd behind its inetd, also on the namespace's loopback.

From the gateway, ``127.0.0.1:<target port>`` is its own loopback, where nothing listens:
the target and the telnet server are reachable through the jump host only. Needs root
(``ip netns``); when the namespace cannot be made the test fails under ``CI=true``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .peers import ROOT_DIR, free_port, launch, peer_unavailable, stop
from .sshd import SshdServer, start_sshd
from .telnetd import PASSWORD as TELNET_PASSWORD
from .telnetd import USERNAME as TELNET_USERNAME
from .telnetd import write_login_program


@dataclass
class TelnetBehind:
    """The telnet server inside the namespace."""

    host: str
    port: int
    home: Path
    username: str = TELNET_USERNAME
    password: str = TELNET_PASSWORD


@dataclass
class JumpNet:
    """The namespace and its servers."""

    namespace: str
    jump: SshdServer
    target: SshdServer
    telnet: TelnetBehind
    claim: NetClaim | None = None


CLAIMS = Path(tempfile.gettempdir()) / "hostgate-jumpnet-claims"
"""Where each live jump network holds the lock file of its number (one machine-wide)."""
NUMBERS = range(1, 251)
"""The numbers a jump network may take: its subnet ``10.231.N.0/30`` and its veth names."""


@dataclass
class NetClaim:
    """A number held by this process (an exclusive lock on its claim file) until released."""

    number: int
    fd: int

    def release(self) -> None:
        """Give the number back (the kernel also drops the lock when the process dies)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def claim_number(
    directory: Path = CLAIMS, in_use: Callable[[int], bool] = lambda number: False
) -> NetClaim:
    """The lowest number no live process holds and ``in_use`` does not report, locked for this one.

    Two xdist workers, or two suites on one machine, once picked their numbers at
    random (1 in 250 collided on the veth names and the subnet). A lock (``flock``)
    instead of a random pick: no two holders at once, and one that crashed frees its
    number by dying, so a claim file left behind never blocks a later run. A number
    whose interfaces exist all the same (a killed run's, or a run without claims) is
    skipped, never deleted: it may still be someone's.
    """
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    for number in NUMBERS:
        fd = os.open(directory / f"{number}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if in_use(number):
            os.close(fd)
            continue
        return NetClaim(number, fd)
    peer_unavailable("netns", f"every jump network number is held ({directory})")


def _ip(*args: str) -> None:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        peer_unavailable("netns", f"ip {' '.join(args)}: {proc.stderr.strip()[-300:]}")


def _in(namespace: str, *command: str) -> list[str]:
    return ["ip", "netns", "exec", namespace, *command]


def _wait_inside(namespace: str, host: str, port: int, timeout: float = 20.0) -> bool:
    """True once something accepts connections on host:port inside the namespace."""
    probe = (
        "import socket,sys,time\n"
        f"end=time.monotonic()+{timeout}\n"
        "while time.monotonic()<end:\n"
        "    try:\n"
        f"        socket.create_connection(({host!r},{port}),1).close(); sys.exit(0)\n"
        "    except OSError: time.sleep(0.1)\n"
        "sys.exit(1)\n"
    )
    return subprocess.run(_in(namespace, sys.executable, "-c", probe)).returncode == 0


def _start_sshd_inside(namespace: str, host: str) -> SshdServer:
    """An sshd (the suite's set-up: user, keys, config) started inside the namespace."""
    server = start_sshd(start=False)
    server.host = host
    server.port = free_port()
    server._write_config()
    command = _in(namespace, "/usr/sbin/sshd", "-D", "-e", "-f", str(server.config_path))
    Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
    server.process = launch("sshd", command, server.root / "sshd.log")
    if not _wait_inside(namespace, host, server.port):
        stop(server.process)
        peer_unavailable("sshd", f"did not start in {namespace}: {server.log()[-1000:]}")
    return server


def start_jump_net() -> tuple[JumpNet, list[subprocess.Popen[bytes]], Path]:
    """Make the namespace, link it and start its servers."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        peer_unavailable("netns", "network namespaces need root and iproute2")
    claim = claim_number(in_use=_link_exists)
    try:
        return _make_jump_net(claim)
    except BaseException:
        claim.release()
        raise


def _link_exists(number: int) -> bool:
    """Whether this machine has the outer veth interface of jump network ``number``."""
    found = subprocess.run(["ip", "link", "show", f"hgj{number}o"], capture_output=True)
    return found.returncode == 0


def _make_jump_net(claim: NetClaim) -> tuple[JumpNet, list[subprocess.Popen[bytes]], Path]:
    number = claim.number
    namespace = f"hgjump{os.getpid() % 10000}{number}"
    outside, inside = f"hgj{number}o", f"hgj{number}i"
    _ip("netns", "add", namespace)
    _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
    _ip("link", "set", inside, "netns", namespace)
    _ip("addr", "add", f"10.231.{number}.1/30", "dev", outside)
    _ip("link", "set", outside, "up")
    _ip("netns", "exec", namespace, "ip", "addr", "add", f"10.231.{number}.2/30", "dev", inside)
    _ip("netns", "exec", namespace, "ip", "link", "set", inside, "up")
    _ip("netns", "exec", namespace, "ip", "link", "set", "lo", "up")
    jump = _start_sshd_inside(namespace, f"10.231.{number}.2")
    target = _start_sshd_inside(namespace, "127.0.0.1")
    base = Path(tempfile.mkdtemp(prefix="hostgate-jump-telnet-"))
    home, login = write_login_program(base)
    port = free_port()
    command = _in(
        namespace, sys.executable, "-m", "testsupport.telnetd", "--port", str(port),
        "--login", str(login),
    )  # fmt: skip
    inetd = launch("telnetd", command, base / "inetd.log", cwd=ROOT_DIR)
    if not _wait_inside(namespace, "127.0.0.1", port):
        stop(inetd)
        peer_unavailable("telnetd", f"did not start in {namespace}")
    telnet = TelnetBehind(host="127.0.0.1", port=port, home=home)
    processes = [p for p in (jump.process, target.process, inetd) if p is not None]
    return JumpNet(namespace, jump, target, telnet, claim), processes, base


_early: tuple[JumpNet, list[subprocess.Popen[bytes]], Path] | None = None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Make the namespace before any test runs when a collected test needs it.

    Its veth interface appearing is a network change to a running Chromium, which
    then fails the requests it has in flight (``net::ERR_NETWORK_CHANGED``): made
    before the browser tests start, no page ever sees it.
    """
    global _early
    if session.config.option.collectonly:  # no test runs, so no fixture would tear it down
        return
    if any("jump_net" in getattr(item, "fixturenames", ()) for item in session.items):
        try:
            _early = start_jump_net()
        except BaseException:  # noqa: BLE001 - the fixture reports it in the test
            _early = None


def _tear_down(net: JumpNet, processes: list[subprocess.Popen[bytes]], base: Path) -> None:
    for process in processes:
        stop(process)
    subprocess.run(["ip", "netns", "del", net.namespace], capture_output=True)
    for path in (net.jump.root, net.target.root, base):
        shutil.rmtree(path, ignore_errors=True)
    if net.claim is not None:
        net.claim.release()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Tear down an early namespace no test took: every xdist worker collects every
    test, so each makes one, and only the worker that runs the tests uses it."""
    global _early
    if _early is not None:
        early, _early = _early, None
        _tear_down(*early)


@pytest.fixture(scope="session")
def jump_net() -> Iterator[JumpNet]:
    """The namespace with its jump sshd, target sshd and telnet server."""
    global _early
    net, processes, base = _early if _early is not None else start_jump_net()
    _early = None
    try:
        yield net
    finally:
        _tear_down(net, processes, base)
