"""Export and import: the HTTP routes and the ``hostgate connection`` CLI."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import stat
import sys

import pytest
from hostgate.cli import main
from hostgate.testing import TEST_KEY

from tests.services.connections.support import (
    PASSWORD,
    TOKEN,
    audit_entries,
    create,
    get_json,
    send,
)

PASSPHRASE = "correct horse battery staple"


def cli_env(**extra: str) -> dict[str, str]:
    """The test instance's key; only the ssh pack (other packs are not under test here)."""
    others = sorted(
        ep.name for ep in importlib.metadata.entry_points(group="hostgate") if ep.name != "ssh"
    )
    return {
        "HOSTGATE_ENCRYPTION_KEY": TEST_KEY,
        "HOSTGATE_DISABLE_PLUGINS": ",".join(others),
        **extra,
    }


@pytest.fixture
def cli(capsys, monkeypatch, config):
    """``await cli("export", ..., env={...})`` -> (exit code, stdout, stderr).

    Runs ``hostgate --data-dir <the test instance> connection ...`` in this process
    (in a thread, beside the running app): the same code path as the command line
    without paying an interpreter start per call.
    """

    async def run(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        monkeypatch.delenv("HOSTGATE_EXPORT_PASSPHRASE", raising=False)
        for name, value in cli_env(**(env or {})).items():
            monkeypatch.setenv(name, value)

        def call() -> int:
            try:
                return main(["--data-dir", str(config.data_dir), "connection", *argv])
            except SystemExit as exc:
                if isinstance(exc.code, str):
                    print(exc.code, file=sys.stderr)
                    return 1
                return int(exc.code or 0)

        capsys.readouterr()
        code = await asyncio.to_thread(call)
        out, err = capsys.readouterr()
        return code, out, err

    return run


async def test_http_export_holds_own_items_and_no_secrets(client, make_user, kernel):
    alice = await make_user("alice")
    bob = await make_user("bob")
    group = await send(client, "POST", "/connections/groups", alice, {"name": "lab"}, 201)
    await create(client, alice, name="a1", password=PASSWORD, token=TOKEN, groupId=group["id"],
                 tags=["x"], domain="CORP")  # fmt: skip
    await create(client, bob, name="b1")
    response = await client.get("/api/v1/connections/export", headers=alice.headers)
    assert response.status_code == 200
    assert response.headers["Content-Disposition"].startswith("attachment; filename=")
    document = json.loads(await response.get_data(as_text=True))
    assert document["format"] == "hostgate-connections" and document["version"] == 1
    assert [g["name"] for g in document["groups"]] == ["lab"]
    [item] = document["connections"]
    assert item["name"] == "a1" and item["groupId"] == group["id"]
    assert item["extraConfig"] == {"domain": "CORP"} and item["tags"] == ["x"]
    assert "secrets" not in document
    assert (await audit_entries(kernel, "connections.exported"))[-1].username == "alice"


async def test_http_import_creates_new_items_all_or_nothing(client, make_user):
    bob = await make_user("bob")
    document = {
        "version": 1,
        "exportedAt": "2024-01-01 00:00:00",
        "groups": [
            {"id": "g1", "name": "outer", "parentId": None, "sortOrder": 0},
            {"id": "g2", "name": "inner", "parentId": "g1", "sortOrder": 0},
        ],
        "connections": [
            {"id": "c1", "name": "web", "protocol": "fakedesk", "host": "10.0.0.1",
             "port": 7900, "username": "u", "groupId": "g2", "shared": 0},
            {"id": "c2", "name": "db", "protocol": "postgres", "host": "10.0.0.2", "port": 5432,
             "username": "u", "groupId": None, "shared": 0},
        ],
    }  # fmt: skip
    error = await send(client, "POST", "/connections/import", bob, document, expect=400)
    assert "connections[1] (db)" in error["error"] and "protocol" in error["error"]
    assert (await get_json(client, "/connections", bob))["groups"] == []

    body = await send(client, "POST", "/connections/import?skipInvalid=true", bob, document)
    assert body["groupsCreated"] == 2 and body["connectionsCreated"] == 1
    assert len(body["skipped"]) == 1
    listing = await get_json(client, "/connections", bob)
    outer = listing["groups"][0]
    assert outer["name"] == "outer" and outer["id"] not in ("g1", "g2")
    inner = outer["children"][0]
    assert [c["name"] for c in inner["connections"]] == ["web"]


async def test_guard_rails_survive_an_export_and_import_round_trip(client, make_user):
    alice = await make_user("alice")
    bob = await make_user("bob")
    denied = {"upload": False, "download": True, "delete": False, "copy": True, "paste": False}
    made = await create(client, alice, name="guarded", approvalRequired=True,
                        moderation="required", actions=denied)  # fmt: skip
    await create(client, alice, name="plain")
    response = await client.get("/api/v1/connections/export", headers=alice.headers)
    document = json.loads(await response.get_data(as_text=True))
    exported = {c["name"]: c for c in document["connections"]}
    assert exported["guarded"]["approvalRequired"] is True
    assert exported["guarded"]["moderation"] == "required"
    assert exported["guarded"]["actions"] == denied
    assert exported["plain"]["approvalRequired"] is False
    assert exported["plain"]["moderation"] == "none"
    assert set(exported["plain"]["actions"].values()) == {True}

    # a bad value is a 400 naming the item, and nothing is imported
    broken = json.loads(json.dumps(document))
    broken["connections"][0]["moderation"] = "maybe"
    error = await send(client, "POST", "/connections/import", bob, broken, expect=400)
    assert "moderation" in error["error"]
    broken["connections"][0]["moderation"] = "none"
    broken["connections"][0]["actions"] = {"teleport": False}
    error = await send(client, "POST", "/connections/import", bob, broken, expect=400)
    assert "teleport" in error["error"]
    assert (await get_json(client, "/connections", bob))["ungrouped"] == []

    body = await send(client, "POST", "/connections/import", bob, document)
    assert body["connectionsCreated"] == 2
    listing = (await get_json(client, "/connections", bob))["ungrouped"]
    copies = {c["name"]: c for c in listing}
    assert copies["guarded"]["id"] != made["id"]
    stored = await get_json(client, f"/connections/{copies['guarded']['id']}", bob)
    assert stored["approvalRequired"] is True and stored["moderation"] == "required"
    assert stored["actions"] == denied
    plain = await get_json(client, f"/connections/{copies['plain']['id']}", bob)
    assert plain["approvalRequired"] is False and plain["moderation"] == "none"
    # exported again, the copy says the same as the original
    again = await client.get("/api/v1/connections/export", headers=bob.headers)
    second = {c["name"]: c for c in json.loads(await again.get_data(as_text=True))["connections"]}
    for key in ("approvalRequired", "moderation", "actions"):
        assert second["guarded"][key] == exported["guarded"][key]


async def test_import_and_export_need_the_permission(client, make_user):
    plain = await make_user("plain", permissions=["connections.create"])
    await get_json(client, "/connections/export", plain, expect=403)
    await send(client, "POST", "/connections/import", plain, {"connections": []}, expect=403)


async def test_cli_export_import_round_trip_with_encrypted_secrets(
    client, make_user, cli, tmp_path
):
    alice = await make_user("alice")
    bob = await make_user("bob")
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nKEY-s3cr3t\n-----END OPENSSH PRIVATE KEY-----\n"
    group = await send(client, "POST", "/connections/groups", alice, {"name": "servers"}, 201)
    await create(
        client, alice, name="shell", protocol="ssh", port=2222, username="root",
        password=PASSWORD, privateKey=key, passphrase="pp-s3cr3t", groupId=group["id"],
    )  # fmt: skip

    plain_file = tmp_path / "plain.json"
    code, _, err = await cli("export", "--owner", "alice", "-o", str(plain_file))
    assert code == 0, err
    plain = json.loads(plain_file.read_text())
    assert "secrets" not in plain and "s3cr3t" not in plain_file.read_text()
    assert [c["name"] for c in plain["connections"]] == ["shell"]

    sealed_file = tmp_path / "sealed.json"
    code, _, err = await cli(
        "export", "--owner", "alice", "--with-secrets", "-o", str(sealed_file),
        env={"HOSTGATE_EXPORT_PASSPHRASE": PASSPHRASE},
    )  # fmt: skip
    assert code == 0, err
    assert "s3cr3t" not in sealed_file.read_text()
    assert stat.S_IMODE(sealed_file.stat().st_mode) == 0o600
    sealed = json.loads(sealed_file.read_text())
    assert (
        sealed["secrets"]["cipher"] == "AES-256-GCM"
        and sealed["secrets"]["kdf"]["name"] == "scrypt"
    )

    code, _, err = await cli("import", str(sealed_file), "--owner", "bob")
    assert code != 0 and "passphrase" in err
    code, _, err = await cli(
        "import", str(sealed_file), "--owner", "bob",
        env={"HOSTGATE_EXPORT_PASSPHRASE": "wrong passphrase"},
    )  # fmt: skip
    assert code == 1 and "wrong passphrase" in err
    assert (await get_json(client, "/connections", bob))["groups"] == []

    code, out, err = await cli(
        "import", str(sealed_file), "--owner", "bob",
        env={"HOSTGATE_EXPORT_PASSPHRASE": PASSPHRASE},
    )  # fmt: skip
    assert code == 0, err
    assert "imported 1 connections and 1 groups with credentials" in out
    listing = await get_json(client, "/connections", bob)
    [imported] = listing["groups"][0]["connections"]
    detail = await get_json(client, f"/connections/{imported['id']}", bob)
    assert detail["hasPassword"] and detail["hasPrivateKey"] and detail["hasPassphrase"]
    assert (detail["port"], detail["username"]) == (2222, "root")
    session = await get_json(client, f"/connections/{imported['id']}/session", bob)
    assert session["password"] == PASSWORD


async def test_cli_import_refuses_unknown_owners_and_bad_files(cli, tmp_path):
    document = {"connections": [{"name": "x", "protocol": "ssh", "host": "h", "owner": "ghost"}]}
    path = tmp_path / "in.json"
    path.write_text(json.dumps(document))
    code, _, err = await cli("import", str(path))
    assert code == 1 and "ghost" in err
    path.write_text("{not json")
    code, _, err = await cli("import", str(path))
    assert code == 1 and "not JSON" in err
    path.write_text('{"connections": ' + "[" * 1000 + "]" * 1000 + "}")
    code, _, err = await cli("import", str(path))
    assert code == 1 and "nested deeper" in err
