"""A real ``hostgate serve`` subprocess for tests that need the whole server: load, crashes.

    from testsupport.gateway import GatewayProcess

    gateway = GatewayProcess(tmp_path / "data").start()
    token = gateway.setup_admin()          # POST /auth/setup, returns the token
    ...
    gateway.kill()                         # SIGKILL, as a crash
    gateway.start()                        # same data dir, same port
    gateway.stop()                         # SIGTERM, then SIGKILL after 30 s

Every bundled pack is loaded through its entry point, as in production. The
server's output goes to ``<data dir>/../gateway.log`` (``log()``); ``unhandled()``
lists the lines where it logged an unhandled error.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import weakref
from pathlib import Path

import httpx
import pytest

from . import TEST_SETTING_DEFAULTS
from .peers import reserve_port, wait_for_port

ENCRYPTION_KEY = "c4" * 32
ADMIN_PASSWORD = "gateway admin password 1"


def write_test_config(path: Path) -> Path:
    """A TOML config file with the suite's setting defaults, for a served test gateway."""
    lines = [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in TEST_SETTING_DEFAULTS.items()]
    path.write_text("[settings]\n" + "\n".join(lines) + "\n")
    return path


class GatewayProcess:
    """One ``python -m hostgate serve`` on 127.0.0.1, restartable on the same port."""

    def __init__(
        self,
        data_dir: Path,
        env: dict[str, str] | None = None,
        python: str | None = None,
        serve_args: tuple[str, ...] = (),
        recordings: Path | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.python = python or sys.executable  # another venv's, to serve what is installed there
        # the port stays held (not listening) while this object lives: nothing else can
        # take it before the server binds it, nor between a stop and the next start
        reservation = reserve_port()
        weakref.finalize(self, reservation.close)
        self.port = int(reservation.getsockname()[1])
        self.extra_env = dict(env or {})
        self.serve_args = serve_args  # e.g. ("--workers", "2")
        # several nodes: HOSTGATE_RECORDINGS_DIR, the directory they share
        self.recordings = recordings
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"{data_dir.name}-gateway.log"

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        """``ws://127.0.0.1:<port>``."""
        return f"ws://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        """The server's process id."""
        assert self.process is not None
        return self.process.pid

    def start(self, timeout: float = 180) -> GatewayProcess:
        """Start (or start again) and wait until it answers ``/health``."""
        return self.spawn().wait_started(timeout)

    def spawn(self) -> GatewayProcess:
        """Launch the server without waiting for it (``wait_started`` waits): a test can
        have the next gateway starting while it runs."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOSTGATE_")}
        config_file = write_test_config(
            self.data_dir.parent / f"{self.data_dir.name}-hostgate.toml"
        )
        env.update(
            HOSTGATE_CONFIG=str(config_file),
            HOSTGATE_ENCRYPTION_KEY=ENCRYPTION_KEY,
            HOSTGATE_LOG_LEVEL="WARNING",
        )
        env.update(self.extra_env)  # a test may override those too
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.recordings is not None:
            env.setdefault("HOSTGATE_RECORDINGS_DIR", str(self.recordings))
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    self.python,
                    "-m",
                    "hostgate",
                    "--data-dir",
                    str(self.data_dir),
                    "serve",
                    "--port",
                    str(self.port),
                    *self.serve_args,
                ],  # fmt: skip
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return self

    def wait_started(self, timeout: float = 180) -> GatewayProcess:
        """Wait until the spawned server accepts connections; fail the test if it exits
        or does not within ``timeout`` seconds.

        The limit only stops a hang: a node on PostgreSQL running every migration took
        over 60 s at load 14 on two cores, and a passing start never waits for it."""
        assert self.process is not None, "spawn() first"
        if (
            not wait_for_port(self.port, timeout, process=self.process)
            or self.process.poll() is not None
        ):
            self.kill()
            pytest.fail(f"hostgate serve did not start: {self.log()[-2000:]}")
        return self

    def wait_refused(self, timeout: float = 240) -> int:
        """Wait until the spawned server exits without ever listening (a start-up refusal);
        its exit code. Fail the test if it listens, or still runs after ``timeout`` seconds.

        No start-up deadline: a node that refuses exits once it reaches the refusal, and
        on a loaded machine that took longer than a start-up deadline (killed before it
        wrote its reason). ``timeout`` only stops a hang.
        """
        assert self.process is not None, "spawn() first"
        if wait_for_port(self.port, timeout, process=self.process):
            self.kill()
            pytest.fail(f"hostgate serve started, but should have refused: {self.log()[-2000:]}")
        code = self.process.poll()
        if code is None:
            self.kill()
            pytest.fail(f"hostgate serve neither refused nor started: {self.log()[-2000:]}")
        return code

    def setup_admin(self, username: str = "admin") -> str:
        """Create the first admin; its session token."""
        response = httpx.post(
            f"{self.url}/api/v1/auth/setup",
            json={"username": username, "password": ADMIN_PASSWORD, "displayName": "Admin"},
            timeout=60,
        )
        assert response.status_code == 200, response.text
        return str(response.json()["token"])

    def login(self, username: str = "admin") -> str:
        """A new session token for a user with the admin password."""
        response = httpx.post(
            f"{self.url}/api/v1/auth/login",
            json={"username": username, "password": ADMIN_PASSWORD},
            timeout=60,
        )
        assert response.status_code == 200, response.text
        return str(response.json()["token"])

    def kill(self) -> None:
        """SIGKILL: the process dies at once, as in a crash or an OOM kill."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        """SIGTERM (graceful), SIGKILL if it lingers."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.kill()

    def log(self) -> str:
        """Everything the server printed."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def unhandled(self, since: int = 0) -> list[str]:
        """Log lines of unhandled errors (a 500 or a crashed task), from character ``since``
        of the log on."""
        return [
            line
            for line in self.log()[since:].splitlines()
            if "unhandled error" in line or "Task exception was never retrieved" in line
        ]
