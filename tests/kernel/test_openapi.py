"""The OpenAPI document: every operation says what it answers, in the one error shape."""

from __future__ import annotations

import hostgate_notifications.plugin
import pytest
from hostgate.app import create_app
from hostgate.openapi import answer_of

ERROR_REF = "#/components/schemas/ErrorBody"


@pytest.fixture
def plugins() -> list[object]:
    """The notifications pack (its retention route takes a whole number)."""
    return [hostgate_notifications.plugin]


def all_pack_app(config):
    return create_app(config.with_overrides(load_entry_points=True))


async def document(app):
    async with app.test_app() as test_app:
        response = await test_app.test_client().get("/api/v1/openapi.json")
        assert response.status_code == 200
        return await response.get_json()


def test_every_documented_route_declares_its_answer(config):
    app = all_pack_app(config)
    missing = []
    for rule in app.url_map.iter_rules():
        view = app.view_functions[rule.endpoint]
        if rule.websocket or getattr(view, "_quart_schema_hidden", False):
            continue
        if answer_of(view) is None:
            missing.append(f"{sorted(rule.methods or ())} {rule.rule} ({rule.endpoint})")
    assert missing == [], "routes without @answers:\n" + "\n".join(missing)


async def test_every_operation_documents_success_and_errors(config):
    schema = await document(all_pack_app(config))
    assert schema["components"]["schemas"]["ErrorBody"]["required"] == ["error", "code"]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            statuses = {int(s) for s in operation["responses"]}
            assert any(s < 400 for s in statuses), where
            for status, response in operation["responses"].items():
                if int(status) >= 400:
                    content = response["content"]["application/json"]["schema"]
                    assert content == {"$ref": ERROR_REF}, where
            if "requestBody" in operation:
                assert operation["requestBody"]["required"] is True, where
                assert {400, 413} <= statuses, where
            if "{" in path:
                assert 404 in statuses, where


async def test_operation_ids_are_unique(config):
    """Two packs' views of one name gave two operations one id: the app's generated
    types then typed one route with the other's answer (GET /notifications/rules
    as a page of command rules)."""
    schema = await document(all_pack_app(config))
    seen: dict[str, str] = {}
    twice = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            known = seen.setdefault(operation["operationId"], where)
            if known != where:
                twice.append(f"{operation['operationId']}: {known} and {where}")
    assert twice == []


async def test_statuses_follow_the_guard(config):
    paths = (await document(all_pack_app(config)))["paths"]
    public = paths["/api/v1/auth/status"]["get"]
    assert public["security"] == [] and "401" not in public["responses"]
    users = paths["/api/v1/users"]["post"]
    assert {"201", "400", "401", "403", "409", "413", "503"} <= set(users["responses"])
    listing = paths["/api/v1/users"]["get"]["responses"]["200"]["content"]
    assert listing["application/json"]["schema"] == {"$ref": "#/components/schemas/UserList"}
    limited = paths["/api/v1/profile/mfa/verify"]["post"]["responses"]["429"]
    assert limited["headers"]["Retry-After"]["required"] is True


async def test_request_schemas_say_what_the_server_enforces(config):
    app = all_pack_app(config)
    schema = await document(app)
    create_user = schema["paths"]["/api/v1/users"]["post"]["requestBody"]
    body = create_user["content"]["application/json"]["schema"]
    body = schema["components"]["schemas"].get(body.get("$ref", "").split("/")[-1], body)
    assert body["required"] == ["username", "password"]
    assert body["properties"]["password"]["minLength"] == 8
    assert body["additionalProperties"] is False
    create_role = schema["paths"]["/api/v1/roles"]["post"]["requestBody"]
    role = create_role["content"]["application/json"]["schema"]["properties"]["permissions"]
    kernel = app.extensions["hostgate"]
    assert set(role["items"]["enum"]) == set(kernel.permission_names)
    settings = schema["paths"]["/api/v1/settings"]["put"]["requestBody"]
    properties = settings["content"]["application/json"]["schema"]["properties"]
    assert properties["security.max_login_attempts"]["type"] == "integer"
    pages = {p["name"]: p for p in schema["paths"]["/api/v1/audit"]["get"]["parameters"]}
    assert pages["page"]["schema"]["minimum"] == 1


def walk(node):
    """Every dict inside a JSON document."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


async def test_schemas_hold_only_json_schema_keywords(config):
    """pydantic's own constraint names (``ge``, ``le``...) mean nothing to a client."""
    schema = await document(all_pack_app(config))
    leaked = [node for node in walk(schema) if {"ge", "le", "gt", "lt"} & set(node)]
    assert leaked == []
    lengths = {"minLength", "maxLength"}
    arrays = [n for n in walk(schema) if n.get("type") == "array" and lengths & set(n)]
    assert arrays == [], "an array's size is minItems/maxItems"


