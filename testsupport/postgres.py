"""A real PostgreSQL server for the storage tests, started once per test session."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .peers import free_port, peer_unavailable, stop, wait_for_port

PG_BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)


def _pg_bin(name: str) -> str | None:
    for directory in PG_BIN_DIRS:
        if (directory / name).exists():
            return str(directory / name)
    return shutil.which(name)


def _accepting(port: int, timeout: float) -> bool:
    """Wait until the server takes connections: it listens while still starting up
    (recovery), when a connection is refused with "the database system is starting up"."""
    ready = _pg_bin("pg_isready")
    if ready is None:
        return True  # the port was open: the best sign left
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        probe = [ready, "-q", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
        if subprocess.run(probe, capture_output=True).returncode == 0:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """``host:port`` of a throwaway PostgreSQL cluster (user ``postgres``, trust auth)."""
    initdb, postgres = _pg_bin("initdb"), _pg_bin("postgres")
    if not initdb or not postgres:
        peer_unavailable("postgresql", "initdb/postgres not installed")
    try:
        pwd.getpwnam("postgres")
        run_as: list[str] = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    except KeyError:
        run_as = []
    base = Path(tempfile.mkdtemp(prefix="hg-pg-"))
    data = base / "data"
    if run_as:
        shutil.chown(base, "postgres")
    base.chmod(0o777)
    init = subprocess.run(
        [*run_as, initdb, "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync"],
        capture_output=True,
        text=True,
    )
    if init.returncode != 0:
        peer_unavailable("postgresql", init.stderr.strip()[-400:])
    port = free_port()
    process = subprocess.Popen(
        [
            *run_as,
            postgres,
            "-D",
            str(data),
            "-p",
            str(port),
            "-h",
            "127.0.0.1",
            "-k",
            str(base),
            "-F",
            "-c",
            "fsync=off",
            "-c",
            "full_page_writes=off",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if not wait_for_port(port, 30) or not _accepting(port, 30):
        stop(process)
        peer_unavailable("postgresql", "server did not start taking connections")
    yield f"127.0.0.1:{port}"
    stop(process)
    shutil.rmtree(base, ignore_errors=True)


def create_database(server: str, prefix: str = "hg_") -> str:
    """Create a fresh, empty database on ``server`` (host:port); its asyncpg URL.

    Runs its own event loop: call it from synchronous code (a fixture), not from a
    coroutine.
    """
    import asyncio

    import asyncpg

    name = prefix + uuid.uuid4().hex[:12]
    host, port = server.split(":")

    async def create() -> None:
        conn = await asyncpg.connect(
            host=host, port=int(port), user="postgres", database="postgres"
        )
        await conn.execute(f'CREATE DATABASE "{name}"')
        await conn.close()

    asyncio.run(create())
    return f"postgresql+asyncpg://postgres@{server}/{name}"


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh, empty database on the session's server, as an asyncpg URL."""
    yield create_database(postgres_server)
