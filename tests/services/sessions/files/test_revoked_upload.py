"""A login session revoked while one of its uploads streams: the upload answers 401
``session_revoked`` (as the next request would), the revocation does not wait for the
upload's body, and nothing is left on the server under the file's name or a temporary one.

A real ``hostgate serve`` and OpenSSH's sftp server; the test reads the files on disk.
"""

from __future__ import annotations

import os
import pwd
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from testsupport.gateway import ADMIN_PASSWORD, GatewayProcess
from testsupport.sshd import TEST_USER, SshdServer, sshd  # noqa: F401 - fixture

CHUNK = 64 * 1024


def test_a_revoked_login_stops_its_upload_with_401(tmp_path: Path, sshd: SshdServer) -> None:  # noqa: F811
    folder = Path(sshd.home) / f"revoked-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    user = pwd.getpwnam(TEST_USER)
    os.chown(folder, user.pw_uid, user.pw_gid)
    gateway = GatewayProcess(tmp_path / "data").start()
    try:
        admin = {"Authorization": f"Bearer {gateway.setup_admin()}"}
        body = {
            "name": "sftp", "protocol": "sftp", "host": sshd.host, "port": sshd.port,
            "username": sshd.username, "password": sshd.password,
        }  # fmt: skip
        created = httpx.post(f"{gateway.url}/api/v1/connections", headers=admin, json=body)
        connection = created.json()["id"]
        login = httpx.post(
            f"{gateway.url}/api/v1/auth/login",
            json={"username": "admin", "password": ADMIN_PASSWORD},
        ).json()["token"]
        browser = {"Authorization": f"Bearer {login}"}
        sessions = httpx.get(f"{gateway.url}/api/v1/profile/login-sessions", headers=browser)
        mine = next(s["id"] for s in sessions.json()["sessions"] if s["isCurrent"])

        started, revoked = threading.Event(), threading.Event()

        def chunks() -> Iterator[bytes]:
            yield b"a" * CHUNK
            started.set()
            revoked.wait(60)  # the body stalls until the session is revoked
            for _ in range(64):
                yield b"b" * CHUNK

        answer: dict[str, Any] = {}

        def upload() -> None:
            url = f"{gateway.url}/api/v1/sftp/{connection}/upload"
            params = {"path": f"{folder}/big.bin"}
            response = httpx.post(url, params=params, headers=browser, content=chunks(), timeout=60)
            answer["status"], answer["body"] = response.status_code, response.json()

        sender = threading.Thread(target=upload)
        sender.start()
        assert started.wait(30)
        for _ in range(100):  # until the gateway has the remote file open
            if any(folder.iterdir()):
                break
            threading.Event().wait(0.05)
        # another session of the same user signs this one out, while the body is stalled
        ended = httpx.delete(
            f"{gateway.url}/api/v1/profile/login-sessions/{mine}", headers=admin, timeout=60
        )
        assert ended.status_code == 200, ended.text
        revoked.set()
        sender.join(90)
        assert answer == {
            "status": 401,
            "body": {"code": "session_revoked", "error": "Session has been revoked"},
        }
        assert list(folder.iterdir()) == []  # no partial file, no temporary file
    finally:
        gateway.stop()
        shutil.rmtree(folder, ignore_errors=True)
    assert not gateway.unhandled(), gateway.unhandled()
