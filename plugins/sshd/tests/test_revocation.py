"""Revoked keys and certificates (``sshd.revoked_keys``): refused at once, open sessions closed.

Certificates and KRLs are made by the real ``ssh-keygen`` and used by the real ``ssh``;
the exported KRL is checked by ``ssh-keygen -Q``, as sshd would read it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import asyncssh
import hostgate._compat as compat
import pytest

from plugins.sshd.tests.door import (
    SSH_TIMEOUT,
    audit_entries,
    client_options,
    connect,
    door_of,
    known_hosts,
    make_key,
    register_key,
    run_ssh,
    ssh_binary,
)
from plugins.sshd.tests.test_certificates import box, make_ca, sign, trust
from testsupport.peers import peer_unavailable

REVOKED = "sshd.revoked_keys"


async def revoke(client, admin, text: str) -> None:
    response = await client.put("/api/v1/settings", json={REVOKED: text}, headers=admin.headers)
    assert response.status_code == 200, await response.get_data()


def fingerprint_of(public_path: Path) -> str:
    return asyncssh.read_public_key(str(public_path)).get_fingerprint("sha256")


async def krl_revokes(krl: bytes, directory: Path, public: Path) -> bool:
    """``ssh-keygen -Q -f KRL``: does the KRL revoke this key or certificate?"""
    binary = shutil.which("ssh-keygen")
    if binary is None:
        peer_unavailable("ssh-keygen", "the OpenSSH tools are not installed")
    assert binary is not None
    path = directory / "exported.krl"
    path.write_bytes(krl)
    proc = await asyncio.create_subprocess_exec(
        binary, "-Q", "-f", str(path), str(public),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    assert b"REVOKED" in out or b"ok" in out, (out, err)
    return proc.returncode != 0


async def export(client, admin) -> bytes:
    response = await client.get("/api/v1/sshd/revoked-keys.krl", headers=admin.headers)
    assert response.status_code == 200, await response.get_data()
    assert response.headers["Content-Type"] == "application/octet-stream"
    return await response.get_data()


def ssh_with(cert: Path) -> tuple[str, ...]:
    return ("-o", f"CertificateFile={cert}")


@pytest.mark.parametrize("how", ["serial", "id", "certificate key", "ca key"])
async def test_a_revoked_certificate_is_refused_and_the_krl_revokes_it_too(
    client, kernel, admin, make_user, make_connection, sshd, tmp_path, how
):
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    ca = await make_ca(tmp_path)
    await trust(client, admin, ca)
    key, other_key = make_key(tmp_path), make_key(tmp_path, "id_other")
    valid = ("-n", "alice", "-V", "-5m:+1h")
    cert = await sign(ca, key, *valid, "-z", "17", name="alice")  # key id alice-id
    other = await sign(ca, other_key, *valid, "-z", "30", name="other")  # key id other-id
    hosts = await known_hosts(client, user, tmp_path)
    port = door_of(kernel).port
    ca_line = Path(f"{ca}.pub").read_text().strip()
    directive = {
        "serial": f"ca: {fingerprint_of(Path(f'{ca}.pub'))}\nserial: 10-20",
        "id": f"ca: {ca_line}\nid: alice-id",
        "certificate key": f"key: {key.public_line}",
        "ca key": f"key: {ca_line}",
    }[how]
    await revoke(client, admin, f"# revoked on the day\n{directive}\n")

    done = await run_ssh(port, "alice:box", key, hosts, "true", options=ssh_with(cert))
    assert done.code == 255
    assert "Permission denied" in done.stderr
    assert await audit_entries(client, user, "auth.login") == []
    [failed] = await audit_entries(client, user, "auth.login_failed")
    # a revoked CA is no longer trusted: its certificates are refused as an unknown CA's
    reason = "ssh_certificate_rejected" if how == "ca key" else "ssh_certificate_revoked"
    assert failed["details"]["reason"] == reason

    krl = await export(client, admin)
    assert await krl_revokes(krl, tmp_path, cert)
    revokes_other = await krl_revokes(krl, tmp_path, other)
    assert revokes_other is (how == "ca key")
    if not revokes_other:  # what the list does not name still signs in
        done = await run_ssh(
            port, "alice:box", other_key, hosts, "echo other-$((1+1))", options=ssh_with(other)
        )
        assert done.code == 0, done.stderr
        assert done.stdout.strip() == "other-2"
        [login] = await audit_entries(client, user, "auth.login")
        assert login["details"]["certificateSerial"] == 30
        assert login["details"]["certificateKeyId"] == "other-id"


async def open_shell(port: int, login: str, **options: Any) -> tuple[Any, Any]:
    """A shell through the door, once it answered."""
    conn = await asyncssh.connect(
        "127.0.0.1", port, username=login, known_hosts=None, agent_path=None,
        password=None, kbdint_auth=False, password_auth=False, **options,
    )  # fmt: skip
    process = await conn.create_process(term_type="xterm", term_size=(80, 24), encoding=None)
    process.stdin.write(b"echo ready-$((1+1))\n")
    seen = b""
    while b"ready-2" not in seen:
        seen += await process.stdout.read(4096)
    return conn, process


async def test_revoking_a_key_ends_its_open_ssh_session_with_a_message_and_refuses_it(
    client, kernel, admin, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    key, spare = make_key(tmp_path), make_key(tmp_path, "id_spare")
    await register_key(client, user, key)
    await register_key(client, user, spare, name="spare")
    hosts = await known_hosts(client, user, tmp_path)
    port = door_of(kernel).port
    ssh = await asyncio.create_subprocess_exec(
        ssh_binary(), *client_options(key, hosts), "-p", str(port), "-l", "alice:box",
        "127.0.0.1", "echo ready-$((1+1)); cat",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env={**os.environ, "HOME": str(tmp_path)},
    )  # fmt: skip
    assert ssh.stdout is not None and ssh.stderr is not None
    assert b"ready-2" in await asyncio.wait_for(ssh.stdout.readline(), SSH_TIMEOUT)
    kept, _ = await open_shell(port, "alice:box", client_keys=[spare.key])

    await revoke(client, admin, f"hash: {key.fingerprint}\n")

    told = await asyncio.wait_for(ssh.stderr.read(), SSH_TIMEOUT)
    assert await ssh.wait() == 255
    assert b"revoked by an administrator" in told
    [closed] = await audit_entries(client, user, "sshd.revoked_connection_closed")
    assert closed["details"]["keyFingerprint"] == key.fingerprint
    [ended] = await audit_entries(client, user, "connection.session_ended")
    result = await kept.run("echo still-$((1+1))", check=False)  # the other key's session
    assert "still-2" in str(result.stdout)
    kept.close()
    with pytest.raises(asyncssh.PermissionDenied):
        await connect(port, "alice:box", key.key)
    failed = await audit_entries(client, user, "auth.login_failed")
    assert [entry["details"]["reason"] for entry in failed] == ["ssh_key_revoked"]


async def test_revoking_a_certificate_serial_closes_the_session_that_used_it(
    client, kernel, admin, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    ca = asyncssh.generate_private_key("ssh-ed25519")
    ca_line = ca.export_public_key("openssh").decode().strip()
    response = await client.put(
        "/api/v1/settings", json={"sshd.trusted_user_ca_keys": ca_line}, headers=admin.headers
    )
    assert response.status_code == 200
    key = asyncssh.generate_private_key("ssh-ed25519")
    cert = ca.generate_user_certificate(key, "laptop", principals=["alice"], serial=4242)
    conn, _ = await open_shell(door_of(kernel).port, "alice:box", client_keys=[(key, cert)])
    [login] = await audit_entries(client, user, "auth.login")
    assert login["details"]["certificateSerial"] == 4242

    await revoke(client, admin, f"ca: {ca.get_fingerprint('sha256')}\nserial: 4000-4999\n")

    await conn.wait_closed()  # asyncssh's client is told no reason: OpenSSH's is, above
    [closed] = await audit_entries(client, user, "sshd.revoked_connection_closed")
    assert closed["details"]["certificateSerial"] == 4242


async def test_where_certificates_cannot_be_checked_none_signs_in_while_any_is_revoked(
    client, kernel, admin, make_user, make_connection, sshd, monkeypatch
):
    """An asyncssh outside the compat range shows no certificate: refuse rather than guess."""
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    ca = asyncssh.generate_private_key("ssh-ed25519")
    ca_line = ca.export_public_key("openssh").decode().strip()
    response = await client.put(
        "/api/v1/settings", json={"sshd.trusted_user_ca_keys": ca_line}, headers=admin.headers
    )
    assert response.status_code == 200
    key = asyncssh.generate_private_key("ssh-ed25519")
    cert = ca.generate_user_certificate(key, "laptop", principals=["alice"], serial=7)
    real = compat.installed_version
    monkeypatch.setattr(
        compat, "installed_version", lambda name: "999.0" if name == "asyncssh" else real(name)
    )
    port = door_of(kernel).port
    conn, process = await open_shell(port, "alice:box", client_keys=[(key, cert)])  # none revoked
    conn.close()
    other = asyncssh.generate_private_key("ssh-ed25519").get_fingerprint("sha256")
    await revoke(client, admin, f"hash: {other}\n")
    with pytest.raises(asyncssh.PermissionDenied):
        await open_shell(port, "alice:box", client_keys=[(key, cert)])


BAD_LISTS = [
    ("serial: 17", "needs a ca: line"),
    ("ca: SHA256:nope\nserial: 1", "line 1"),
    ("ca: SHA256:" + "A" * 43 + "\nserial: 0", "line 2"),
    ("ca: SHA256:" + "A" * 43 + "\nserial: 20-10", "line 2"),
    ("key: ssh-ed25519 not-base64", "line 1"),
    ("hash: ssh-ed25519 AAAA", "line 1"),
    ("revoke: everything", "unknown directive"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n", "never a private key"),
]


async def test_a_bad_revocation_list_is_refused_and_changes_nothing(client, admin):
    await revoke(client, admin, "# nothing yet\n")
    for text, says in BAD_LISTS:
        response = await client.put("/api/v1/settings", json={REVOKED: text}, headers=admin.headers)
        assert response.status_code == 400, text
        body = (await response.get_data()).decode()
        assert says in body, (text, body)
        assert "b3BlbnNzaC1rZXktdjEAAAAA" not in body
    settings = await (await client.get("/api/v1/settings", headers=admin.headers)).get_json()
    assert settings["settings"][REVOKED] == "# nothing yet\n"


async def test_the_krl_needs_an_untrusted_cas_key_and_an_admin(client, admin, make_user, tmp_path):
    user = await make_user("alice")
    assert (
        await client.get("/api/v1/sshd/revoked-keys.krl", headers=user.headers)
    ).status_code == 403
    unknown = asyncssh.generate_private_key("ssh-ed25519").get_fingerprint("sha256")
    await revoke(client, admin, f"ca: {unknown}\nid: someone\n")
    response = await client.get("/api/v1/sshd/revoked-keys.krl", headers=admin.headers)
    assert response.status_code == 409
    assert "give its public key line" in (await response.get_json())["error"]


async def test_the_cli_action_writes_the_krl(client, kernel, admin, tmp_path):
    """``hostgate sshd krl FILE`` (its action, run in this process: the CLI starts a kernel)."""
    from hostgate_sshd.plugin import register_commands

    key = make_key(tmp_path)
    await revoke(client, admin, f"key: {key.public_line}\n")
    [command] = register_commands()
    assert [argument.name for argument in command.arguments["krl"]] == ["file"]
    _, write = command.actions["krl"]
    said = await write(kernel, {"file": str(tmp_path / "out.krl")})  # type: ignore[call-arg]
    assert "RevokedKeys" in said
    public = tmp_path / "id.pub"
    public.write_text(key.public_line + "\n")
    assert await krl_revokes((tmp_path / "out.krl").read_bytes(), tmp_path, public)
    other = make_key(tmp_path, "id_other")
    public.write_text(other.public_line + "\n")
    assert not await krl_revokes((tmp_path / "out.krl").read_bytes(), tmp_path, public)
