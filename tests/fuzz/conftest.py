"""A live gateway with every bundled pack, an admin and a low-permission user, for fuzzing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass

import httpx
import pytest

from testsupport.peers import reserve_port, wait_for_port

PASSWORD = "fuzzing password 1"
BACKUP_PASSWORD = "fuzzing backup 1"


@dataclass
class LiveGateway:
    url: str
    admin_token: str
    user_token: str
    process: subprocess.Popen[bytes]
    backup: bytes
    """A backup of the gateway as the fixture set it up (``BACKUP_PASSWORD``)."""


@pytest.fixture(scope="module")
def live_gateway(tmp_path_factory):
    data = tmp_path_factory.mktemp("fuzz-data")
    reservation = reserve_port()  # held until the gateway is gone: nothing else takes it
    port = reservation.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOSTGATE_")}
    env.update(
        HOSTGATE_ENCRYPTION_KEY="f0" * 32,
        HOSTGATE_LOG_LEVEL="ERROR",
        HOSTGATE_VERSION_URL="http://127.0.0.1:9/none",
        # the session keeper logs in again as clients behind this "proxy" (test_api_fuzz)
        HOSTGATE_TRUSTED_PROXIES="127.0.0.1/32",
    )
    log = (data / "server.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "hostgate", "--data-dir", str(data), "serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    if not wait_for_port(port, 60):
        process.kill()
        pytest.fail("gateway did not start: " + (data / "server.log").read_text()[-2000:])
    url = f"http://127.0.0.1:{port}"
    setup = httpx.post(
        f"{url}/api/v1/auth/setup",
        json={"username": "fuzzadmin", "password": PASSWORD, "displayName": "Fuzz"},
        timeout=60,  # a password hash, slow at load (httpx's default is 5 s)
    )
    assert setup.status_code == 200, setup.text
    admin = setup.json()["token"]
    headers = {"Authorization": f"Bearer {admin}"}
    created = httpx.post(
        f"{url}/api/v1/users",
        headers=headers,
        json={
            "username": "fuzzuser",
            "password": PASSWORD,
            "displayName": "Low",
            "email": "",
            "role": "user",
        },
        timeout=60,
    )
    assert created.status_code == 201, created.text
    login = httpx.post(
        f"{url}/api/v1/auth/login", json={"username": "fuzzuser", "password": PASSWORD}, timeout=60
    )
    assert login.status_code == 200, login.text
    backup = httpx.post(
        f"{url}/api/v1/backup/export",
        headers=headers,
        json={"password": BACKUP_PASSWORD},
        timeout=60,
    )
    assert backup.status_code == 200, backup.text
    yield LiveGateway(url, admin, login.json()["token"], process, backup.content)
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
    reservation.close()
    log.close()
    errors = [
        line for line in (data / "server.log").read_text().splitlines() if "unhandled error" in line
    ]
    assert errors == [], "the server logged unhandled errors during fuzzing"
