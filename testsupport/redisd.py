"""A real Debian ``redis-server`` for tests: loopback TCP on a free port, no persistence.

``redis_server`` (function scope) starts one server in its own temporary directory
for the test and removes it after; the test may ``stop()`` and ``start()`` it again
on the same port (Redis down, Redis back). ``started_redis()`` does the same for a
fixture of a wider scope. When redis-server is missing or does not
start, ``peer_unavailable`` fails the test under ``CI=true`` and skips otherwise.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from testsupport.peers import launch, launch_on_free_port, peer_unavailable, stop, which


def _command(binary: str, directory: Path, port: int) -> list[str]:
    return [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(directory),
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        "--protected-mode",
        "yes",
        "--logfile",
        "",
    ]


@dataclass
class RedisServer:
    """A running redis-server the test owns."""

    binary: str
    directory: Path
    port: int
    process: subprocess.Popen[bytes] | None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        """Stop the server (its data is gone: nothing is persisted)."""
        stop(self.process)
        self.process = None

    def start(self) -> None:
        """Start it again on the same port."""
        if self.process is None:
            log = self.directory / "redis.log"
            self.process = launch(
                "redis-server", _command(self.binary, self.directory, self.port), log, self.port
            )


@contextlib.contextmanager
def started_redis() -> Iterator[RedisServer]:
    """A fresh redis-server in its own temporary directory, stopped and removed after."""
    binary = which("redis-server", "/usr/bin", "/usr/sbin", "/usr/local/bin")
    if binary is None:
        peer_unavailable("redis-server", "not installed (Debian package redis-server)")
    directory = Path(tempfile.mkdtemp(prefix="hostgate-redis-"))
    try:
        process, port = launch_on_free_port(
            "redis-server",
            lambda port: _command(binary, directory, port),
            directory / "redis.log",
        )
        server = RedisServer(binary, directory, port, process)
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A fresh redis-server for this test (see the module docstring)."""
    with started_redis() as server:
        yield server
