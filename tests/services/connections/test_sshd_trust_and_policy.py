"""Host-key trust and the network policy, end to end against a real OpenSSH sshd.

Targets come from ``kernel.connections.target_for`` and are opened with the ssh
pack's ``hostgate_ssh.client.connect``, exactly as terminals and SFTP do.
"""

from __future__ import annotations

import socket

import pytest
from hostgate import ClientInfo, Conflict, PermissionDenied
from hostgate_ssh.client import connect

from tests.services.connections.support import audit_entries, create, get_json, send


@pytest.fixture
def sshd_secrets(secret_values, request):
    """Add the sshd's credentials to the GET-response scan."""

    def add(server):
        secret_values.add(server.password)
        secret_values.add(server.private_key.splitlines()[1])

    return add


async def ssh_connection(client, user, server, **extra):
    body = {
        "name": "sshd",
        "protocol": "ssh",
        "host": server.host,
        "port": server.port,
        "username": server.username,
        "password": server.password,
        **extra,
    }
    return await create(client, user, **body)


async def run_whoami(kernel, user, connection_id):
    caller = await kernel.identity.caller_for_user(
        user.id, None, ClientInfo(ip_address="127.0.0.1")
    )
    target = await kernel.connections.target_for(caller, connection_id, kernel.protocols["ssh"])
    async with await connect(target) as ssh:
        result = await ssh.run("whoami", check=True)
    return str(result.stdout).strip()


def connections_seen(server) -> int:
    return server.log().count("Connection from")


async def test_first_key_is_trusted_then_a_changed_key_is_refused_until_accepted(
    client, make_user, kernel, private_sshd, sshd_secrets
):
    sshd_secrets(private_sshd)
    owner = await make_user("owner")
    mate = await make_user("mate")
    conn = await ssh_connection(client, owner, private_sshd)
    await send(
        client, "PUT", f"/connections/{conn['id']}/shares", owner,
        {"shares": [{"shareType": "user", "targetId": mate.id}]},
    )  # fmt: skip
    key_path = f"/connections/{conn['id']}/host-key"
    assert await get_json(client, key_path, owner) == {"trusted": None, "pending": None}

    assert await run_whoami(kernel, owner, conn["id"]) == "hgtest"
    keys = await get_json(client, key_path, mate)
    old_fingerprint = private_sshd.host_key_fingerprint
    assert keys["trusted"]["fingerprint"] == old_fingerprint
    assert keys["trusted"]["algorithm"] == "ssh-ed25519"
    assert keys["pending"] is None
    assert await run_whoami(kernel, mate, conn["id"]) == "hgtest"  # same key passes
    trusted = await audit_entries(kernel, "connection.host_key_trusted")
    assert [e.details["fingerprint"] for e in trusted] == [old_fingerprint]

    new_fingerprint = private_sshd.restart_with_new_host_key()
    before = private_sshd.log().count("Accepted password")
    with pytest.raises(Conflict) as refused:
        await run_whoami(kernel, owner, conn["id"])
    assert refused.value.code == "host_key_changed"
    assert refused.value.status == 409
    assert old_fingerprint in refused.value.message and new_fingerprint in refused.value.message
    assert refused.value.body()["presentedFingerprint"] == new_fingerprint
    assert private_sshd.log().count("Accepted password") == before  # no credentials were sent
    keys = await get_json(client, key_path, owner)
    assert keys["trusted"]["fingerprint"] == old_fingerprint
    assert keys["pending"]["fingerprint"] == new_fingerprint
    changed = await audit_entries(kernel, "connection.host_key_changed")
    assert changed[-1].details["presentedFingerprint"] == new_fingerprint

    # mate may use the connection but not edit it, so may not accept the key
    await send(client, "POST", f"{key_path}/accept", mate, {}, expect=403)
    error = await send(
        client, "POST", f"{key_path}/accept", owner, {"fingerprint": old_fingerprint}, expect=409
    )
    assert error["code"] == "host_key_mismatch"
    body = await send(client, "POST", f"{key_path}/accept", owner, {"fingerprint": new_fingerprint})
    assert body["trusted"]["fingerprint"] == new_fingerprint
    assert await run_whoami(kernel, mate, conn["id"]) == "hgtest"
    keys = await get_json(client, key_path, owner)
    assert keys == {"trusted": keys["trusted"], "pending": None}
    accepted = await audit_entries(kernel, "connection.host_key_accepted")
    assert accepted[-1].details["previousFingerprint"] == old_fingerprint
    await send(client, "POST", f"{key_path}/accept", owner, {}, expect=404)


