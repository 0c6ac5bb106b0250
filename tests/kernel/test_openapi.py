"""The OpenAPI document: every operation says what it answers, in the one error shape."""

from __future__ import annotations

from hostgate.app import create_app
from hostgate.openapi import answer_of

ERROR_REF = "#/components/schemas/ErrorBody"


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
