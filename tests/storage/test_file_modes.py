"""The data directory is private: 0700 directories, 0600 files, through a real ``hostgate serve``.

The tests run under umask 022, where a file created with the defaults would be 0644.
"""

import os

import httpx

from tests.kernel.test_serve import start, stop_gracefully
from testsupport.filemodes import assert_private, loose_umask, modes  # noqa: F401

SETUP = {"username": "root", "password": "long-enough-pw"}


def test_serve_creates_a_private_data_directory(tmp_path, loose_umask):  # noqa: F811
    """Database, WAL and SHM, the generated key and the generated certificate: all 0600."""
    process, port = start(tmp_path, "--tls-self-signed")
    try:
        # a write, so SQLite has its WAL and SHM files open
        response = httpx.post(
            f"https://127.0.0.1:{port}/api/v1/auth/setup", json=SETUP, verify=False
        )
        assert response.status_code == 200, response.text
        found = assert_private(tmp_path / "data")
    finally:
        assert stop_gracefully(process) == 0
    expected = {
        "hostgate.db",
        "hostgate.db-wal",
        "hostgate.db-shm",
        "encryption.key",
        "certs",
        "certs/server.crt",
        "certs/server.key",
    }
    assert expected <= set(found)


def test_serve_tightens_an_existing_install(tmp_path, loose_umask):  # noqa: F811
    """An install from before: everything world-readable; the next start makes it private
    and says so in the log."""
    data = tmp_path / "data"
    process, port = start(tmp_path)
    assert stop_gracefully(process) == 0
    (data / "recordings").mkdir(exist_ok=True)
    (data / "recordings" / "old.cast").write_bytes(b"an old recording")
    for path in [data, *data.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    assert modes(data)["hostgate.db"] == 0o644

    process, port = start(tmp_path)
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
        found = assert_private(data)
    finally:
        assert stop_gracefully(process) == 0
    assert {"hostgate.db", "encryption.key", "recordings/old.cast"} <= set(found)
    output = process.stdout.read().decode()
    assert "tightened permissions" in output and str(data) in output
