"""Per-action rights through the front door: the real OpenSSH ``sftp``, ``scp`` and ``rsync``.

A refused SFTP request never reaches the server: the door answers it with
``SSH_FX_PERMISSION_DENIED`` and the session goes on; a transfer command whose whole
purpose is refused (``scp -t`` without upload...) gets one line on stderr and never
starts. Each refusal is a ``session.action_denied`` audit entry.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from typing import Any

from hostgate.db.models.identity import Role

from plugins.sshd.tests.door import audit_entries
from plugins.sshd.tests.test_file_transfers import open_door
from plugins.sshd.tests.transfer_tools import remote_dir
from testsupport.sshd import TEST_USER


async def switch_off(client: Any, user: Any, connection: Any, **actions: bool) -> None:
    response = await client.put(
        f"/api/v1/connections/{connection.id}", json={"actions": actions}, headers=user.headers
    )
    assert response.status_code == 200, await response.get_data()


def owned_file(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    entry = pwd.getpwnam(TEST_USER)
    os.chown(path, entry.pw_uid, entry.pw_gid)


async def refused_actions(client: Any, user: Any) -> list[str]:
    return sorted(
        e["details"]["action"] for e in await audit_entries(client, user, "session.action_denied")
    )


async def test_sftp_refuses_denied_requests_and_the_session_goes_on(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user, connection, door = await open_door(
        client, kernel, make_user, make_connection, sshd, tmp_path
    )
    await switch_off(client, user, connection, upload=False, delete=False)
    remote = remote_dir(sshd.home)
    owned_file(remote / "there.txt", b"kept")
    (tmp_path / "up.bin").write_bytes(os.urandom(5000))
    # "-" lets the batch go on past a failed command; each line after a refusal works
    batch = f"""\
cd {remote}
-put up.bin
get there.txt down.txt
-rm there.txt
mkdir made
ls
"""
    done = await door.sftp(batch, tmp_path)
    assert done.code == 0, done.stderr
    assert "Permission denied" in done.stderr
    assert not (remote / "up.bin").exists()
    assert (remote / "there.txt").read_bytes() == b"kept"
    assert (tmp_path / "down.txt").read_bytes() == b"kept"
    assert (remote / "made").is_dir()
    assert await refused_actions(client, user) == ["delete", "upload"]
    entries = await audit_entries(client, user, "session.action_denied")
    details = {e["details"]["action"]: e["details"]["detail"] for e in entries}
    assert details["upload"] == f"front door: sftp {remote}/up.bin"
    assert details["delete"] == f"front door: sftp {remote}/there.txt"


async def test_a_role_without_download_gets_no_file_by_sftp_or_scp(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user, connection, door = await open_door(
        client, kernel, make_user, make_connection, sshd, tmp_path
    )
    async with kernel.db.session() as session:
        row = await session.get(Role, user.role_id)
        assert row is not None
        row.permissions = [p for p in row.permissions if p != "files.download"]
        session.add(row)
        await session.commit()
    remote = remote_dir(sshd.home)
    owned_file(remote / "secret.txt", b"not for you")

    done = await door.sftp(f"get {remote}/secret.txt got.txt\n", tmp_path)
    assert done.code != 0
    assert "Permission denied" in done.stderr
    assert not (tmp_path / "got.txt").exists()

    done = await door.scp(f"127.0.0.1:{remote}/secret.txt", str(tmp_path / "s.txt"), legacy=True)
    assert done.code != 0
    assert "hostgate: Downloading files is not allowed on this connection" in done.stderr
    assert not (tmp_path / "s.txt").exists()
    assert await refused_actions(client, user) == ["download", "download"]

    # uploads are still the role's
    (tmp_path / "up.txt").write_bytes(b"in")
    done = await door.scp(str(tmp_path / "up.txt"), f"127.0.0.1:{remote}/up.txt", legacy=True)
    assert done.code == 0, done.stderr
    assert (remote / "up.txt").read_bytes() == b"in"


async def test_scp_and_rsync_uploads_are_refused_before_they_start(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user, connection, door = await open_door(
        client, kernel, make_user, make_connection, sshd, tmp_path
    )
    await switch_off(client, user, connection, upload=False)
    remote = remote_dir(sshd.home)
    (tmp_path / "a.txt").write_bytes(b"a")

    done = await door.scp(str(tmp_path / "a.txt"), f"127.0.0.1:{remote}/a.txt", legacy=True)
    assert done.code != 0
    assert "hostgate: Uploading files is not allowed on this connection" in done.stderr
    done = await door.rsync(str(tmp_path / "a.txt"), f"127.0.0.1:{remote}/r.txt")
    assert done.code != 0
    assert "Uploading files is not allowed" in done.stderr
    assert list(remote.iterdir()) == []
    assert await refused_actions(client, user) == ["upload", "upload"]
