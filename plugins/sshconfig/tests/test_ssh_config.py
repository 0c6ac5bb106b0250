"""Importing OpenSSH client configuration (the awkward cases of ssh_config(5)) and
exporting connections as an ssh_config fragment; an imported entry logs in to sshd."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from hostgate import InvalidInput
from hostgate.db.models.connections import Connection
from hostgate_sshconfig import parser as ssh_config
from hostgate_sshconfig import routes
from hostgate_sshconfig.parser import plan_import
from sqlmodel import select

from tests.services.sessions.helpers import Screen, socket_path, ticket_for
from testsupport.ssh_client import ssh_reads

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
    code, out, err = run("sshconfig", "import", config, "--owner", "root", "--dry-run")
    assert code == 0, err
    assert "\nwould create 6 connections: " in out
    assert "missing.conf: not supplied" in out
    code, out, err = run("sshconfig", "import", config, "--owner", "root")
    assert code == 0, err
    assert "\ncreated 6 connections" in out
    code, out, err = run("connection", "export", "--owner", "root")
    assert code == 0, err
    exported = {c["name"]: c for c in __import__("json").loads(out)["connections"]}
    assert exported["inner"]["jumpHostId"] == exported["bastion"]["id"]
    # as ssh_config: the hosts themselves, or each through the front door named
    code, out, err = run("sshconfig", "export", "--user", "root")
    assert code == 0, err
    assert "HostName 10.0.0.7" in out and "ProxyJump bastion" in out
    code, out, err = run("sshconfig", "export", "--user", "root", "--door", "gw.example.org:2222")
    assert code == 0, err
    assert "Host hostgate-gw.example.org\n  HostName gw.example.org\n  Port 2222\n" in out
    assert f"HostName {exported['db main']['id']}\n  ProxyJump hostgate-gw.example.org" in out
    assert "10.0.0.7" not in out
    code, out, err = run("sshconfig", "export", "--user", "root", "--door", "gw.example.org")
    assert code == 1 and "--door is the front door's HOST:PORT" in err
    code, out, err = run("sshconfig", "export", "--user", "nobody")
    assert code == 1 and "no user 'nobody'" in err


# -- issue 30 item 1: no value of a connection becomes a directive of its own ----------


async def test_an_ssh_config_import_with_a_control_character_changes_nothing(client, admin, kernel):
    config = 'Host fine\n  HostName a.example\nHost evil\n  User "root\rProxyCommand x"\n'
    response = await client.post(
        f"{API}/connections/import/ssh-config", headers=admin.headers, json={"config": config}
    )
    assert response.status_code == 400
    assert "control characters" in (await response.get_json())["error"]
    async with kernel.db.session() as session:
        assert (await session.exec(select(Connection))).all() == []


HOSTILE_ROWS: list[dict[str, Any]] = [
    # written as ssh reads them
    {"name": "quoting", "host": "q.example", "username": "o'k \"x\" DOM\\u\\\\ser #c =d"},
    {"name": "win", "host": "w.example", "username": "DOMAIN\\alice"},
    {"name": "hash", "host": "h.example", "username": "#root"},
    {"name": "spaced name\nProxyCommand x", "host": "s.example", "username": "a b"},
    {"name": "none", "host": "n.example", "username": "jump"},
    {"name": "via none", "host": "v.example", "username": "u", "jump": "none"},
    {"name": "tagged", "host": "t.example", "username": "t",
     "tags": ["prod\nProxyCommand touch /tmp/pwned", "eu", "a,b"]},
    # left out: no quoting can carry them, or ssh versions read them differently
    {"name": "newline user", "host": "x.example",
     "username": "root\nProxyCommand touch /tmp/pwned"},
    {"name": "cr user", "host": "x.example", "username": "root\r\nLocalCommand id"},
    {"name": "token user", "host": "x.example", "username": "%d"},
    {"name": "env user", "host": "x.example", "username": "${HOME}"},
    {"name": "newline host", "host": "x.example\nProxyCommand touch /tmp/pwned",
     "username": "r"},
    {"name": "token host", "host": "%h.example", "username": "r"},
    {"name": "via newline user", "host": "y.example", "username": "r", "jump": "newline user"},
]  # fmt: skip
EXPORTED = {
    "quoting": "quoting",
    "win": "win",
    "hash": "hash",
    "spaced name\nProxyCommand x": "spaced-name-ProxyCommand-x",
    "none": "none-host",
    "via none": "via-none",
    "tagged": "tagged",
}
ALLOWED = {"host", "hostname", "user", "port", "proxyjump"}


async def test_the_export_is_read_by_real_ssh_exactly_and_injects_nothing(
    client, admin, kernel, tmp_path
):
    """Rows stored before input was checked: each value is read back by ``ssh -G``
    exactly, or its connection is left out; ssh sees no option but the five."""
    async with kernel.db.session() as session:
        rows: dict[str, Connection] = {}
        for row in HOSTILE_ROWS:
            jump = rows[row["jump"]].id if "jump" in row else None
            rows[row["name"]] = Connection(
                owner_id=admin.id, name=row["name"], protocol="ssh", host=row["host"],
                port=2222, username=row["username"], tags=row.get("tags", []),
                jump_host_id=jump,
            )  # fmt: skip
            session.add(rows[row["name"]])
            await session.flush()
        await session.commit()
    response = await client.get(f"{API}/connections/export/ssh-config", headers=admin.headers)
    assert response.status_code == 200
    text = (await response.get_data()).decode()
    config = tmp_path / "exported"
    config.write_text(text)
    directives = [line.split()[0] for line in text.splitlines() if line.strip()]
    assert set(directives) <= {"#", "Host", "HostName", "User", "Port", "ProxyJump"}
    defaults = ssh_reads(tmp_path / "exported", "unconfigured.invalid")
    by_name = {row["name"]: row for row in HOSTILE_ROWS}
    for name, alias in EXPORTED.items():
        seen = ssh_reads(config, alias)
        changed = {k for k, v in seen.items() if defaults.get(k) != v}
        assert changed <= ALLOWED, (alias, changed)
        assert seen["hostname"] == [by_name[name]["host"]]
        assert seen["user"] == [by_name[name]["username"]]
        assert seen["port"] == ["2222"]
        jump = by_name[name].get("jump")
        assert seen.get("proxyjump") == ([EXPORTED[jump]] if jump else None)
    assert f"Host {EXPORTED['none']}" in text  # ProxyJump none would mean "direct"
    for name in set(by_name) - set(EXPORTED):
        alias = name.replace(" ", "-")
        assert f"# {alias} is left out: " in text, name
        assert ssh_reads(config, alias)["hostname"] == [alias]  # not configured at all
    assert "pwned" not in text and "LocalCommand" not in text
    # and hostgate reads it back the same way
    back = by_name_of(plan_import(text, {}))
    assert back["quoting"]["username"] == by_name["quoting"]["username"]
    assert back["win"]["username"] == "DOMAIN\\alice"
    assert back["tagged"]["tags"] == ["eu"]
    assert back["via-none"]["jumpHostId"] == "ssh-config:none-host"


def by_name_of(plan: Any) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in plan.document["connections"]}


# -- issue 30 item 2: an import cannot freeze the gateway --------------------------------

FORTY = "Host " + " ".join(f"host{i}" for i in range(40)) + "\n  User deploy\n"


def test_the_reported_include_bomb_is_refused_early():
    """4,000 Includes of a file with 40 aliases (3.4 s, stalling /health, before)."""
    with pytest.raises(InvalidInput) as refused:
        plan_import("Include forty\n" * 4000, {"forty": FORTY})
    assert refused.value.extra == {"limit": "includes"}
    assert f"more than {ssh_config.MAX_INCLUDES} files read by Include" in refused.value.message
    # as many as allowed cost work in proportion (each alias meets each of its blocks
    # once, about 40 x 256 steps), not aliases squared times repeats (40 x 40 x 256)
    plan = plan_import("Include forty\n" * ssh_config.MAX_INCLUDES, {"forty": FORTY})
    assert plan.spent["includes"] == ssh_config.MAX_INCLUDES
    assert len(plan.document["connections"]) == 40
    assert plan.spent["work"] < 50 * ssh_config.MAX_INCLUDES


LIMITS = [
    ("includes", "Include a\n" * 300, {"a": "# nothing\n"}),
    ("arguments", "Host " + " ".join(f"h{i}" for i in range(300)) + "\n", {}),
    ("pattern", "Host " + "h" * 300 + "\n", {}),
    ("aliases", "".join(f"Host h{i}\n" for i in range(1001)), {}),
    ("aliases", "".join(f"Host h{i}\n  ProxyJump j{i}\n" for i in range(600)), {}),
    ("lines", "#\n" * 20_001, {}),
    ("characters", "Include a\n" * 200, {"a": "#" * 20_000}),
    (
        "work",
        "".join(f"Host h{i}\n" for i in range(900))
        + "".join(f"Host *x{i}*y\n  User u\n" for i in range(200)),
        {},
    ),
    ("work", "Host a\n  User " + '"x"' * 200_000 + "\n", {}),
]


@pytest.mark.parametrize(("limit", "config", "files"), LIMITS)
def test_each_limit_is_a_400_that_names_it(limit, config, files):
    with pytest.raises(InvalidInput) as refused:
        plan_import(config, files)
    assert refused.value.status == 400
    assert refused.value.extra == {"limit": limit}
    assert refused.value.message.startswith("the configuration is too large to import: ")


async def test_a_limit_reaches_the_api_as_the_one_error_shape(client, admin):
    body = {"config": "Include a\n" * 300, "files": {"a": "# nothing\n"}, "dryRun": True}
    response = await client.post(
        f"{API}/connections/import/ssh-config", headers=admin.headers, json=body
    )
    assert response.status_code == 400
    error = await response.get_json()
    assert error["code"] == "invalid_input" and error["limit"] == "includes"
    assert "Include" in error["error"]


def worst_accepted() -> tuple[str, int]:
    """Nearly every alias allowed, tried against as many wildcard blocks as the work
    budget accepts: the costliest configuration an import reads."""
    aliases = "".join(f"Host h{i}\n" for i in range(ssh_config.MAX_ALIASES - 1))

    def config(blocks: int) -> str:
        return aliases + "".join(f"Host *x{i}*y\n  User u\n" for i in range(blocks))

    low, high = 0, 1000
    while low < high:  # the most wildcard blocks still accepted
        middle = (low + high + 1) // 2
        try:
            plan_import(config(middle), {})
            low = middle
        except InvalidInput:
            high = middle - 1
    return config(low), low


@pytest.mark.timeout(300)
async def test_health_answers_while_the_worst_accepted_config_is_read(client, admin, monkeypatch):
    text, blocks = worst_accepted()
    plan = plan_import(text, {})
    assert blocks > 0 and plan.spent["work"] > ssh_config.MAX_WORK * 0.9
    started, release = threading.Event(), threading.Event()
    outcome: dict[str, bool] = {}
    real = ssh_config.plan_import

    def reading(config: str, files: Any) -> Any:
        started.set()
        plan = real(config, files)
        # held until /health has answered: on the event loop this would hang it
        outcome["released"] = release.wait(timeout=60)
        return plan

    monkeypatch.setattr(routes, "plan_import", reading)
    importing = asyncio.ensure_future(
        client.post(
            f"{API}/connections/import/ssh-config",
            headers=admin.headers,
            json={"config": text, "dryRun": True},
        )
    )
    while not started.is_set():
        await asyncio.sleep(0.01)
    health = await client.get(f"{API}/health")
    assert health.status_code == 200
    release.set()
    response = await importing
    assert outcome == {"released": True}
    assert response.status_code == 200, await response.get_json()
    assert len((await response.get_json())["connections"]) == ssh_config.MAX_ALIASES - 1


def test_the_cli_refuses_control_characters_and_unbalanced_quotes(tmp_path, monkeypatch, capsys):
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
    document = {
        "format": "hostgate-connections", "version": 1, "groups": [],
        "connections": [{"name": "evil", "protocol": "ssh", "host": "a.example",
                         "username": "root\nProxyCommand touch /tmp/pwned"}],
    }  # fmt: skip
    (tmp_path / "evil.json").write_text(json.dumps(document))
    code, out, err = run("connection", "import", str(tmp_path / "evil.json"), "--owner", "root")
    assert code == 1 and "control characters" in err and out == ""
    (tmp_path / "config").write_text('Include "config.d/*\nHost a\n')
    code, out, err = run("sshconfig", "import", str(tmp_path / "config"),
                         "--owner", "root")  # fmt: skip
    assert code == 1 and "unbalanced quotes" in err
    code, out, err = run("connection", "export", "--owner", "root")
    assert code == 0, err
    assert json.loads(out)["connections"] == []


async def test_the_export_never_lets_a_connection_go_direct_or_loop(
    client, admin, kernel, make_user, tmp_path
):
    """A jump host the caller cannot see, and a loop of jump hosts stored by mistake:
    those connections are left out (before: exported without ProxyJump, i.e. direct;
    the loop recursed without end)."""
    other = await make_user("other")
    async with kernel.db.session() as session:
        hidden = Connection(owner_id=other.id, name="hidden", protocol="ssh",
                            host="hidden.example", port=22)  # fmt: skip
        session.add(hidden)
        await session.flush()
        behind = Connection(owner_id=admin.id, name="behind", protocol="ssh",
                            host="behind.example", port=22, jump_host_id=hidden.id)  # fmt: skip
        one = Connection(owner_id=admin.id, name="one", protocol="ssh", host="one.example",
                         port=22)  # fmt: skip
        two = Connection(owner_id=admin.id, name="two", protocol="ssh", host="two.example",
                         port=22)  # fmt: skip
        direct = Connection(owner_id=admin.id, name="direct", protocol="ssh",
                            host="direct.example", port=22)  # fmt: skip
        session.add_all([behind, one, two, direct])
        await session.flush()
        one.jump_host_id, two.jump_host_id = two.id, one.id
        session.add_all([one, two])
        await session.commit()
    response = await client.get(f"{API}/connections/export/ssh-config", headers=admin.headers)
    assert response.status_code == 200
    text = (await response.get_data()).decode()
    (tmp_path / "exported").write_text(text)
    assert "# behind is left out: its jump host is not one of the exported" in text
    assert "# one is left out: " in text and "# two is left out: " in text
    assert "Host direct" in text.split("\n")
    for alias in ("behind", "one", "two"):
        assert ssh_reads(tmp_path / "exported", alias)["hostname"] == [alias]
    assert ssh_reads(tmp_path / "exported", "direct")["hostname"] == ["direct.example"]
