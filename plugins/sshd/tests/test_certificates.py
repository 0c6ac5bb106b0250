"""OpenSSH user certificates from an admin's CA, made and used by the real OpenSSH tools."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import asyncssh
import pytest

from plugins.sshd.tests.door import (
    ClientKey,
    audit_entries,
    door_of,
    known_hosts,
    make_key,
    run_ssh,
)
from testsupport.peers import peer_unavailable


async def ssh_keygen(*args: str) -> None:
    """Run the real ``ssh-keygen`` (the CA tooling admins use)."""
    binary = shutil.which("ssh-keygen")
    if binary is None:
        peer_unavailable("ssh-keygen", "the OpenSSH tools are not installed")
    assert binary is not None
    proc = await asyncio.create_subprocess_exec(
        binary, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()


async def make_ca(directory: Path, name: str = "ca") -> Path:
    """A CA key pair made by ``ssh-keygen``; the private key's path."""
    path = directory / name
    await ssh_keygen("-q", "-t", "ed25519", "-N", "", "-C", f"{name}@test", "-f", str(path))
    return path


async def sign(ca: Path, key: ClientKey, *options: str, name: str) -> Path:
    """``ssh-keygen -s``: a user certificate for ``key``; its path."""
    public = key.path.parent / f"{name}.pub"
    public.write_text(key.public_line + "\n")
    await ssh_keygen("-q", "-s", str(ca), "-I", f"{name}-id", *options, str(public))
    return key.path.parent / f"{name}-cert.pub"


async def trust(client, admin, *cas: Path) -> None:
    text = "# the team's CA\n" + "".join(Path(f"{ca}.pub").read_text() for ca in cas)
    response = await client.put(
        "/api/v1/settings", json={"sshd.trusted_user_ca_keys": text}, headers=admin.headers
    )
    assert response.status_code == 200, await response.get_data()


async def box(make_connection, user, sshd):
    return await make_connection(
        user,
        "ssh",
        sshd.host,
        sshd.port,
        name="box",
        username=sshd.username,
        password=sshd.password,
    )


async def test_a_certificate_from_a_trusted_ca_signs_in_and_is_audited(
    client, kernel, admin, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    ca = await make_ca(tmp_path)
    await trust(client, admin, ca)
    key = make_key(tmp_path)  # never registered in the profile
    cert = await sign(ca, key, "-n", "alice,deploy", "-V", "-5m:+1h", name="alice")
    hosts = await known_hosts(client, user, tmp_path)

    done = await run_ssh(
        door_of(kernel).port,
        "alice:box",
        key,
        hosts,
        "echo cert-$((40+2))",
        options=("-o", f"CertificateFile={cert}"),
    )
    assert done.code == 0, done.stderr
    assert done.stdout.strip() == "cert-42"
    [login] = await audit_entries(client, user, "auth.login")
    assert login["details"]["method"] == "ssh-certificate"
    assert login["details"]["via"] == "ssh"
    [started] = await audit_entries(client, user, "connection.session_started")
    assert started["details"]["via"] == "ssh"


@pytest.mark.parametrize(
    ("case", "options"),
    [
        ("expired", ("-n", "alice", "-V", "20200101:20200102")),
        ("not-yet-valid", ("-n", "alice", "-V", "+1d:+2d")),
        ("wrong-principal", ("-n", "bob", "-V", "-5m:+1h")),
        ("other-address", ("-n", "alice", "-O", "source-address=192.0.2.0/24")),
        ("unknown-critical-option", ("-n", "alice", "-O", "critical:no-such-option=1")),
        (
            "unknown-ca",
            (
                "-n",
                "alice",
            ),
        ),
    ],
)
async def test_a_certificate_that_does_not_hold_is_refused_and_counted(
    client, kernel, admin, make_user, tmp_path, case, options
):
    user = await make_user("alice")
    ca = await make_ca(tmp_path)
    await trust(client, admin, ca)
    signer = await make_ca(tmp_path, "rogue") if case == "unknown-ca" else ca
    key = make_key(tmp_path)
    cert = await sign(signer, key, *options, name="alice")
    hosts = await known_hosts(client, user, tmp_path)

    done = await run_ssh(
        door_of(kernel).port,
        "alice:box",
        key,
        hosts,
        "true",
        options=("-o", f"CertificateFile={cert}"),
    )
    assert done.code == 255
    assert "Permission denied" in done.stderr
    assert await audit_entries(client, user, "auth.login") == []
    [failed] = await audit_entries(client, user, "auth.login_failed")
    assert failed["target"] == "alice"


async def test_the_ca_setting_takes_public_keys_only(client, admin, tmp_path):
    ca = await make_ca(tmp_path)
    bad = [
        "not a key",
        Path(ca).read_text(),  # the CA's private key
        "ssh-dss AAAAB3NzaC1kc3MAAACBAP" + "A" * 40,
    ]
    for text in bad:
        response = await client.put(
            "/api/v1/settings", json={"sshd.trusted_user_ca_keys": text}, headers=admin.headers
        )
        assert response.status_code == 400, text
        assert "PRIVATE" not in (await response.get_data()).decode()
    settings = await (await client.get("/api/v1/settings", headers=admin.headers)).get_json()
    assert settings["settings"]["sshd.trusted_user_ca_keys"] == ""


async def test_an_asyncssh_certificate_without_the_plain_key_is_counted_once(
    client, kernel, admin, make_user, tmp_path
):
    """A client offering only a certificate of an untrusted CA is one failure."""
    user = await make_user("alice")
    await trust(client, admin, await make_ca(tmp_path))
    rogue = asyncssh.generate_private_key("ssh-ed25519")
    key = asyncssh.generate_private_key("ssh-ed25519")
    cert = rogue.generate_user_certificate(key, "alice-id", principals=["alice"])
    with pytest.raises(asyncssh.PermissionDenied):
        await asyncssh.connect(
            "127.0.0.1",
            door_of(kernel).port,
            username="alice:box",
            client_keys=[(key, cert)],
            known_hosts=None,
            agent_path=None,
            kbdint_auth=False,
            password_auth=False,
        )
    [failed] = await audit_entries(client, user, "auth.login_failed")
    assert failed["details"]["reason"] == "ssh_certificate_rejected"
