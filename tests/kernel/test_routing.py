"""Rules sharing compiled URL builders build, match and document exactly as werkzeug's own."""

from __future__ import annotations

from typing import Any

from hostgate.app import create_app
from hostgate.routing import SharedBuilderRule
from quart import Quart
from quart.routing import QuartRule
from werkzeug.routing import BaseConverter, Map


def all_pack_app(config: Any) -> Quart:
    return create_app(config.with_overrides(load_entry_points=True))


def shapes_of(url_map: Map) -> list[tuple[Any, ...]]:
    """Each rule's shape and the URLs it builds (known and unknown arguments)."""
    shapes = []
    for rule in url_map.iter_rules():
        values = {name: f"v {name}/1" for name in rule.arguments}
        shapes.append(
            (
                rule.rule,
                rule.endpoint,
                sorted(rule.methods or ()),
                rule.websocket,
                repr(rule._parts),  # the matcher's input
                rule.build(values, append_unknown=False),
                rule.build({**values, "page": 2, "q": "a b&c"}),
            )
        )
    return shapes


async def openapi_of(app: Quart) -> Any:
    async with app.test_app() as test_app:
        response = await test_app.test_client().get("/api/v1/openapi.json")
        assert response.status_code == 200
        return await response.get_json()


def test_the_app_uses_shared_builder_rules(config):
    app = all_pack_app(config)
    assert all(isinstance(rule, SharedBuilderRule) for rule in app.url_map.iter_rules())


def test_each_rule_builds_as_a_werkzeug_compiled_rule(config):
    app = all_pack_app(config)
    plain = Map(host_matching=app.url_map.host_matching, converters=app.url_map.converters)
    for rule in app.url_map.iter_rules():
        plain.add(
            QuartRule(
                rule.rule,
                defaults=rule.defaults,
                methods=rule.methods,
                endpoint=rule.endpoint,
                websocket=rule.websocket,
            )
        )
    assert shapes_of(app.url_map) == shapes_of(plain)


async def test_a_second_app_routes_and_documents_as_the_first(config):
    first = all_pack_app(config)
    second = all_pack_app(config)  # its rules take the builders the first compiled
    assert shapes_of(second.url_map) == shapes_of(first.url_map)
    assert await openapi_of(second) == await openapi_of(first)


class Upper(BaseConverter):
    def to_url(self, value: str) -> str:
        return value.upper()


class Lower(BaseConverter):
    def to_url(self, value: str) -> str:
        return value.lower()


def test_rules_sharing_a_builder_convert_with_their_own_converters():
    upper = Map([SharedBuilderRule("/a/<case:n>", endpoint="a")], converters={"case": Upper})
    lower = Map([SharedBuilderRule("/a/<case:n>", endpoint="a")], converters={"case": Lower})
    assert upper.bind("example.org").build("a", {"n": "Xy"}) == "/a/XY"
    assert lower.bind("example.org").build("a", {"n": "Xy", "k": "v"}) == "/a/xy?k=v"


def test_rules_with_defaults_build_their_defaults():
    rules = Map(
        [
            SharedBuilderRule("/c/", defaults={"n": 3}, endpoint="c"),
            SharedBuilderRule("/c/<int:n>", endpoint="c"),
            SharedBuilderRule("/d/<int:n>", defaults={"n": 3}, endpoint="d"),
        ]
    ).bind("example.org")
    assert rules.build("c", {"n": 3}) == "/c/"
    assert rules.build("c", {"n": 4, "k": "v"}) == "/c/4?k=v"
    assert rules.build("d", {}) == "/d/3"
    assert rules.match("/c/4") == ("c", {"n": 4})
