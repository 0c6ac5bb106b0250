"""Importing OpenSSH client configuration (the awkward cases of ssh_config(5)) and
exporting connections as an ssh_config fragment; an imported entry logs in to sshd."""

from __future__ import annotations

from typing import Any

from hostgate.db.models.connections import Connection
from hostgate.services.connections.ssh_config import plan_import
from sqlmodel import select

from tests.services.sessions.helpers import Screen, socket_path, ticket_for

API = "/api/v1"

CONFIG = """\
# a leading comment, then global options (they apply to every host)
User   deploy
Include config.d/*  missing.conf

Host web1 web2
    HostName=%h.example.com
    Port = 2222
    # hostgate-tags: prod, EU

Host "db main"
  HostName 10.0.0.7
  ProxyJump bastion
  IdentityFile ~/.ssh/id_db

Host inner
  HostName 10.9.9.9
  ProxyJump ops@gate.example.com:2200,bastion

Match host *.corp
  User corp

Host *.example.com !secret.example.com
  ForwardAgent yes

Host *
  User fallback
  ProxyCommand nc %h %p
"""
INCLUDED = """\
Host bastion
  HostName bastion.example.com
  User jump
"""


def by_name(plan: Any) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in plan.document["connections"]}


def test_the_awkward_cases_of_ssh_config():
    plan = plan_import(CONFIG, {"config.d/bastion": INCLUDED, "~/.ssh/id_db": "KEY TEXT"})
    hosts = by_name(plan)
    assert set(hosts) == {"web1", "web2", "db main", "inner", "bastion", "gate.example.com"}
    # several hosts per block, '=' separators, %h, the first value winning over Host *
    assert hosts["web1"]["host"] == "web1.example.com" and hosts["web1"]["port"] == 2222
    assert hosts["web2"]["host"] == "web2.example.com"
    assert hosts["web1"]["username"] == "deploy"  # the global line comes first
    assert hosts["web1"]["tags"] == ["prod", "eu"]
    # a quoted name with a space; the key file supplied beside the config
    assert hosts["db main"]["host"] == "10.0.0.7"
    assert plan.private_keys == {"ssh-config:db main": {"privateKey": "KEY TEXT"}}
    # ProxyJump: an alias of the file (from an included file), and a chain through a
    # user@host:port that becomes a connection of its own
    assert hosts["db main"]["jumpHostId"] == "ssh-config:bastion"
    # as ssh does: the global User line comes before bastion's own, and the first wins
    assert hosts["bastion"]["username"] == "deploy"
    assert hosts["inner"]["jumpHostId"] == "ssh-config:bastion"
    gate = hosts["gate.example.com"]
    assert (gate["username"], gate["port"]) == ("ops", 2200)
    assert hosts["bastion"]["jumpHostId"] == gate["id"]
    reasons = [f"{s.where}: {s.reason}" for s in plan.skipped]
    assert any("Match blocks are not imported" in r for r in reasons)
    assert any("missing.conf: not supplied" in r for r in reasons)
    assert any("wildcard patterns" in r for r in reasons)
    assert any("proxycommand cannot be stored" in r for r in reasons)


async def test_import_is_dry_run_first_then_all_or_nothing(client, admin, kernel):
    files = {"config.d/bastion": INCLUDED, "~/.ssh/id_db": "not a key"}
    body = {"config": CONFIG, "files": files, "dryRun": True}
    response = await client.post(
        f"{API}/connections/import/ssh-config", headers=admin.headers, json=body
    )
    assert response.status_code == 200, await response.get_json()
    dry = await response.get_json()
    assert dry["dryRun"] is True
    assert {c["name"]: c["jumpHost"] for c in dry["connections"]}["inner"] == "bastion"
    async with kernel.db.session() as session:
        assert (await session.exec(select(Connection))).all() == []

    body["dryRun"] = False
    response = await client.post(
        f"{API}/connections/import/ssh-config", headers=admin.headers, json=body
    )
    assert response.status_code == 200, await response.get_json()
    made = {c["name"]: c for c in (await response.get_json())["connections"]}
    assert made["db main"]["privateKey"] is True and made["db main"]["jumpHost"] == "bastion"
    stored = await client.get(f"{API}/connections/{made['inner']['id']}", headers=admin.headers)
    assert (await stored.get_json())["jumpHostId"] == made["bastion"]["id"]

    # a wrong port anywhere: nothing of the file is created
    async with kernel.db.session() as session:
        before = len((await session.exec(select(Connection))).all())
    bad = "Host fine\n  HostName a.example\nHost broken\n  Port twenty-two\n"
    response = await client.post(
        f"{API}/connections/import/ssh-config", headers=admin.headers, json={"config": bad}
    )
    assert response.status_code == 400
    assert "Port" in (await response.get_json())["error"]
    async with kernel.db.session() as session:
        assert len((await session.exec(select(Connection))).all()) == before


