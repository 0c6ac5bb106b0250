"""A real HAProxy in front of test gateway nodes: round robin, no stickiness, WebSockets.

    balancer = start_haproxy(tmp_path / "haproxy", [node_a.port, node_b.port])
    ... requests to balancer.url; each answer names its node in ``X-Hostgate-Node`` ...
    balancer.stop()

or the ``haproxy`` fixture: ``haproxy(ports)`` starts one for the test and stops it
after. When haproxy is missing or does not start, ``peer_unavailable`` fails the
test under ``CI=true`` and skips otherwise.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from .peers import launch_on_free_port, peer_unavailable, stop, which

CONFIG = Path(__file__).resolve().parent.parent / "docs" / "haproxy.cfg"
"""The configuration docs/cluster.md gives, run as written (its variables set here)."""


def haproxy_environment(port: int, node_ports: Sequence[int]) -> dict[str, str]:
    """The variables docs/haproxy.cfg reads: ``127.0.0.1:port`` in front of two nodes.

    One node is served as both servers (a baseline through the same balancer).
    """
    if len(node_ports) not in (1, 2):
        raise ValueError("docs/haproxy.cfg names two nodes")
    first, second = node_ports[0], node_ports[-1]
    return {
        "HOSTGATE_LB_BIND": f"127.0.0.1:{port}",
        "HOSTGATE_NODE1": f"127.0.0.1:{first}",
        "HOSTGATE_NODE2": f"127.0.0.1:{second}",
    }


@dataclass
class Balancer:
    """A running HAProxy."""

    port: int
    process: subprocess.Popen[bytes] | None
    directory: Path

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        """``ws://127.0.0.1:<port>``."""
        return f"ws://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """Stop HAProxy."""
        stop(self.process)
        self.process = None


def start_haproxy(directory: Path, node_ports: Sequence[int]) -> Balancer:
    """Start HAProxy (foreground, its log in ``directory``) in front of the nodes."""
    binary = which("haproxy", "/usr/sbin", "/usr/local/sbin")
    if binary is None:
        peer_unavailable("haproxy", "not installed (Debian package haproxy)")
    directory.mkdir(parents=True, exist_ok=True)

    def command(port: int) -> list[str]:
        variables = [f"{k}={v}" for k, v in haproxy_environment(port, node_ports).items()]
        return ["env", *variables, binary, "-db", "-f", str(CONFIG)]

    process, port = launch_on_free_port("haproxy", command, directory / "haproxy.log")
    return Balancer(port, process, directory)


@pytest.fixture
def haproxy(tmp_path: Path) -> Iterator[Callable[[Sequence[int]], Balancer]]:
    """``haproxy(node_ports)``: a balancer for this test, stopped after it."""
    started: list[Balancer] = []

    def start(node_ports: Sequence[int]) -> Balancer:
        balancer = start_haproxy(tmp_path / f"haproxy-{len(started)}", node_ports)
        started.append(balancer)
        return balancer

    yield start
    for balancer in started:
        balancer.stop()
        shutil.rmtree(balancer.directory, ignore_errors=True)
