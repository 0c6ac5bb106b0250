"""Hostile JSON bodies: deep nesting and unencodable text are a 400 at the body reader."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hostgate import jsoninput
from hostgate.db.models.audit import AuditEntry
from hostgate.db.models.identity import LoginSession
from hostgate.errors import InvalidInput
from sqlmodel import func, select

API = "/api/v1"
JSON = {"Content-Type": "application/json"}


def nested(depth: int) -> str:
    """An array nested ``depth`` levels deep, as JSON text."""
    return "[" * depth + "]" * depth


async def refused(client: Any, method: str, path: str, body: str, headers: dict[str, str]) -> dict:
    call = getattr(client, method.lower())
    response = await call(f"{API}{path}", data=body.encode(), headers={**headers, **JSON})
    data = await response.get_json()
    assert response.status_code == 400, data
    assert set(data) >= {"error", "code"}
    return data  # type: ignore[no-any-return]


async def counts(kernel: Any) -> tuple[int, int]:
    """How many audit entries and login sessions exist."""
    async with kernel.db.session() as session:
        audit = (await session.exec(select(func.count()).select_from(AuditEntry))).one()
        sessions = (await session.exec(select(func.count()).select_from(LoginSession))).one()
    return audit, sessions


async def test_a_login_nested_a_thousand_levels_is_400_and_changes_nothing(
    client, kernel, make_user
):
    await make_user("bob")
    before = await counts(kernel)
    body = '{"username": ' + nested(1000) + ', "password": "x"}'
    data = await refused(client, "POST", "/auth/login", body, {})
    assert data["code"] == "too_deep"
    assert "nested deeper" in data["error"]
    assert await counts(kernel) == before


async def test_settings_nested_a_thousand_levels_is_400_and_changes_nothing(client, admin):
    before = await (await client.get(f"{API}/settings", headers=admin.headers)).get_json()
    body = '{"app.name": ' + '{"a": ' * 1000 + "1" + "}" * 1000 + "}"
    assert (await refused(client, "PUT", "/settings", body, admin.headers))["code"] == "too_deep"
    after = await (await client.get(f"{API}/settings", headers=admin.headers)).get_json()
    assert after == before


async def test_settings_with_a_lone_surrogate_is_400_and_changes_nothing(client, admin):
    before = await (await client.get(f"{API}/settings", headers=admin.headers)).get_json()
    data = await refused(client, "PUT", "/settings", '{"app.name": "x\\ud800"}', admin.headers)
    assert data["code"] == "invalid_text"
    assert data["error"].startswith("app.name ")
    after = await (await client.get(f"{API}/settings", headers=admin.headers)).get_json()
    assert after == before


async def test_a_login_with_a_lone_surrogate_is_400(client, kernel, make_user):
    await make_user("bob")
    before = await counts(kernel)
    body = '{"username": "bob\\udfff", "password": "x"}'
    assert (await refused(client, "POST", "/auth/login", body, {}))["code"] == "invalid_text"
    assert await counts(kernel) == before


def test_decode_takes_ordinary_json_and_depth_up_to_the_limit() -> None:
    assert jsoninput.decode('{"a": [1, "\\ud83d\\ude00", {"b": null}]}') == {
        "a": [1, "\U0001f600", {"b": None}]
    }
    limit = jsoninput.MAX_DEPTH
    assert jsoninput.decode(nested(limit)) is not None
    # brackets inside strings are text, not nesting
    assert jsoninput.decode(json.dumps({"a": "[" * 5000})) == {"a": "[" * 5000}
    assert jsoninput.decode(b'"\\\\ud800"') == "\\ud800"  # an escaped backslash, not a surrogate
    # escaped backslashes and quotes do not end a string early
    for value in (
        {"k": "\\" + "[" * 100},
        {"k": '\\"' + "{" * 100, "j": ["\\\\", "[[[" * 50]},
        ['"', "[" * 70, "\\"],
    ):
        assert jsoninput.decode(json.dumps(value)) == value


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (nested(jsoninput.MAX_DEPTH + 1), "too_deep"),
        ("[" * 100_000, "too_deep"),
        ("[" * 100 + '"\\' * 200_000, "too_deep"),  # quadratic for a regex over strings
        ('{"k": "\\ud800"}', "invalid_text"),
        ('{"\\udc00": 1}', "invalid_text"),
        ('[["ok", "\\udbff"]]', "invalid_text"),
    ],
)
def test_decode_refuses(text: str, code: str) -> None:
    with pytest.raises(InvalidInput) as refusal:
        jsoninput.decode(text)
    assert refusal.value.code == code


def test_decode_names_the_field() -> None:
    with pytest.raises(InvalidInput, match=r"^items\.1\.name holds a lone UTF-16 surrogate"):
        jsoninput.decode('{"items": [{"name": "a"}, {"name": "\\ud800"}]}')


def test_malformed_json_stays_a_value_error() -> None:
    with pytest.raises(ValueError):
        jsoninput.decode("{not json")
