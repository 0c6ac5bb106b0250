"""Helpers for starting real servers on 127.0.0.1 for tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def peer_unavailable(name: str, reason: str) -> None:
    """A real peer cannot start: fail under CI=true, skip on a developer machine."""
    message = f"real peer {name} unavailable: {reason}"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout: float = 20.0, host: str = "127.0.0.1") -> bool:
    """True once something accepts connections on the port."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
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