async def test_forgetting_or_changing_the_host_trusts_on_first_use_again(
    client, make_user, kernel, private_sshd, sshd_secrets
):
    sshd_secrets(private_sshd)
    owner = await make_user("owner")
    conn = await ssh_connection(client, owner, private_sshd, privateKey=private_sshd.private_key)
    key_path = f"/connections/{conn['id']}/host-key"
    assert await run_whoami(kernel, owner, conn["id"]) == "hgtest"  # key authentication
    private_sshd.restart_with_new_host_key()
    with pytest.raises(Conflict):
        await run_whoami(kernel, owner, conn["id"])
    body = await send(client, "DELETE", key_path, owner)
    assert body["forgotten"] == 2
    assert await run_whoami(kernel, owner, conn["id"]) == "hgtest"
    keys = await get_json(client, key_path, owner)
    assert keys["trusted"]["fingerprint"] == private_sshd.host_key_fingerprint

    body = await send(client, "PUT", f"/connections/{conn['id']}", owner, {"host": "localhost"})
    assert body["connection"]["host"] == "localhost"
    assert await get_json(client, key_path, owner) == {"trusted": None, "pending": None}
    updated = (await audit_entries(kernel, "connection.updated"))[-1]
    assert updated.details["hostKeysForgotten"] == [private_sshd.host_key_fingerprint]


async def test_a_scan_shows_the_key_before_any_session_and_trusts_nothing_by_itself(
    client, make_user, kernel, private_sshd, sshd_secrets
):
    sshd_secrets(private_sshd)
    owner = await make_user("owner")
    mate = await make_user("mate")
    conn = await ssh_connection(client, owner, private_sshd)
    await send(
        client, "PUT", f"/connections/{conn['id']}/shares", owner,
        {"shares": [{"shareType": "user", "targetId": mate.id}]},
    )  # fmt: skip
    key_path = f"/connections/{conn['id']}/host-key"
    logins = private_sshd.log().count("Accepted password")

    # first use: the key is shown and kept pending, not trusted; no login happens
    first = private_sshd.host_key_fingerprint
    body = await send(client, "POST", f"{key_path}/scan", mate, {})
    assert body["state"] == "new"
    assert body["presented"]["fingerprint"] == first
    assert body["presented"]["algorithm"] == "ssh-ed25519"
    assert body["presented"]["publicKey"].startswith("ssh-ed25519 ")
    assert body["trusted"] is None
    assert body["canAccept"] is False  # mate may use it, not edit it
    assert (await send(client, "POST", f"{key_path}/scan", owner, {}))["canAccept"] is True
    assert await get_json(client, key_path, owner) == {
        "trusted": None,
        "pending": body["presented"],
    }
    assert private_sshd.log().count("Accepted password") == logins
    assert await audit_entries(kernel, "connection.host_key_trusted") == []

    # the owner accepts exactly that key; a scan then says trusted
    accepted = await send(client, "POST", f"{key_path}/accept", owner, {"fingerprint": first})
    assert accepted["trusted"]["fingerprint"] == first
    assert (await audit_entries(kernel, "connection.host_key_accepted"))[-1].details[
        "previousFingerprint"
    ] is None
    body = await send(client, "POST", f"{key_path}/scan", mate, {})
    assert body["state"] == "trusted" and body["trusted"]["fingerprint"] == first
    assert await run_whoami(kernel, mate, conn["id"]) == "hgtest"

    # a changed key: both fingerprints, pending, audited once however often it is scanned
    second = private_sshd.restart_with_new_host_key()
    for _ in range(2):
        body = await send(client, "POST", f"{key_path}/scan", owner, {})
        assert body["state"] == "changed"
        assert body["presented"]["fingerprint"] == second
        assert body["trusted"]["fingerprint"] == first
    changed = await audit_entries(kernel, "connection.host_key_changed")
    assert [e.details["presentedFingerprint"] for e in changed] == [second]
    with pytest.raises(Conflict):
        await run_whoami(kernel, owner, conn["id"])

    # a first key left pending by a scan is dropped when a connection trusts one
    await send(client, "DELETE", key_path, owner)
    await send(client, "POST", f"{key_path}/scan", owner, {})
    assert await run_whoami(kernel, owner, conn["id"]) == "hgtest"
    keys = await get_json(client, key_path, owner)
    assert keys["trusted"]["fingerprint"] == second and keys["pending"] is None


