"""Hostile bodies to the connection routes: a 400 in the error shape, and nothing stored."""

from __future__ import annotations

from typing import Any

import pytest
from hostgate.db.models.connections import Connection, ConnectionGroup
from sqlmodel import func, select

from tests.services.connections.support import create, get_json

API = "/api/v1"
JSON = {"Content-Type": "application/json"}


async def post_raw(client: Any, path: str, user: Any, body: str) -> tuple[int, Any]:
    response = await client.post(
        f"{API}{path}", data=body.encode(), headers={**user.headers, **JSON}
    )
    return response.status_code, await response.get_json()


async def stored(kernel: Any) -> tuple[int, int]:
    """How many connections and groups exist."""
    async with kernel.db.session() as session:
        connections = (await session.exec(select(func.count()).select_from(Connection))).one()
        groups = (await session.exec(select(func.count()).select_from(ConnectionGroup))).one()
    return connections, groups


async def test_extra_config_nested_a_thousand_levels_is_400(client, kernel, make_user):
    alice = await make_user("alice")
    deep = "[" * 1000 + "]" * 1000
    body = '{"name": "box", "protocol": "fakedesk", "host": "127.0.0.1", "extraConfig": '
    status, data = await post_raw(client, "/connections", alice, body + '{"domain": ' + deep + "}}")
    assert status == 400, data
    assert data["code"] == "too_deep"
    assert await stored(kernel) == (0, 0)


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "\\ud800", "protocol": "fakedesk", "host": "127.0.0.1"}',
        '{"name": "box", "protocol": "fakedesk", "host": "127.0.0.1", "username": "a\\udc00"}',
        '{"name": "box", "protocol": "fakedesk", "host": "127.0.0.1", "domain": "\\ud800"}',
        '{"name": "box", "protocol": "fakedesk", "host": "127.0.0.1", "tags": ["\\ud800"]}',
        '{"name": "box", "protocol": "fakedesk", "host": "127.0.0.1",'
        ' "extraConfig": {"domain": "\\udbff"}}',
    ],
)
async def test_a_lone_surrogate_in_a_connection_is_400(client, kernel, make_user, body):
    alice = await make_user("alice")
    status, data = await post_raw(client, "/connections", alice, body)
    assert status == 400, data
    assert data["code"] == "invalid_text"
    assert await stored(kernel) == (0, 0)


async def test_a_lone_surrogate_in_a_group_name_is_400(client, kernel, make_user):
    alice = await make_user("alice")
    status, data = await post_raw(client, "/connections/groups", alice, '{"name": "g\\ud800"}')
    assert status == 400, data
    assert data == {
        "error": "name holds a lone UTF-16 surrogate, which is not valid text",
        "code": "invalid_text",
    }
    assert await stored(kernel) == (0, 0)


async def test_a_lone_surrogate_in_an_update_changes_nothing(client, kernel, make_user):
    alice = await make_user("alice")
    created = await create(client, alice, name="kept")
    response = await client.put(
        f"{API}/connections/{created['id']}",
        data=b'{"name": "\\ud800"}',
        headers={**alice.headers, **JSON},
    )
    assert response.status_code == 400
    assert (await get_json(client, f"/connections/{created['id']}", alice)) == created


async def test_a_surrogate_pair_is_ordinary_text(client, make_user):
    alice = await make_user("alice")
    status, data = await post_raw(
        client,
        "/connections",
        alice,
        '{"name": "box \\ud83d\\ude00", "protocol": "fakedesk", "host": "127.0.0.1"}',
    )
    assert status == 201, data
    assert data["name"] == "box \U0001f600"


# -- issue 30 item 1: no stored value can carry a control character -------------------

BAD_VALUES = [
    ("username", "root\nProxyCommand touch /tmp/pwned"),
    ("username", "root\r  LocalCommand id"),
    ("username", "a\u2028b"),
    ("username", "nul\x00"),
    ("host", "evil.example\nProxyCommand touch /tmp/pwned"),
    ("host", "evil.example\x85"),
    ("tags", ["prod\nProxyCommand touch /tmp/pwned"]),
    ("tags", ["eu\x1b[31m"]),
]


@pytest.mark.parametrize(("field", "value"), BAD_VALUES)
async def test_control_characters_are_refused_at_input(client, admin, kernel, field, value):
    body = {"name": "web", "protocol": "ssh", "host": "web.example", "port": 22}
    response = await client.post(
        f"{API}/connections", headers=admin.headers, json={**body, field: value}
    )
    assert response.status_code == 400
    error = await response.get_json()
    assert error["code"] == "invalid_input" and "control characters" in error["error"]
    created = await client.post(f"{API}/connections", headers=admin.headers, json=body)
    assert created.status_code == 201
    ident = (await created.get_json())["id"]
    response = await client.put(
        f"{API}/connections/{ident}", headers=admin.headers, json={**body, field: value}
    )
    assert response.status_code == 400
    assert "control characters" in (await response.get_json())["error"]
    async with kernel.db.session() as session:
        [stored] = (await session.exec(select(Connection))).all()
    assert (stored.host, stored.username, stored.tags) == ("web.example", "", [])
