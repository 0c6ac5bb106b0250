"""The command line with HOSTGATE_REDIS_URL configured: only what needs Redis needs it.

The commands run in-process through the CLI's ``main()`` (what ``python -m hostgate``
runs): the test is about what each command needs, not about a new interpreter.
"""

from __future__ import annotations

import pytest
import redis
from hostgate.cli import main
from hostgate.kernel import StartupError

from testsupport.gateway import ENCRYPTION_KEY
from testsupport.peers import free_port


@pytest.fixture
def hostgate(tmp_path, monkeypatch, capsys):
    """``hostgate(redis_url, *args)``: ``(code, stdout, stderr)`` of one command."""
    import os

    for name in [n for n in os.environ if n.startswith("HOSTGATE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOSTGATE_ENCRYPTION_KEY", ENCRYPTION_KEY)
    monkeypatch.setenv("HOSTGATE_PASSWORD", "a long new password 1")

    def run(redis_url: str, *args: str) -> tuple[int, str, str]:
        monkeypatch.setenv("HOSTGATE_REDIS_URL", redis_url)
        code = main(["--data-dir", str(tmp_path / "data"), *args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_commands_that_only_use_the_database_run_while_redis_is_down(hostgate):
    unreachable = f"redis://127.0.0.1:{free_port()}/0"
    code, _, err = hostgate(unreachable, "user", "create", "ops", "--role", "admin")
    assert code == 0, err
    code, out, err = hostgate(unreachable, "user", "list")
    assert code == 0, err
    assert "ops" in out
    # a password reset closes the user's sockets on every node: it needs Redis, and says so
    # (as an error that ends the command: a traceback and exit code 1 from the shell)
    with pytest.raises(StartupError, match="Cannot reach Redis at"):
        hostgate(unreachable, "user", "reset-password", "ops")


def test_a_password_reset_runs_with_redis_up_and_takes_no_lease(hostgate, redis_server):
    code, _, err = hostgate(redis_server.url, "user", "create", "ops", "--role", "admin")
    assert code == 0, err
    code, _, err = hostgate(redis_server.url, "user", "reset-password", "ops")
    assert code == 0, err
    client = redis.Redis.from_url(redis_server.url)
    try:
        assert client.get("hostgate:lease:housekeeping") is None
    finally:
        client.close()
