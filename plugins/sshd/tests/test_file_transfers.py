"""sftp, scp, rsync and git through the front door to a real sshd: relayed, recorded.

The real OpenSSH ``sftp``/``scp``, ``rsync`` and ``git`` run against the door
(BatchMode, a temp known_hosts); what reaches the target is checked on its disk, and
what the gateway recorded in its file-session history and audit log.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
from pathlib import Path

from hostgate import CloseReason

from plugins.sshd.tests.door import (
    audit_entries,
    connect,
    door_of,
    known_hosts,
    make_key,
    register_key,
)
from plugins.sshd.tests.transfer_tools import Door, actions, file_events, remote_dir, tool

MIB = 1024 * 1024


async def open_door(client, kernel, make_user, make_connection, sshd, tmp_path, name="box"):
    user = await make_user("alice")
    connection = await make_connection(
        user, "ssh", sshd.host, sshd.port, name=name, username=sshd.username, password=sshd.password
    )
    key = make_key(tmp_path)
    await register_key(client, user, key)
    hosts = await known_hosts(client, user, tmp_path)
    return user, connection, Door(door_of(kernel).port, f"alice:{name}", key, hosts)


async def test_sftp_is_relayed_and_every_operation_is_a_file_event(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user, connection, door = await open_door(
        client, kernel, make_user, make_connection, sshd, tmp_path
    )
    remote = remote_dir(sshd.home)
    local = tmp_path / "up.bin"
    payload = os.urandom(300_000)
    local.write_bytes(payload)
    batch = f"""\
