"""Rules sharing compiled URL builders build, match and document exactly as werkzeug's own."""

from __future__ import annotations

from typing import Any

from hostgate._compat import patches_enabled
from hostgate._compat.werkzeug import SharedBuilderRule
from hostgate.app import create_app
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


def test_the_app_uses_shared_builder_rules_unless_the_patches_are_off(config):
    app = all_pack_app(config)
    shared = [isinstance(rule, SharedBuilderRule) for rule in app.url_map.iter_rules()]
    assert shared and set(shared) == {patches_enabled()}


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


def compiled_by(monkeypatch: Any) -> list[str]:
    """The rule texts whose builders werkzeug compiles from now on (two per new rule)."""
    compiled: list[str] = []
    compile_builder = QuartRule._compile_builder

    def counted(rule: QuartRule, append_unknown: bool = True) -> Any:
        compiled.append(rule.rule)
        return compile_builder(rule, append_unknown)

    monkeypatch.setattr(QuartRule, "_compile_builder", counted)
    return compiled


def test_a_second_app_compiles_no_builder(config, monkeypatch):
    all_pack_app(config)
    compiled = compiled_by(monkeypatch)
    app = all_pack_app(config)
    assert len(list(app.url_map.iter_rules())) > 100
    assert compiled == []
    assert len(SharedBuilderRule._builders) <= SharedBuilderRule.max_builders


def test_the_cache_keeps_the_most_recently_used_builders(monkeypatch):
    monkeypatch.setattr(SharedBuilderRule, "max_builders", 6)
    monkeypatch.setattr(SharedBuilderRule, "_builders", type(SharedBuilderRule._builders)())
    compiled = compiled_by(monkeypatch)

    def build(*paths: str) -> Map:
        return Map([SharedBuilderRule(path, endpoint=path) for path in paths])

    build("/a/<n>", "/b/<n>", "/c/<n>")  # two builders each: the cache is full
    assert compiled == ["/a/<n>", "/a/<n>", "/b/<n>", "/b/<n>", "/c/<n>", "/c/<n>"]
    shared = build("/a/<n>")  # used again: now the most recent
    assert len(compiled) == 6
    build("/d/<n>")  # pushes out the least recently used, /b/
    assert sorted({key[0] for key in SharedBuilderRule._builders}) == ["/a/<n>", "/c/<n>", "/d/<n>"]
    compiled.clear()
    again = build("/a/<n>", "/c/<n>", "/d/<n>")
    assert compiled == []
    build("/b/<n>")
    assert compiled == ["/b/<n>", "/b/<n>"]
    assert len(SharedBuilderRule._builders) == 6
    first, second = (next(m.iter_rules()) for m in (shared, again))
    assert second.rule == first.rule == "/a/<n>"
    assert second._build.__func__ is first._build.__func__  # one function, two rules
    assert second.build({"n": "x y"}) == first.build({"n": "x y"}) == ("", "/a/x%20y")
