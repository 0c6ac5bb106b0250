"""Registering, listing and revoking SSH keys; the host keys and how they are kept."""

from __future__ import annotations

import asyncssh
from hostgate.db.models.settings import SystemValue
from hostgate_sshd.keys import load_host_keys, load_jump_host_key
from sqlmodel import select

from plugins.sshd.tests.door import door_of, make_key, register_key


async def add(client, user, public_key, name="k"):
    return await client.post(
        "/api/v1/profile/ssh-keys",
        json={"publicKey": public_key, "name": name},
        headers=user.headers,
    )


async def test_bad_keys_are_400_and_change_nothing(client, make_user, tmp_path):
    user = await make_user("alice")
    private = asyncssh.generate_private_key("ssh-ed25519").export_private_key("openssh").decode()
    small_rsa = asyncssh.generate_private_key("ssh-rsa", key_size=1024)
    for text in (
        "",
        "not a key",
        "ssh-ed25519 AAAA-not-base64",
        private,
        small_rsa.export_public_key("openssh").decode(),
        "ssh-ed25519 " + "A" * 20000,
    ):
        response = await add(client, user, text)
        assert response.status_code == 400, text[:40]
        body = await response.get_json()
        assert len(text) < 40 or text[12:40] not in body["error"]  # never echoed
    response = await add(client, user, make_key(tmp_path).public_line, name="x" * 101)
    assert response.status_code == 400
    listed = await (await client.get("/api/v1/profile/ssh-keys", headers=user.headers)).get_json()
    assert listed == {"keys": []}


async def test_keys_are_listed_unique_and_deleted_by_owner_or_admin(
    client, make_user, admin, tmp_path
):
    alice, bob = await make_user("alice"), await make_user("bob")
    key = make_key(tmp_path, "one")
    stored = await register_key(client, alice, key, name="")  # the comment names it
    assert stored["name"] == "one@test"
    assert stored["algorithm"] == "ssh-ed25519"
    assert stored["fingerprint"].startswith("SHA256:")
    assert stored["publicKey"] == " ".join(key.public_line.split(" ")[:2])

    # one key identifies one user: bob cannot register it too
    duplicate = await add(client, bob, key.public_line)
    assert duplicate.status_code == 409

    # bob cannot see or delete alice's keys; an admin can
    assert (
        await client.get(f"/api/v1/users/{alice.id}/ssh-keys", headers=bob.headers)
    ).status_code == 403
    gone = await client.delete(f"/api/v1/profile/ssh-keys/{stored['id']}", headers=bob.headers)
    assert gone.status_code == 404
    listed = await client.get(f"/api/v1/users/{alice.id}/ssh-keys", headers=admin.headers)
    assert [k["id"] for k in (await listed.get_json())["keys"]] == [stored["id"]]
    revoked = await client.delete(
        f"/api/v1/users/{alice.id}/ssh-keys/{stored['id']}", headers=admin.headers
    )
    assert revoked.status_code == 200
    assert (
        await (await client.get("/api/v1/profile/ssh-keys", headers=alice.headers)).get_json()
    ) == {"keys": []}
    again = await client.delete(f"/api/v1/profile/ssh-keys/{stored['id']}", headers=alice.headers)
    assert again.status_code == 404

    second = await register_key(client, alice, make_key(tmp_path, "two"))
    deleted = await client.delete(f"/api/v1/profile/ssh-keys/{second['id']}", headers=alice.headers)
    assert deleted.status_code == 200
    audit = await (await client.get("/api/v1/audit", headers=alice.headers)).get_json()
    types = [e["eventType"] for e in audit["entries"]]
    # alice's own view: the admin's revocation is the admin's entry
    assert types.count("auth.ssh_key_added") == 2 and types.count("auth.ssh_key_removed") == 1
    audit = await (await client.get("/api/v1/audit", headers=admin.headers)).get_json()
    [revocation] = [
        e
        for e in audit["entries"]
        if e["eventType"] == "auth.ssh_key_removed" and e["username"] == "admin"
    ]
    assert revocation["target"] == "alice" and revocation["details"]["keyId"] == stored["id"]


async def test_host_keys_are_made_once_kept_sealed_and_shown(client, kernel, make_user):
    user = await make_user("alice")
    body = await (await client.get("/api/v1/sshd/host-keys", headers=user.headers)).get_json()
    assert body["listening"] is True and body["port"] == door_of(kernel).port
    assert body["separator"] == ":"
    algorithms = sorted(k["algorithm"] for k in body["hostKeys"])
    assert algorithms == ["ssh-ed25519", "ssh-rsa"]

    # a second node (or a restart) loads the same keys from the database
    again = await load_host_keys(kernel)
    assert sorted(k.get_fingerprint("sha256") for k in again) == sorted(
        k["fingerprint"] for k in body["hostKeys"]
    )
    async with kernel.db.session() as session:
        rows = (await session.exec(select(SystemValue))).all()
    stored = {row.name: row.value for row in rows if row.name.startswith("pack:sshd.")}
    assert set(stored) == {
        "pack:sshd.host_key.ed25519",
        "pack:sshd.host_key.rsa",
        "pack:sshd.host_key.jump",
    }
    jump = await load_jump_host_key(kernel)
    assert body["jumpHostKey"]["fingerprint"] == jump.get_fingerprint("sha256")
    assert body["jumpHostKey"]["algorithm"] == "ssh-ed25519"
    assert jump.get_fingerprint("sha256") not in {k["fingerprint"] for k in body["hostKeys"]}
    assert all("PRIVATE KEY" not in value for value in stored.values())
    assert (await client.get("/api/v1/sshd/host-keys")).status_code == 401


def test_the_cli_prints_the_same_fingerprints_every_time_and_starts_no_listener(run_cli, tmp_path):
    # an address the listener would refuse, loudly (an error on stderr), if it started
    env = {"HOSTGATE_DATA_DIR": str(tmp_path / "data"), "HOSTGATE_SSHD_LISTEN": "nowhere"}
    code, first, err = run_cli("sshd", "host-keys", env=env)
    assert code == 0, err
    lines = first.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["ssh-ed25519", "ssh-rsa", "ssh-ed25519"]
    assert all(line.split()[1].startswith("SHA256:") for line in lines)
    assert "ProxyJump" in lines[2] and "ProxyJump" not in lines[0]
    assert "front door" not in err
    code, second, err = run_cli("sshd", "host-keys", env=env)
    assert code == 0 and second == first, err