async def test_a_scan_follows_access_and_the_network_policy(
    client, make_user, admin, kernel, private_sshd
):
    owner = await make_user("owner")
    stranger = await make_user("stranger")
    conn = await ssh_connection(client, owner, private_sshd)
    scan = f"/connections/{conn['id']}/host-key/scan"
    await send(client, "POST", scan, stranger, {}, expect=404)
    await set_policy(client, admin, deny=f"{private_sshd.host}/32")
    before = connections_seen(private_sshd)
    await send(client, "POST", scan, owner, {}, expect=403)
    assert connections_seen(private_sshd) == before
    await set_policy(client, admin, deny="")
    assert (await send(client, "POST", scan, owner, {}))["state"] == "new"


async def set_policy(client, admin, **values):
    body = {f"network.{k}": v for k, v in values.items()}
    return await send(client, "PUT", "/settings", admin, body)


async def test_deny_list_blocks_before_anything_reaches_the_server(
    client, make_user, admin, kernel, sshd, sshd_secrets
):
    sshd_secrets(sshd)
    owner = await make_user("owner")
    by_address = await ssh_connection(client, owner, sshd)
    by_name = await ssh_connection(client, owner, sshd, host="localhost")
    assert await run_whoami(kernel, owner, by_name["id"]) == "hgtest"

    await set_policy(client, admin, deny="10.0.0.0/8, 127.0.0.0/8")
    seen = connections_seen(sshd)
    for conn in (by_address, by_name):
        with pytest.raises(PermissionDenied) as denied:
            await run_whoami(kernel, owner, conn["id"])
        assert denied.value.code == "target_denied"
        assert "127.0.0.0/8" in denied.value.message
    assert connections_seen(sshd) == seen
    entries = await audit_entries(kernel, "network.denied")
    assert [(e.target, e.details["address"]) for e in entries] == [
        (f"127.0.0.1:{sshd.port}", "127.0.0.1"),
        (f"localhost:{sshd.port}", "127.0.0.1"),
    ]
    assert entries[0].username == "owner" and entries[0].details["purpose"] == "connection"

    await set_policy(client, admin, deny="")
    assert await run_whoami(kernel, owner, by_address["id"]) == "hgtest"


async def test_allow_list_admits_only_what_it_names(
    client, make_user, admin, kernel, sshd, sshd_secrets
):
    sshd_secrets(sshd)
    owner = await make_user("owner")
    by_address = await ssh_connection(client, owner, sshd)
    by_name = await ssh_connection(client, owner, sshd, host="localhost")
    await set_policy(client, admin, allow="192.168.0.0/16 *.corp.example")
    with pytest.raises(PermissionDenied) as denied:
        await run_whoami(kernel, owner, by_address["id"])
    assert "not covered by network.allow" in denied.value.message

    await set_policy(client, admin, allow="*.corp.example, localhost")
    assert await run_whoami(kernel, owner, by_name["id"]) == "hgtest"
    with pytest.raises(PermissionDenied):
        await run_whoami(kernel, owner, by_address["id"])

    await set_policy(client, admin, deny="loopback")  # deny wins over allow
    with pytest.raises(PermissionDenied) as denied:
        await run_whoami(kernel, owner, by_name["id"])
    assert "'loopback'" in denied.value.message


async def test_the_checked_address_is_the_one_connected_to(
    client, make_user, admin, kernel, sshd, sshd_secrets, monkeypatch
):
    """DNS rebinding: a name that answers an allowed address once and a denied one later."""
    sshd_secrets(sshd)
    owner = await make_user("owner")
    conn = await ssh_connection(client, owner, sshd, host="rebind.test")
    await set_policy(client, admin, deny="10.0.0.0/8")
    real = socket.getaddrinfo
    answers = iter(["127.0.0.1", "10.9.9.9", "10.9.9.9"])
    asked: list[str] = []

    def fake_dns(host, port, *args, **kwargs):
        if host != "rebind.test":
            return real(host, port, *args, **kwargs)
        asked.append(host)
        return real(next(answers), port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake_dns)
    assert await run_whoami(kernel, owner, conn["id"]) == "hgtest"
    assert asked == ["rebind.test"]  # resolved once; the adapter used the approved address
    with pytest.raises(PermissionDenied):  # the next resolution answers a denied address
        await run_whoami(kernel, owner, conn["id"])