async def test_font_size_bounds_are_in_the_document_and_enforced(client, make_user, config):
    paths = (await document(all_pack_app(config)))["paths"]
    body = paths["/api/v1/profile/ssh-prefs"]["put"]["requestBody"]["content"]
    font = body["application/json"]["schema"]["properties"]["fontSize"]
    bounds = [(s.get("minimum"), s.get("maximum")) for s in walk(font) if "maximum" in s]
    assert bounds and set(bounds) == {(6, 72)}
    user = await make_user("fonts")
    too_big = await client.put(
        "/api/v1/profile/ssh-prefs", headers=user.headers, json={"fontSize": 72.5}
    )
    assert too_big.status_code == 400
    whole = await client.put(
        "/api/v1/profile/ssh-prefs", headers=user.headers, json={"fontSize": 14}
    )
    assert whole.status_code == 200
    prefs = await (await client.get("/api/v1/profile/ssh-prefs", headers=user.headers)).get_json()
    assert prefs["fontSize"] == 14 and isinstance(prefs["fontSize"], int)


async def test_query_arguments_are_checked_against_the_document(client, admin):
    unknown = await client.get("/api/v1/audit?pages=2", headers=admin.headers)
    assert unknown.status_code == 400
    assert "pages" in (await unknown.get_json())["error"]
    assert (await client.get("/api/v1/audit?page=0", headers=admin.headers)).status_code == 400
    ok = await client.get("/api/v1/audit?page=2&limit=5&heartbeat=1", headers=admin.headers)
    assert ok.status_code == 200
    scope = await client.get("/api/v1/connections?scope=everything", headers=admin.headers)
    assert scope.status_code == 400


async def test_integers_are_json_schema_integers(client, admin):
    """3.0 is an integer to JSON Schema (and to the document's clients); 3.5 and "3" are not."""
    url = "/api/v1/notifications/settings"
    whole = await client.put(url, headers=admin.headers, json={"retentionDays": 30.0})
    assert whole.status_code == 200 and (await whole.get_json())["retentionDays"] == 30
    for bad in (30.5, "30", True):
        refused = await client.put(url, headers=admin.headers, json={"retentionDays": bad})
        assert refused.status_code == 400, bad
    group = await client.post(
        "/api/v1/connections/groups", headers=admin.headers, json={"name": "g", "sortOrder": 4.0}
    )
    assert group.status_code == 201 and (await group.get_json())["sortOrder"] == 4


def free_text_query_parameters(schema):
    """``(path, name, maxLength)`` of every GET query argument that takes any text."""
    for path, operations in schema["paths"].items():
        for parameter in operations.get("get", {}).get("parameters", []):
            if parameter["in"] != "query":
                continue
            for option in parameter["schema"].get("anyOf", [parameter["schema"]]):
                if option.get("type") == "string" and not {"enum", "const", "format"} & set(option):
                    yield path, parameter["name"], option.get("maxLength")


async def test_every_free_text_query_argument_has_a_documented_maximum(config):
    from hostgate.pagination import FILTER_MAX

    found = list(free_text_query_parameters(await document(all_pack_app(config))))
    assert ("/api/v1/audit", "eventType", FILTER_MAX) in found
    unbounded = [(path, name) for path, name, most in found if most is None]
    assert unbounded == []


async def test_a_list_filter_beyond_its_maximum_is_a_400(client, admin):
    schema = await (await client.get("/api/v1/openapi.json")).get_json()
    lists = [
        (path, name, most)
        for path, name, most in free_text_query_parameters(schema)
        if "{" not in path
    ]
    assert len(lists) >= 8
    for path, name, most in lists:
        needed = {"q": "word"} if path == "/api/v1/sessions/search" else {}
        at_most = await client.get(
            path, query_string={**needed, name: "x" * most}, headers=admin.headers
        )
        assert at_most.status_code == 200, (path, name, await at_most.get_data(as_text=True))
        beyond = await client.get(
            path, query_string={**needed, name: "x" * (most + 1)}, headers=admin.headers
        )
        assert beyond.status_code == 400, (path, name)
        body = await beyond.get_json()
        assert body["code"] == "invalid_input" and name in body["error"], body
    huge = await client.get(
        "/api/v1/audit", query_string={"eventType": "x" * 100_000}, headers=admin.headers
    )
    assert huge.status_code == 400
    assert "eventType" in (await huge.get_json())["error"]
