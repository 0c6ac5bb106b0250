"""Helpers for starting real servers on 127.0.0.1 for tests."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn, Protocol, TypeVar

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
ROOT_DIR = Path(__file__).resolve().parent.parent
"""The repository root: where ``python -m testsupport.<server>`` runs."""


def peer_unavailable(name: str, reason: str) -> NoReturn:
    """A real peer cannot start: fail under CI=true, skip on a developer machine."""
    message = f"real peer {name} unavailable: {reason}"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def free_port() -> int:
    """A free TCP port on 127.0.0.1.

    Nothing holds it once this returns: any socket may take it before the server meant
    for it binds (see :func:`reserve_port` for a server that binds with SO_REUSEADDR).
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def reserve_port() -> socket.socket:
    """A socket bound to a free port on 127.0.0.1 (not listening), to hold that port for
    a server that binds it later with SO_REUSEADDR (``hostgate serve``, alone or with
    ``--workers``), and again after each restart.

    A port from :func:`free_port` is free for anyone until the server binds it: the
    ephemeral port of an outgoing connection (the supervisor's own database connection,
    a Redis client, a connect to the very port being waited for) can land on it, and
    that socket, connected or in TIME_WAIT for a minute, makes the server's bind fail
    with EADDRINUSE. While this socket is bound, neither ``bind(("127.0.0.1", 0))`` nor
    a connect's port choice hands the port out, yet a bind with SO_REUSEADDR to it
    succeeds (a non-listening SO_REUSEADDR socket does not conflict) and never shares
    its connections: a socket that does not listen is no member of a SO_REUSEPORT
    group. Close it when the server is gone for good.
    """
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def wait_for_port(
    port: int,
    timeout: float = 20.0,
    host: str = "127.0.0.1",
    process: subprocess.Popen[bytes] | None = None,
) -> bool:
    """True once something accepts connections on the port.

    False after ``timeout``, or at once when ``process`` (the server meant to listen)
    has exited: a server that refuses to start is not waited for until the timeout.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            if process is not None and process.poll() is not None:
                return False
            time.sleep(0.05)
    return False


def which(name: str, *extra_dirs: str) -> str | None:
    """A program on PATH or in one of the extra directories."""
    found = shutil.which(name)
    if found:
        return found
    for directory in extra_dirs:
        candidate = Path(directory) / name
        if candidate.exists():
            return str(candidate)
    return None


def stop(process: subprocess.Popen[bytes] | None, timeout: float = 5.0) -> None:
    """Terminate a server process, killing it if it lingers."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout)


def log_text(path: Path) -> str:
    """A server's log so far (``""`` before it writes one)."""
    return path.read_text(errors="replace") if path.exists() else ""


class _Server(Protocol):
    process: subprocess.Popen[bytes]


ServerT = TypeVar("ServerT", bound=_Server)


@contextlib.contextmanager
def running(
    process: subprocess.Popen[bytes] | None, directory: Path | None = None
) -> Iterator[None]:
    """Stop ``process`` (and remove ``directory``) when the block ends, however it ends."""
    try:
        yield
    finally:
        stop(process)
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


def serving(server: ServerT, directory: Path | None = None) -> Iterator[ServerT]:
    """A fixture's body (``yield from serving(...)``): yield ``server``, then stop its
    process and remove ``directory``."""
    with running(server.process, directory):
        yield server


def _listening(
    command: Sequence[str],
    log: Path,
    ports: Iterable[int],
    timeout: float,
    host: str,
    popen: dict[str, Any],
) -> subprocess.Popen[bytes] | None:
    """Start ``command`` (output appended to ``log``); the process once it listens on
    every port and still runs, else ``None`` after stopping it."""
    with log.open("ab") as out:
        process = subprocess.Popen(list(command), stdout=out, stderr=subprocess.STDOUT, **popen)
    if (
        all(wait_for_port(port, timeout, host, process) for port in ports)
        and process.poll() is None
    ):
        return process
    stop(process)
    return None


def _did_not_start(name: str, log: Path, cleanup: Path | None = None) -> NoReturn:
    """``peer_unavailable`` with the end of the server's log (after removing ``cleanup``)."""
    tail = log_text(log)[-2000:]
    if cleanup is not None:
        shutil.rmtree(cleanup, ignore_errors=True)
    peer_unavailable(name, f"did not start: {tail}")


def launch(
    name: str,
    command: Sequence[str],
    log: Path,
    *ports: int,
    timeout: float = 20.0,
    host: str = "127.0.0.1",
    cleanup: Path | None = None,
    **popen: Any,
) -> subprocess.Popen[bytes]:
    """Start a server and wait until it accepts connections on every one of ``ports``.

    Its stdout and stderr are appended to ``log``; ``popen`` goes to ``subprocess.Popen``
    (``cwd``, ``start_new_session``...). When it does not listen within ``timeout``
    seconds it is stopped, ``cleanup`` (its directory) is removed and ``peer_unavailable``
    reports ``name`` with the end of the log: the test fails under CI=true.
    """
    process = _listening(command, log, ports, timeout, host, popen)
    if process is None:
        _did_not_start(name, log, cleanup)
    return process


def launch_on_free_port(
    name: str,
    command: Callable[[int], Sequence[str]],
    log: Path,
    *,
    attempts: int = 3,
    timeout: float = 20.0,
    **popen: Any,
) -> tuple[subprocess.Popen[bytes], int]:
    """:func:`launch` on a fresh free port, trying again on another one if it fails.

    ``command(port)`` returns the command line for that port (writing any configuration
    file that names it). Returns the running process and its port.
    """
    for _ in range(attempts):
        port = free_port()
        process = _listening(command(port), log, (port,), timeout, "127.0.0.1", popen)
        if process is not None:
            return process, port
    _did_not_start(name, log)


def launch_module(
    name: str, module: str, base: Path, port: int, *args: str, log: str = "server.log"
) -> subprocess.Popen[bytes]:
    """:func:`launch` ``python -m <module> --port <port> <args>`` from the repository root.

    Its output goes to ``base/<log>``; ``base`` is removed when it does not start
    within 30 seconds. The module reads its command line with :func:`server_arguments`.
    """
    command = [sys.executable, "-m", module, "--port", str(port), *args]
    return launch(name, command, base / log, port, timeout=30, cleanup=base, cwd=ROOT_DIR)


def server_arguments(description: str | None, *paths: str) -> argparse.ArgumentParser:
    """The command line of a server run by :func:`launch_module`.

    ``--port`` and each of ``paths`` (options such as ``--root``, read as a ``Path``)
    are required; the caller may add more before parsing.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--port", type=int, required=True)
    for option in paths:
        parser.add_argument(option, type=Path, required=True)
    return parser
