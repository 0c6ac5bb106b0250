"""With the SSH front door installed, the export routes every host through it:
``ssh prod-db`` with the fragment reaches the real sshd through the gateway, recorded."""

from __future__ import annotations

from collections.abc import Iterator

import hostgate_ssh.plugin as ssh_plugin
import hostgate_sshconfig.plugin as sshconfig_plugin
import hostgate_sshd.plugin as sshd_plugin
import pytest
from hostgate_sshconfig.parser import DOOR_CIPHERS

from plugins.sshd.tests.door import (
    audit_entries,
    client_config,
    door_of,
    jump_known_hosts,
    make_key,
    register_key,
    run_ssh_config,
)
from testsupport.ssh_client import ssh_reads

API = "/api/v1"
DOOR_ALIAS = "hostgate-127.0.0.1"


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    monkeypatch.setenv("HOSTGATE_SSHD_LISTEN", "127.0.0.1:0")  # never the machine's 2222
    yield [ssh_plugin, sshd_plugin, sshconfig_plugin]


async def test_the_exported_fragment_reaches_each_host_through_the_door(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    made = {
        name: await make_connection(
            user,
            "ssh",
            sshd.host,
            sshd.port,
            name=name,
            username=sshd.username,
            password=sshd.password,
        )
        for name in ("prod-db", "web server")
    }
    port = door_of(kernel).port
    response = await client.get(
        f"{API}/connections/export/ssh-config",
        headers={**user.headers, "Host": f"127.0.0.1:{port + 1}"},
    )
    assert response.status_code == 200
    text = (await response.get_data()).decode()
    assert f"Port {sshd.port}\n" not in text  # the real server's address is not in it
    exported = tmp_path / "exported"
    exported.write_text(text)

    # what the real ssh reads: each host jumps through the door, by the connection's id
    door = ssh_reads(exported, DOOR_ALIAS)
    assert door["hostname"] == ["127.0.0.1"] and door["port"] == [str(port)]
    assert door["user"] == ["alice"]
    # both connections the door decrypts prefer AES-GCM (cheaper for the gateway)
    assert door["ciphers"] == [DOOR_CIPHERS]
    assert DOOR_CIPHERS.startswith("aes128-gcm@openssh.com,")
    for alias, name in (("prod-db", "prod-db"), ("web-server", "web server")):
        options = ssh_reads(exported, alias)
        assert options["hostname"] == [made[name].id]
        assert options["proxyjump"] == [DOOR_ALIAS]
        assert options["hostkeyalias"] == [f"{DOOR_ALIAS}-proxyjump"]
        assert options["port"] == ["22"]
        assert options["ciphers"] == [DOOR_CIPHERS]

    [entry] = await audit_entries(client, user, "connections.exported")
    assert entry["details"]["throughDoor"] is True and entry["details"]["connections"] == 2

    # and `ssh prod-db` just works with it: the session is the gateway's, recorded
    key = make_key(tmp_path)
    await register_key(client, user, key)
    hosts = await jump_known_hosts(client, user, tmp_path, f"{DOOR_ALIAS}-proxyjump")
    config = client_config(tmp_path, key, hosts, text)
    done = await run_ssh_config(config, "prod-db", "echo exported-$((6*7))")
    assert done.code == 0, done.stderr
    assert done.stdout == "exported-42\n"
    done = await run_ssh_config(config, "web-server", "hostname >/dev/null; echo $((1+1))")
    assert done.code == 0 and done.stdout == "2\n", done.stderr
    started = await audit_entries(client, user, "connection.session_started")
    assert sorted(s["details"]["connectionId"] for s in started) == sorted(
        c.id for c in made.values()
    )
    assert all(s["details"]["via"] == "ssh" for s in started)
