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

CONFIG = """\
global
    maxconn 1024

defaults
    mode http
    option http-server-close
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    # an open terminal or desktop socket may stay quiet for long
    timeout tunnel 1h

frontend gateway
    bind 127.0.0.1:{port}
    default_backend nodes

backend nodes
    # round robin and no stickiness: any node answers any request, sockets included
    balance roundrobin
    option httpchk GET /api/v1/health
    http-check expect status 200
    # which node answered (tests read it)
    http-response set-header X-Hostgate-Node %s
{servers}
"""


def haproxy_config(port: int, node_ports: Sequence[int]) -> str:
    """The configuration: ``127.0.0.1:port`` in front of the nodes on ``node_ports``."""
    servers = "\n".join(
        f"    server node{index} 127.0.0.1:{node} check inter 1s fall 2 rise 1"
        for index, node in enumerate(node_ports, start=1)
    )
    return CONFIG.format(port=port, servers=servers)


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
    config = directory / "haproxy.cfg"

    def command(port: int) -> list[str]:
        config.write_text(haproxy_config(port, node_ports))
        return [binary, "-db", "-f", str(config)]

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
