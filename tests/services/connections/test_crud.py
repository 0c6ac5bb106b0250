"""Create, read, update, delete over HTTP: shapes, defaults, write-only secrets, validation."""

from __future__ import annotations

from hostgate.db.models.connections import Connection
from sqlmodel import select

from tests.services.connections.support import (
    PASSWORD,
    PRIVATE_KEY,
    TOKEN,
    audit_entries,
    create,
    get_json,
    send,
)


async def test_create_returns_201_and_the_full_shape(client, make_user):
    alice = await make_user("alice")
    body = await create(
        client,
        alice,
        name="Desk 1",
        username="bob",
        password=PASSWORD,
        privateKey=PRIVATE_KEY,
        tags=[" Prod ", "prod", "", "EU"],
        skipCertValidation=True,
        domain="CORP",
        token=TOKEN,
    )
    assert body["name"] == "Desk 1"
    assert body["protocol"] == "fakedesk"
    assert body["port"] == 7900  # the pack's default port
    assert body["tags"] == ["prod", "eu"]
    assert body["hasPassword"] is True
    assert body["hasPrivateKey"] is True
    assert body["hasToken"] is True
    assert body["extraConfig"] == {"domain": "CORP", "secure": False}
    assert body["skipCertValidation"] is True
    assert body["shared"] is False and body["isShared"] is False
    assert body["groupId"] is None
    assert body["shares"] == []
    assert body["createdAt"].endswith("Z")
    for key in ("password", "privateKey", "token"):
        assert key not in body
    again = await get_json(client, f"/connections/{body['id']}", alice)
    assert again == body


async def test_secrets_are_sealed_at_rest(client, make_user, kernel):
    alice = await make_user("alice")
    body = await create(client, alice, password=PASSWORD, token=TOKEN)
    async with kernel.db.session() as session:
        row = await session.get(Connection, body["id"])
    assert row.password.startswith("hg1:") and PASSWORD not in row.password
    assert row.extra_secrets.startswith("hg1:") and TOKEN not in row.extra_secrets
    assert "token" not in row.extra_config


async def test_secrets_are_write_only_omitted_keeps_empty_or_null_clears(client, make_user):
    alice = await make_user("alice")
    created = await create(client, alice, password=PASSWORD, privateKey=PRIVATE_KEY, token=TOKEN)
    path = f"/connections/{created['id']}"
    updated = await send(client, "PUT", path, alice, {"name": "renamed"})
    assert updated["connection"]["hasPassword"] is True
    assert updated["connection"]["hasPrivateKey"] is True
    assert updated["connection"]["hasToken"] is True
    updated = await send(client, "PUT", path, alice, {"password": ""})
    assert updated["connection"]["hasPassword"] is False
    assert updated["connection"]["hasPrivateKey"] is True
    updated = await send(
        client, "PUT", path, alice, {"privateKey": None, "extraConfig": {"token": ""}}
    )
    assert updated["connection"]["hasPrivateKey"] is False
    assert updated["connection"]["hasToken"] is False
    assert updated["connection"]["name"] == "renamed"


async def test_update_changes_only_given_fields_and_folds_top_level_pack_fields(client, make_user):
    alice = await make_user("alice")
    created = await create(client, alice, domain="A", retries=3, tags=["x"])
    path = f"/connections/{created['id']}"
    body = await send(client, "PUT", path, alice, {"secure": True, "port": 7901})
    connection = body["connection"]
    assert body["success"] is True
    assert connection["extraConfig"] == {"domain": "A", "retries": 3, "secure": True}
    assert connection["port"] == 7901
    assert connection["tags"] == ["x"]
    body = await send(client, "PUT", path, alice, {"extraConfig": {"domain": None}})
    assert body["connection"]["extraConfig"] == {"retries": 3, "secure": True}


async def test_protocol_change_drops_foreign_fields_and_moves_a_default_port(client, make_user):
    alice = await make_user("alice")
    created = await create(client, alice, domain="A")
    body = await send(
        client,
        "PUT",
        f"/connections/{created['id']}",
        alice,
        {"protocol": "fakeshare", "share": "docs"},
    )
    assert body["connection"]["protocol"] == "fakeshare"
    assert body["connection"]["port"] == 4450
    assert body["connection"]["extraConfig"] == {"share": "docs"}


async def test_delete_removes_the_connection(client, make_user, kernel):
    alice = await make_user("alice")
    created = await create(client, alice)
    assert await send(client, "DELETE", f"/connections/{created['id']}", alice) == {"success": True}
    await get_json(client, f"/connections/{created['id']}", alice, expect=404)
    assert await send(client, "DELETE", f"/connections/{created['id']}", alice, expect=404)
    entry = (await audit_entries(kernel, "connection.deleted"))[-1]
    assert entry.details["connectionId"] == created["id"]


async def test_audit_entries_never_hold_secrets(client, make_user, kernel):
    alice = await make_user("alice")
    created = await create(client, alice, password=PASSWORD, privateKey=PRIVATE_KEY, token=TOKEN)
    await send(
        client, "PUT", f"/connections/{created['id']}", alice,
        {"password": PASSWORD + "x", "token": TOKEN + "y", "host": "10.0.0.5"},
    )  # fmt: skip
    await send(client, "DELETE", f"/connections/{created['id']}", alice)
    created_entry = (await audit_entries(kernel, "connection.created"))[-1]
    updated_entry = (await audit_entries(kernel, "connection.updated"))[-1]
    assert created_entry.target == "fakedesk://127.0.0.1:7900"
    assert updated_entry.details["changes"]["host"] == {"from": "127.0.0.1", "to": "10.0.0.5"}
    assert updated_entry.details["credentialsChanged"] == ["password", "token"]
    for event in ("connection.created", "connection.updated", "connection.deleted"):
        for entry in await audit_entries(kernel, event):
            assert "s3cr3t" not in str(entry.details) + entry.target