async def test_export_is_a_fragment_that_imports_back(client, admin):
    await client.post(
        f"{API}/connections/import/ssh-config",
        headers=admin.headers,
        json={"config": CONFIG, "files": {"config.d/bastion": INCLUDED}},
    )
    response = await client.get(f"{API}/connections/export/ssh-config", headers=admin.headers)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    text = (await response.get_data()).decode()
    assert "ProxyCommand" not in text and "KEY" not in text
    back = by_name(plan_import(text, {}))
    assert back["db-main"]["host"] == "10.0.0.7"
    assert back["db-main"]["jumpHostId"] == "ssh-config:bastion"
    assert back["web1"]["tags"] == ["prod", "eu"]
    assert back["web1"]["port"] == 2222


async def test_an_imported_entry_logs_in_with_its_key_file(client, kernel, admin, sshd):
    config = (
        f"Host lab\n  HostName {sshd.host}\n  Port {sshd.port}\n  User {sshd.username}\n"
        "  IdentityFile ~/.ssh/id_lab\n"
    )
    response = await client.post(
        f"{API}/connections/import/ssh-config",
        headers=admin.headers,
        json={"config": config, "files": {"~/.ssh/id_lab": sshd.private_key}},
    )
    [lab] = (await response.get_json())["connections"]
    async with client.websocket(socket_path("ssh", ticket_for(kernel, admin), lab["id"])) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.step("echo key-$((40+2))", "key-42")
        await screen.send("exit\r")
        assert await screen.until_closed() == 1000


def test_the_cli_reads_the_config_and_the_files_it_names(tmp_path, monkeypatch, capsys):
    """The CLI's ``main()`` in-process: the commands, not a new interpreter per command."""
    from hostgate.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    monkeypatch.setenv("HOSTGATE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HOSTGATE_ENCRYPTION_KEY", "5a" * 32)
    monkeypatch.setenv("HOSTGATE_ADMIN_PASSWORD", "root-password")
    code, _, err = run("setup", "--username", "root")
    assert code == 0, err
    monkeypatch.delenv("HOSTGATE_ADMIN_PASSWORD")
    ssh_dir = tmp_path / "dot-ssh"
    (ssh_dir / "config.d").mkdir(parents=True)
    (ssh_dir / "config").write_text(CONFIG)
    (ssh_dir / "config.d" / "bastion").write_text(INCLUDED)
    (ssh_dir / "id_db").write_text("KEY TEXT")
    (ssh_dir / "unrelated_key").write_text("NEVER READ")
    config = str(ssh_dir / "config")
    code, out, err = run("connection", "import-ssh-config", config, "--owner", "root", "--dry-run")
    assert code == 0, err
    assert out.startswith("would create 6 connections: ")
    assert "missing.conf: not supplied" in err
    code, out, err = run("connection", "import-ssh-config", config, "--owner", "root")
    assert code == 0, err
    assert out.startswith("created 6 connections")
    code, out, err = run("connection", "export", "--owner", "root")
    assert code == 0, err
    exported = {c["name"]: c for c in __import__("json").loads(out)["connections"]}
    assert exported["inner"]["jumpHostId"] == exported["bastion"]["id"]