cd {remote}
put up.bin
get up.bin down.bin
mkdir sub
rename up.bin sub/moved.bin
chmod 640 sub/moved.bin
ls sub
rm sub/moved.bin
rmdir sub
"""
    done = await door.sftp(batch, tmp_path)
    assert done.code == 0, done.stderr
    assert (tmp_path / "down.bin").read_bytes() == payload
    assert list(remote.iterdir()) == []  # renamed, then removed with its directory

    [session] = (await file_events(client, user))["sftp"]
    assert session["connectionName"] == "box"
    assert actions(session) == [
        ("upload", f"{remote}/up.bin"),
        ("download", f"{remote}/up.bin"),
        ("mkdir", f"{remote}/sub"),
        ("rename", f"{remote}/up.bin"),
        ("chmod", f"{remote}/sub/moved.bin"),
        ("browse", f"{remote}/sub"),
        ("delete", f"{remote}/sub/moved.bin"),
        ("delete", f"{remote}/sub"),
    ]
    details = [event["detail"] for event in session["events"]]
    assert details[:2] == ["293.0 KiB", "293.0 KiB"]
    assert details[3] == f"{remote}/up.bin \u2192 {remote}/sub/moved.bin"
    assert details[4] == "0640"

    [started] = [
        entry
        for entry in await audit_entries(client, user, "connection.session_started")
        if entry["details"].get("fileSessionId") == session["id"]
    ]
    assert started["details"]["via"] == "ssh"
    assert started["details"]["protocol"] == "sftp"
    assert started["details"]["connectionId"] == connection.id
    assert started["details"]["keyFingerprint"] == door.key.fingerprint
    ended = await audit_entries(client, user, "connection.session_ended")
    [end] = [e for e in ended if e["details"].get("fileSessionId") == session["id"]]
    # the upload went in, the download came out (with the SFTP framing around them)
    assert end["details"]["bytesIn"] > len(payload) and end["details"]["bytesOut"] > len(payload)


async def test_scp_legacy_and_sftp_mode_record_each_file(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user, _, door = await open_door(client, kernel, make_user, make_connection, sshd, tmp_path)
    remote = remote_dir(sshd.home)
    tree = tmp_path / "tree"
    (tree / "inner").mkdir(parents=True)
    (tree / "a.txt").write_bytes(b"a" * 1000)
    (tree / "inner" / "b.txt").write_bytes(b"b" * 2048)
    single = tmp_path / "single.bin"
    single.write_bytes(os.urandom(70_000))

    done = await door.scp("-r", str(tree), f"127.0.0.1:{remote}/", legacy=True)
    assert done.code == 0, done.stderr
    assert (remote / "tree" / "inner" / "b.txt").read_bytes() == b"b" * 2048
    back = tmp_path / "back.txt"
    done = await door.scp(f"127.0.0.1:{remote}/tree/a.txt", str(back), legacy=True)
    assert done.code == 0, done.stderr
    assert back.read_bytes() == b"a" * 1000
    done = await door.scp(str(single), f"127.0.0.1:{remote}/single.bin", legacy=False)
    assert done.code == 0, done.stderr
    assert (remote / "single.bin").read_bytes() == single.read_bytes()

    sessions = await file_events(client, user)
    upload, download = sorted(sessions["scp"], key=lambda s: s["startedAt"])
    assert sorted(actions(upload)) == [
        ("mkdir", f"{remote}/tree"),
        ("mkdir", f"{remote}/tree/inner"),
        ("upload", f"{remote}/tree/a.txt"),
        ("upload", f"{remote}/tree/inner/b.txt"),
    ]
    sizes = {event["path"]: event["detail"] for event in upload["events"]}
    assert sizes[f"{remote}/tree/inner/b.txt"] == "2.0 KiB"
    assert actions(download) == [("download", f"{remote}/tree/a.txt")]
    assert download["events"][0]["detail"] == "1000 B"
    [by_sftp] = sessions["sftp"]  # scp's default mode speaks SFTP
    assert ("upload", f"{remote}/single.bin") in actions(by_sftp)


async def test_rsync_both_ways_is_one_event_with_its_bytes(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user, _, door = await open_door(client, kernel, make_user, make_connection, sshd, tmp_path)
    remote = remote_dir(sshd.home)
    source = tmp_path / "src"
    source.mkdir()
    (source / "one.bin").write_bytes(os.urandom(50_000))
    (source / "two.txt").write_text("two\n")

    done = await door.rsync("-a", f"{source}/", f"127.0.0.1:{remote}/copy/")
    assert done.code == 0, done.stderr
    assert (remote / "copy" / "one.bin").read_bytes() == (source / "one.bin").read_bytes()
    back = tmp_path / "back"
    done = await door.rsync("-a", f"127.0.0.1:{remote}/copy/", f"{back}/")
    assert done.code == 0, done.stderr
    assert (back / "two.txt").read_text() == "two\n"

    [download, upload] = (await file_events(client, user))["rsync"]  # newest first
    [(action, path)] = actions(upload)
    assert (action, path) == ("upload", f"{remote}/copy/")
    assert "rsync --server" in upload["events"][0]["detail"]
    assert actions(download) == [("download", f"{remote}/copy/")]
    assert "--sender" in download["events"][0]["detail"]


def _bare_repo(remote: Path) -> Path:
    repo = remote / "project.git"
    subprocess.run([tool("git"), "init", "-q", "--bare", str(repo)], check=True)
    subprocess.run(["chown", "-R", f"{os.stat(remote).st_uid}", str(repo)], check=True)
    return repo


async def test_git_clone_and_push_through_the_door(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user, _, door = await open_door(client, kernel, make_user, make_connection, sshd, tmp_path)
    repo = _bare_repo(remote_dir(sshd.home))
    work = tmp_path / "work"
    work.mkdir()
    done = await door.git("clone", "-q", f"127.0.0.1:{repo}", "clone", cwd=work)
    assert done.code == 0, done.stderr
    checkout = work / "clone"
    (checkout / "README").write_text("through the door\n")
    for args in (("add", "README"), ("commit", "-q", "-m", "first")):
        done = await door.git(*args, cwd=checkout)
        assert done.code == 0, done.stderr
    done = await door.git("push", "-q", "origin", "HEAD:main", cwd=checkout)
    assert done.code == 0, done.stderr
    shown = subprocess.run(
        [tool("git"), "--git-dir", str(repo), "show", "main:README"], capture_output=True
    )
    assert shown.stdout == b"through the door\n"

    sessions = await file_events(client, user)
    [push] = sessions["git-receive-pack"]
    assert actions(push) == [("upload", str(repo))]
    [clone] = sessions["git-upload-pack"]
    assert actions(clone) == [("download", str(repo))]


async def test_a_large_sftp_round_trip_is_identical_and_keeps_memory_flat(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user, _, door = await open_door(client, kernel, make_user, make_connection, sshd, tmp_path)
    remote = remote_dir(sshd.home)
    size = 64 * MIB
    local = tmp_path / "big.bin"
    digest = hashlib.sha256()
    with local.open("wb") as out:
        for _ in range(size // MIB):
            block = os.urandom(MIB)
            digest.update(block)
            out.write(block)

    peak = [rss()]
    baseline = peak[0]

    async def sample() -> None:
        while True:
            peak[0] = max(peak[0], rss())
            await asyncio.sleep(0.05)

    sampler = asyncio.create_task(sample())
    try:
        done = await door.sftp(
            f"put big.bin {remote}/big.bin\nget {remote}/big.bin back.bin\n", tmp_path
        )
    finally:
        sampler.cancel()
    assert done.code == 0, done.stderr
    local.unlink()
    back = hashlib.sha256()
    with (tmp_path / "back.bin").open("rb") as source:
        while block := source.read(MIB):
            back.update(block)
    assert back.hexdigest() == digest.hexdigest()
    # the gateway runs in this process: 128 MiB passed through it, its memory did not follow
    assert peak[0] - baseline < 48 * MIB, (peak[0] - baseline) / MIB
    [session] = (await file_events(client, user))["sftp"]
    assert [event["detail"] for event in session["events"]] == ["64.0 MiB", "64.0 MiB"]


def rss() -> int:
    """This process's resident memory in bytes."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def test_an_approval_required_connection_refuses_sftp_with_the_reason(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    owner = await make_user("owner", role="admin")
    row = await make_connection(
        owner,
        "ssh",
        sshd.host,
        sshd.port,
        name="guarded",
        username=sshd.username,
        password=sshd.password,
        shared=True,
    )
    async with kernel.db.session() as session:
        stored = await session.get(type(row), row.id)
        stored.approval_required = True
        await session.commit()
    user = await make_user("alice")
    key = make_key(tmp_path)
    await register_key(client, user, key)
    async with await connect(door_of(kernel).port, "alice:guarded", key.key) as conn:
        result = await conn.run(subsystem="sftp", check=False)
        scp = await conn.run("scp -t /tmp", check=False)
    assert result.exit_status == 255 and scp.exit_status == 255
    assert "approved access request" in str(result.stderr)
    reasons = [
        e["details"]["reason"] for e in await audit_entries(client, user, "sshd.session_refused")
    ]
    assert len(reasons) == 2 and all("approved access request" in r for r in reasons)
    assert "sftp" not in await file_events(client, user)  # no file session was started