async def test_no_token_is_401_before_the_body_is_read(client):
    response = await client.post("/api/v1/connections", data="not json")
    assert response.status_code == 401


BAD_INPUT = [
    ({"name": ""}, "name"),
    ({"name": "   "}, "name"),
    ({"name": "x" * 201}, "name"),
    ({"protocol": "ssh2"}, "protocol must be one of"),
    ({"protocol": None}, "protocol"),
    ({"port": 0}, "port"),
    ({"port": 65536}, "port"),
    ({"port": "22"}, "port"),
    ({"port": True}, "port"),
    ({"host": "ssh://box"}, "host"),
    ({"host": "box/path"}, "host"),
    ({"host": "my box"}, "host"),
    ({"host": "box:22"}, "host"),
    ({"host": "user@box"}, "host"),
    ({"host": ""}, "host"),
    ({"host": "-bad-.example"}, "host"),
    ({"tunnels": "none"}, "tunnels"),
    ({"share": "x"}, "share"),
    ({"extraConfig": {"nope": 1}}, "nope"),
    ({"extraConfig": {"secure": "yes"}}, "secure"),
    ({"retries": "3"}, "retries"),
    ({"domain": "A", "extraConfig": {"domain": "B"}}, "domain"),
    ({"tags": "prod"}, "tags"),
    ({"tags": ["x" * 65]}, "tag"),
    ({"shared": "true"}, "shared"),
]


async def test_a_group_that_does_not_exist_is_a_404_and_stores_nothing(client, make_user):
    alice = await make_user("alice")
    error = await create(client, alice, expect=404, groupId="no-such-group")
    assert "groupId" in error["error"]
    listing = await get_json(client, "/connections", alice)
    assert listing["ungrouped"] == []


async def test_bad_input_is_a_400_naming_the_problem_and_stores_nothing(client, make_user):
    alice = await make_user("alice")
    for body, fragment in BAD_INPUT:
        error = await create(client, alice, expect=400, **body)
        assert error["code"] == "invalid_input", (body, error)
        assert fragment in error["error"], (body, error)
    listing = await get_json(client, "/connections", alice)
    assert listing["ungrouped"] == []


async def test_unknown_fields_are_all_named(client, make_user):
    alice = await make_user("alice")
    error = await create(client, alice, expect=400, colour="red", flavour=[])
    assert "colour" in error["error"] and "flavour" in error["error"]


async def test_required_pack_field_is_enforced_on_create_and_update(client, make_user):
    alice = await make_user("alice")
    error = await create(client, alice, expect=400, protocol="fakeshare")
    assert "share" in error["error"]
    created = await create(client, alice, protocol="fakeshare", extraConfig={"share": "docs"})
    error = await send(
        client, "PUT", f"/connections/{created['id']}", alice, {"share": None}, expect=400
    )
    assert "share" in error["error"]
    again = await get_json(client, f"/connections/{created['id']}", alice)
    assert again["extraConfig"] == {"share": "docs"}


GOOD_HOSTS = [
    ("server-1.example.com", "server-1.example.com"),
    ("10.1.2.3", "10.1.2.3"),
    ("[2001:db8::1]", "2001:db8::1"),
    ("2001:DB8:0::1", "2001:db8::1"),
    ("  box  ", "box"),
    ("bücher.example", "bücher.example"),
]


async def test_host_names_and_addresses_are_accepted(client, make_user):
    alice = await make_user("alice")
    for host, stored in GOOD_HOSTS:
        body = await create(client, alice, host=host)
        assert body["host"] == stored


async def test_an_update_with_bad_input_changes_nothing(client, make_user):
    alice = await make_user("alice")
    created = await create(client, alice, name="keep", password=PASSWORD)
    path = f"/connections/{created['id']}"
    await send(client, "PUT", path, alice, {"name": "new", "port": 0}, expect=400)
    await send(client, "PUT", path, alice, {"name": "new", "password": "", "x": 1}, expect=400)
    error = await send(client, "PUT", path, alice, {}, expect=400)
    assert error["error"] == "No fields to update"
    again = await get_json(client, path, alice)
    assert again["name"] == "keep" and again["hasPassword"] is True


async def test_an_empty_tunnels_list_is_accepted_for_ssh(client, make_user, kernel):
    alice = await make_user("alice")
    body = await create(client, alice, protocol="ssh", port=22, username="root", tunnels=[])
    assert body["protocol"] == "ssh"
    path = f"/connections/{body['id']}"
    updated = await send(client, "PUT", path, alice, {"name": "renamed", "tunnels": []})
    assert updated["connection"]["name"] == "renamed"
    assert (await send(client, "PUT", path, alice, {"tunnels": None}))["success"] is True


async def test_a_non_empty_tunnels_list_is_refused_and_changes_nothing(client, make_user, kernel):
    alice = await make_user("alice")
    tunnel = {"localPort": 8080, "remoteHost": "db.internal", "remotePort": 5432}
    refused = await create(client, alice, expect=400, protocol="ssh", tunnels=[tunnel])
    assert refused["code"] == "tunnels_unsupported"
    assert "tunnels" in refused["error"]
    async with kernel.db.session() as session:
        assert (await session.exec(select(Connection))).all() == []
    created = await create(client, alice, protocol="ssh", name="kept")
    path = f"/connections/{created['id']}"
    refused = await send(
        client, "PUT", path, alice, {"name": "changed", "tunnels": [tunnel]}, expect=400
    )
    assert refused["code"] == "tunnels_unsupported"
    assert (await get_json(client, path, alice))["name"] == "kept"
    assert (await send(client, "PUT", path, alice, {"tunnels": "x"}, expect=400))["error"]
