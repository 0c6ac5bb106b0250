"""The command line with HOSTGATE_REDIS_URL configured: only what needs Redis needs it."""

from __future__ import annotations

import os
import subprocess
import sys

import redis

from testsupport.gateway import ENCRYPTION_KEY
from testsupport.peers import free_port


def hostgate(tmp_path, *args: str, redis_url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOSTGATE_")}
    env.update(HOSTGATE_ENCRYPTION_KEY=ENCRYPTION_KEY, HOSTGATE_REDIS_URL=redis_url)
    env["HOSTGATE_PASSWORD"] = "a long new password 1"
    return subprocess.run(
        [sys.executable, "-m", "hostgate", "--data-dir", str(tmp_path / "data"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_commands_that_only_use_the_database_run_while_redis_is_down(tmp_path):
    unreachable = f"redis://127.0.0.1:{free_port()}/0"
    created = hostgate(
        tmp_path, "user", "create", "ops", "--role", "admin", redis_url=unreachable,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    listed = hostgate(tmp_path, "user", "list", redis_url=unreachable)
    assert listed.returncode == 0, listed.stderr
    assert "ops" in listed.stdout
    # a password reset closes the user's sockets on every node: it needs Redis, and says so
    reset = hostgate(
        tmp_path, "user", "reset-password", "ops",
        redis_url=unreachable,
    )  # fmt: skip
    assert reset.returncode != 0
    assert "Cannot reach Redis at" in reset.stderr + reset.stdout


def test_a_password_reset_runs_with_redis_up_and_takes_no_lease(tmp_path, redis_server):
    created = hostgate(
        tmp_path, "user", "create", "ops", "--role", "admin", redis_url=redis_server.url,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    reset = hostgate(
        tmp_path, "user", "reset-password", "ops",
        redis_url=redis_server.url,
    )  # fmt: skip
    assert reset.returncode == 0, reset.stderr
    client = redis.Redis.from_url(redis_server.url)
    try:
        assert client.get("hostgate:lease:housekeeping") is None
    finally:
        client.close()