async def test_revoked_access_ends_an_open_sftp_channel_with_the_reason(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user, connection, door = await open_door(
        client, kernel, make_user, make_connection, sshd, tmp_path
    )
    async with await connect(door.port, door.login, door.key.key) as conn:
        process = await conn.create_process(subsystem="sftp", encoding=None)
        process.stdin.write(packet_init())
        version = await process.stdout.readexactly(9)
        assert version[4] == 2  # SSH_FXP_VERSION: the server's SFTP answered through the door
        assert kernel.live.count(user_id=user.id, kinds=("files",)) == 1
        closed = await kernel.live.close_where(
            "your access to this connection ended",
            reason_code=CloseReason.ACCESS_ENDED,
            user_id=user.id,
            connection_id=connection.id,
        )
        assert closed == 1
        await asyncio.wait_for(process.wait_closed(), 30)
        assert process.exit_status == 255
        assert b"hostgate: your access to this connection ended" in await process.stderr.read()
    ended = await audit_entries(client, user, "connection.session_ended")
    assert ended[0]["details"]["reason"] == "your access to this connection ended"
    assert kernel.live.count(user_id=user.id) == 0


def packet_init() -> bytes:
    """SSH_FXP_INIT, version 3."""
    return (5).to_bytes(4, "big") + bytes([1]) + (3).to_bytes(4, "big")


async def test_a_failed_rsync_and_a_refused_git_push_record_no_transfer(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    """A transfer that did not happen is no event: its file session holds none."""
    user, _, door = await open_door(client, kernel, make_user, make_connection, sshd, tmp_path)
    remote = remote_dir(sshd.home)
    source = tmp_path / "src"
    source.mkdir()
    (source / "one.txt").write_text("one\n")
    # the target's user cannot write there: rsync fails on the server
    done = await door.rsync("-a", f"{source}/", "127.0.0.1:/proc/hostgate-nowhere/")
    assert done.code != 0
    # nothing to fetch: rsync --sender fails
    done = await door.rsync("-a", f"127.0.0.1:{remote}/missing/", f"{tmp_path}/back/")
    assert done.code != 0

    repo = _bare_repo(remote)
    hook = repo / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are closed' >&2\nexit 1\n")
    hook.chmod(0o755)
    subprocess.run(["chown", f"{os.stat(remote).st_uid}", str(hook)], check=True)
    checkout = tmp_path / "work"
    checkout.mkdir()
    for args in (("init", "-q"), ("commit", "-q", "--allow-empty", "-m", "first")):
        done = await door.git(*args, cwd=checkout)
        assert done.code == 0, done.stderr
    # refused by the repository's hook, and a repository that is not there
    done = await door.git("push", "-q", f"127.0.0.1:{repo}", "HEAD:main", cwd=checkout)
    assert done.code != 0 and "pushes are closed" in done.stderr
    done = await door.git("push", "-q", f"127.0.0.1:{remote}/none.git", "HEAD", cwd=checkout)
    assert done.code != 0
    assert subprocess.run(
        [tool("git"), "--git-dir", str(repo), "rev-parse", "-q", "--verify", "main"]
    ).returncode != 0  # fmt: skip

    sessions = await file_events(client, user)
    assert len(sessions["rsync"]) == 2 and len(sessions["git-receive-pack"]) == 2
    assert [actions(s) for s in sessions["rsync"] + sessions["git-receive-pack"]] == [[]] * 4
