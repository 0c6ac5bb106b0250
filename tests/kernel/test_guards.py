"""Every route declares a guard; the OpenAPI document covers the API."""

from hostgate.app import create_app
from hostgate.guards import guard_of


def all_pack_app(config):
    return create_app(config.with_overrides(load_entry_points=True))


def test_every_route_declares_a_guard(config):
    app = all_pack_app(config)
    missing = []
    for rule in app.url_map.iter_rules():
        view = app.view_functions[rule.endpoint]
        if guard_of(view) is None:
            missing.append(f"{sorted(rule.methods)} {rule.rule} ({rule.endpoint})")
    assert missing == [], "routes without a declared guard:\n" + "\n".join(missing)


def test_permission_guards_name_known_permissions(config):
    app = all_pack_app(config)
    kernel = app.extensions["hostgate"]
    known = set(kernel.permission_names)
    for rule in app.url_map.iter_rules():
        kind, permissions = guard_of(app.view_functions[rule.endpoint])
        assert set(permissions) <= known, (rule.rule, permissions)


async def test_openapi_document_lists_routes(client):
    response = await client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    document = await response.get_json()
    assert "/api/v1/settings" in document["paths"]
    assert document["info"]["title"] == "hostgate"
