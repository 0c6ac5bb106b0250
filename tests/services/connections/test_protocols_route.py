"""``GET /protocols``: each loaded protocol with the fields its pack declares."""

from __future__ import annotations

from tests.services.connections.support import get_json


async def test_lists_every_protocol_with_its_declared_fields(client, make_user):
    alice = await make_user("alice")
    body = await get_json(client, "/protocols", alice)
    by_name = {p["name"]: p for p in body["protocols"]}
    assert [p["name"] for p in body["protocols"]] == sorted(by_name)
    assert {"fakedesk", "fakeshare", "ssh", "sftp"} <= set(by_name)
    desk = by_name["fakedesk"]
    assert desk["title"] == "Fake desktop"
    assert desk["defaultPort"] == 7900
    assert desk["fields"] == [
        {"name": "domain", "type": "string", "secret": False, "required": False,
         "default": None, "description": ""},
        {"name": "secure", "type": "boolean", "secret": False, "required": False,
         "default": False, "description": ""},
        {"name": "retries", "type": "integer", "secret": False, "required": False,
         "default": None, "description": ""},
        {"name": "token", "type": "string", "secret": True, "required": False,
         "default": None, "description": "", "setFlag": "hasToken"},
    ]  # fmt: skip
    assert by_name["fakeshare"]["fields"][0]["required"] is True


async def test_abilities_and_use_permission(client, make_user):
    alice = await make_user("alice", permissions=["connections.use_ssh"])
    by_name = {p["name"]: p for p in (await get_json(client, "/protocols", alice))["protocols"]}
    assert (by_name["ssh"]["terminal"], by_name["ssh"]["files"]) == (True, False)
    assert (by_name["sftp"]["terminal"], by_name["sftp"]["files"]) == (False, True)
    assert by_name["sftp"]["servesConnections"] == ["sftp", "ssh"]
    assert by_name["ssh"]["canUse"] is True
    assert by_name["fakedesk"]["canUse"] is False


async def test_needs_a_session(client):
    response = await client.get("/api/v1/protocols")
    assert response.status_code == 401
