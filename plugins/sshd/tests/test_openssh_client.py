"""The real OpenSSH client through the front door to a real OpenSSH sshd, recorded."""

from __future__ import annotations

import hashlib

from plugins.sshd.tests.door import (
    audit_entries,
    door_of,
    known_hosts,
    make_key,
    register_key,
    run_ssh,
)


async def box(make_connection, user, sshd, name="box"):
    return await make_connection(
        user, "ssh", sshd.host, sshd.port, name=name, username=sshd.username, password=sshd.password
    )


async def test_exec_through_the_door_is_recorded_and_audited(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    connection = await box(make_connection, user, sshd)
    key = make_key(tmp_path)
    stored = await register_key(client, user, key)
    assert stored["fingerprint"] == key.fingerprint and stored["lastUsedAt"] is None
    hosts = await known_hosts(client, user, tmp_path)
    port = door_of(kernel).port

    done = await run_ssh(port, "alice:box", key, hosts, "echo door-$((6*7)); whoami")
    assert done.code == 0, done.stderr
    assert done.stdout.splitlines() == ["door-42", sshd.username]

    # the connection's id names it as well as its name; the exit status comes back
    done = await run_ssh(port, f"alice:{connection.id}", key, hosts, "exit 3")
    assert done.code == 3, done.stderr

    [login, _] = await audit_entries(client, user, "auth.login")
    assert login["details"]["method"] == "ssh-key"
    assert login["details"]["keyFingerprint"] == key.fingerprint
    started = await audit_entries(client, user, "connection.session_started")
    assert len(started) == 2
    details = started[-1]["details"]
    assert details["via"] == "ssh"
    assert details["clientAddress"] == "127.0.0.1"
    assert details["keyFingerprint"] == key.fingerprint
    assert details["connectionId"] == connection.id and details["recording"] is True

    listed = await (await client.get("/api/v1/sessions", headers=user.headers)).get_json()
    first = next(s for s in listed["sessions"] if s["id"] == details["sessionId"])
    assert first["via"] == "ssh"  # history marks front-door sessions
    recording = await client.get(f"/api/v1/sessions/{first['id']}/recording", headers=user.headers)
    assert recording.status_code == 200
    assert "door-42" in (await recording.get_data()).decode()

    keys = await (await client.get("/api/v1/profile/ssh-keys", headers=user.headers)).get_json()
    assert keys["keys"][0]["lastUsedAt"] is not None


async def test_shell_on_a_pty_through_openssh(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    key = make_key(tmp_path)
    await register_key(client, user, key)
    hosts = await known_hosts(client, user, tmp_path)

    script = b"echo shell-$((2*21)); tty; exit\n"
    done = await run_ssh(
        door_of(kernel).port, "alice:box", key, hosts, stdin=script, options=("-tt",)
    )
    assert done.code == 0, done.stderr
    assert "shell-42" in done.stdout
    assert "/dev/pts/" in done.stdout

    [started] = await audit_entries(client, user, "connection.session_started")
    cast = await client.get(
        f"/api/v1/sessions/{started['details']['sessionId']}/recording", headers=user.headers
    )
    assert "shell-42" in (await cast.get_data()).decode()


async def test_unknown_target_says_why_on_stderr_and_is_audited(
    client, kernel, make_user, sshd, tmp_path
):
    user = await make_user("alice")
    key = make_key(tmp_path)
    await register_key(client, user, key)
    hosts = await known_hosts(client, user, tmp_path)

    done = await run_ssh(door_of(kernel).port, "alice:nowhere", key, hosts, "true")
    assert done.code == 255
    assert "hostgate: Connection not found" in done.stderr
    [refused] = await audit_entries(client, user, "sshd.session_refused")
    assert refused["target"] == "nowhere"
    assert refused["details"]["reason"] == "Connection not found"


async def test_an_unregistered_key_is_refused_and_counted_like_a_web_failure(
    client, kernel, make_user, tmp_path
):
    user = await make_user("alice")
    registered, other = make_key(tmp_path, "registered"), make_key(tmp_path, "other")
    await register_key(client, user, registered)
    hosts = await known_hosts(client, user, tmp_path)

    done = await run_ssh(door_of(kernel).port, "alice:box", other, hosts, "true")
    assert done.code == 255
    assert "Permission denied" in done.stderr
    [failed] = await audit_entries(client, user, "auth.login_failed")
    assert failed["details"]["reason"] == "ssh_key_rejected"


async def test_failures_at_the_door_lock_the_web_sign_in_too(client, kernel, make_user, tmp_path):
    """One budget whichever door is used: key refusals count toward the web's lockout."""
    from testsupport.fixtures import store_unchecked

    await store_unchecked(kernel, "security.max_login_attempts", 2)
    user = await make_user("alice")
    await register_key(client, user, make_key(tmp_path, "registered"))
    hosts = await known_hosts(client, user, tmp_path)
    other = make_key(tmp_path, "other")
    port = door_of(kernel).port
    for _ in range(2):
        done = await run_ssh(port, "alice:box", other, hosts, "true")
        assert done.code == 255
    web = await client.post(
        "/api/v1/auth/login", json={"username": "alice", "password": user.password}
    )
    assert web.status_code == 429
    assert (await web.get_json())["code"] == "account_locked"
    # and the door says so to the locked account's next client
    done = await run_ssh(port, "alice:box", other, hosts, "true")
    assert "Account locked" in done.stderr


async def test_a_command_reads_its_stdin_to_the_end(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    key = make_key(tmp_path)
    await register_key(client, user, key)
    hosts = await known_hosts(client, user, tmp_path)
    data = bytes(range(256)) * 4096  # 1 MiB, every byte value
    done = await run_ssh(door_of(kernel).port, "alice:box", key, hosts, "sha256sum", stdin=data)
    assert done.code == 0, done.stderr

    # sha256sum answers only at the end of its input: the EOF was relayed too
    assert done.stdout.split()[0] == hashlib.sha256(data).hexdigest()