async def test_a_name_with_any_denied_address_is_refused(
    client, make_user, admin, kernel, monkeypatch
):
    owner = await make_user("owner")
    await set_policy(client, admin, deny="169.254.0.0/16")
    real = socket.getaddrinfo

    def fake_dns(host, port, *args, **kwargs):
        if host != "mixed.test":
            return real(host, port, *args, **kwargs)
        return real("127.0.0.1", port, *args, **kwargs) + real(
            "169.254.169.254", port, *args, **kwargs
        )

    monkeypatch.setattr(socket, "getaddrinfo", fake_dns)
    with pytest.raises(PermissionDenied) as denied:
        await kernel.netpolicy.resolve_allowed("mixed.test", 80, purpose="webhook")
    assert "169.254.169.254" in denied.value.message
    entry = (await audit_entries(kernel, "network.denied"))[-1]
    assert entry.details["purpose"] == "webhook" and entry.user_id is None
    assert owner  # the policy applies without a caller too


async def test_with_confirm_a_first_key_waits_for_an_accept_by_an_editor(
    client, make_user, admin, kernel, private_sshd, sshd_secrets
):
    sshd_secrets(private_sshd)
    owner = await make_user("owner")
    mate = await make_user("mate")
    conn = await ssh_connection(client, owner, private_sshd)
    await send(
        client, "PUT", f"/connections/{conn['id']}/shares", owner,
        {"shares": [{"shareType": "user", "targetId": mate.id}]},
    )  # fmt: skip
    key_path = f"/connections/{conn['id']}/host-key"
    settings = await get_json(client, "/settings", admin)
    assert settings["settings"]["security.host_key_first_use"] == "trust"  # SPEC's TOFU
    error = await send(
        client, "PUT", "/settings", admin, {"security.host_key_first_use": "ask"}, expect=400
    )
    assert "security.host_key_first_use" in error["error"]
    await send(client, "PUT", "/settings", admin, {"security.host_key_first_use": "confirm"})
    first = private_sshd.host_key_fingerprint
    logins = private_sshd.log().count("Accepted password")

    # nobody's connect trusts the first key: refused with its fingerprint, kept pending
    for user in (mate, owner):
        with pytest.raises(Conflict) as refused:
            await run_whoami(kernel, user, conn["id"])
        assert refused.value.code == "host_key_unconfirmed"
        assert refused.value.status == 409
        assert first in refused.value.message and "not trusted yet" in refused.value.message
        assert refused.value.body()["presentedFingerprint"] == first
    assert private_sshd.log().count("Accepted password") == logins  # no credentials sent
    keys = await get_json(client, key_path, mate)  # mate may see the key
    assert keys["trusted"] is None and keys["pending"]["fingerprint"] == first
    assert await audit_entries(kernel, "connection.host_key_trusted") == []

    # mate may use it, not edit it: he cannot decide the key for everyone
    denied = await send(client, "POST", f"{key_path}/accept", mate, {"fingerprint": first}, 403)
    assert denied["code"] == "host_key_edit_required"
    assert "owner" in denied["error"]
    await send(client, "DELETE", key_path, mate, expect=403)
    assert (await get_json(client, key_path, owner))["pending"]["fingerprint"] == first

    # the owner accepts exactly that key; then everyone connects
    await send(client, "POST", f"{key_path}/accept", owner, {"fingerprint": first})
    assert await run_whoami(kernel, mate, conn["id"]) == "hgtest"
    accepted = await audit_entries(kernel, "connection.host_key_accepted")
    assert accepted[-1].user_id == owner.id

    # back to trust: a forgotten key is trusted on first use again, as SPEC says
    await send(client, "DELETE", key_path, owner)
    await send(client, "PUT", "/settings", admin, {"security.host_key_first_use": "trust"})
    assert await run_whoami(kernel, mate, conn["id"]) == "hgtest"
    keys = await get_json(client, key_path, owner)
    assert keys["trusted"]["fingerprint"] == first
