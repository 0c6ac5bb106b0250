"""The URL map that remembers its matches answers exactly as werkzeug's, without its garbage."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
from hostgate._compat import patches_enabled
from hostgate._compat import werkzeug as routematch
from hostgate._compat.werkzeug import RememberingMap
from hostgate.app import create_app
from quart.routing import QuartMap, QuartRule
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map
from werkzeug.routing.matcher import StateMachineMatcher


def all_pack_app(config: Any) -> Any:
    return create_app(config.with_overrides(load_entry_points=True))


def copy_rules(url_map: Map, into: Map) -> Map:
    for rule in url_map.iter_rules():
        into.add(
            QuartRule(
                rule.rule,
                defaults=rule.defaults,
                methods=rule.methods,
                endpoint=rule.endpoint,
                websocket=rule.websocket,
                strict_slashes=rule.strict_slashes,
            )
        )
    return into


def request_lines(url_map: Map) -> Iterator[tuple[str, str, bool]]:
    """A path for every rule, with each method it takes and one it may not, and odd paths."""
    for rule in url_map.iter_rules():
        values = {name: "0b6f0b9e-2c1f-4e39-9f0e-2b8f5d7a6c11" for name in rule.arguments}
        try:
            path = rule.build(values, append_unknown=False)[1]
        except Exception:  # a converter refusing the sample value: try its plain text
            path = rule.rule
        for method in sorted(rule.methods or {"GET"}) + ["PATCH", "TRACE"]:
            yield path, method, rule.websocket
            yield path.rstrip("/") + "//", method, rule.websocket
    yield "/api/v1/no/such/path", "GET", False
    yield "/api/v1//auth//me", "GET", False


def outcome(url_map: Map, path: str, method: str, websocket: bool) -> Any:
    adapter = url_map.bind("127.0.0.1", "/")
    try:
        rule, values = adapter.match(path, method, return_rule=True, websocket=websocket)
    except HTTPException as refusal:
        return type(refusal).__name__, getattr(refusal, "new_url", None)
    return rule.rule, rule.endpoint, values


def test_the_app_matches_through_a_remembering_map_unless_the_patches_are_off(config):
    app = all_pack_app(config)
    assert isinstance(app.url_map, RememberingMap) is patches_enabled()


def test_every_rule_matches_and_refuses_as_werkzeugs_own_twice(config):
    app = all_pack_app(config)
    blank = QuartMap(host_matching=app.url_map.host_matching, converters=app.url_map.converters)
    plain = copy_rules(app.url_map, blank)
    lines = list(request_lines(app.url_map))
    assert len(lines) > 300
    for _ in range(2):  # the second time from memory
        for path, method, websocket in lines:
            expected = outcome(plain, path, method, websocket)
            assert outcome(app.url_map, path, method, websocket) == expected, (path, method)


def test_a_path_matched_before_is_not_walked_again_and_leaves_no_cyclic_garbage(monkeypatch):
    walks = []
    walk = StateMachineMatcher.match

    def counted(self: Any, *args: Any) -> Any:
        walks.append(args)
        return walk(self, *args)

    monkeypatch.setattr(StateMachineMatcher, "match", counted)
    url_map = RememberingMap([QuartRule("/items/<uuid:item>", endpoint="item")])
    adapter = url_map.bind("example.org", "/")
    path = "/items/0b6f0b9e-2c1f-4e39-9f0e-2b8f5d7a6c11"
    first = adapter.match(path, "GET")
    gc.collect()
    gc.disable()
    try:
        for _ in range(200):
            assert adapter.match(path, "GET") == first
        left = gc.collect()
    finally:
        gc.enable()
    assert len(walks) == 1
    assert left == 0
    # werkzeug's own walk leaves its closure in a cycle each time: what this map saves
    plain = Map([QuartRule("/items/<uuid:item>", endpoint="item")]).bind("example.org", "/")
    gc.disable()
    try:
        for _ in range(200):
            plain.match(path, "GET")
        assert gc.collect() >= 200
    finally:
        gc.enable()


def test_the_values_given_are_a_copy_a_view_may_change():
    adapter = RememberingMap([QuartRule("/a/<int:n>", endpoint="a")]).bind("example.org", "/")
    endpoint, values = adapter.match("/a/4", "GET")
    values["n"] = 5
    values["extra"] = True
    assert adapter.match("/a/4", "GET") == ("a", {"n": 4})


def test_a_rule_added_later_wins_over_what_was_remembered():
    url_map = RememberingMap([QuartRule("/a/<name>", endpoint="any")])
    assert url_map.bind("example.org", "/").match("/a/me", "GET") == ("any", {"name": "me"})
    url_map.add(QuartRule("/a/me", endpoint="me"))
    assert url_map.bind("example.org", "/").match("/a/me", "GET") == ("me", {})


def test_refusals_are_not_remembered_and_the_memory_is_bounded(monkeypatch):
    monkeypatch.setattr(routematch, "MAX_REMEMBERED", 50)
    url_map = RememberingMap([QuartRule("/a/<int:n>", endpoint="a", methods=["GET"])])
    adapter = url_map.bind("example.org", "/")
    for n in range(120):
        assert adapter.match(f"/a/{n}", "GET") == ("a", {"n": n})
        with pytest.raises(HTTPException):
            adapter.match(f"/b/{n}", "GET")
        with pytest.raises(HTTPException):
            adapter.match(f"/a/{n}", "DELETE")
    remembered = url_map._matcher.remembered
    assert 0 < len(remembered) <= 50
    assert all(key[1].startswith("/a/") and key[2] == "GET" for key in remembered)


def test_rules_given_to_the_constructor_are_matched():
    url_map = RememberingMap(
        [QuartRule("/x", endpoint="x"), QuartRule("/ws", endpoint="ws", websocket=True)]
    )
    adapter = url_map.bind("example.org", "/")
    assert adapter.match("/x", "GET") == ("x", {})
    assert adapter.match("/ws", "GET", websocket=True) == ("ws", {})


def test_long_paths_are_matched_but_not_remembered():
    url_map = RememberingMap([QuartRule("/files/<path:name>", endpoint="file")])
    adapter = url_map.bind("example.org", "/")
    long_name = "d/" * 200 + "f.txt"
    assert adapter.match(f"/files/{long_name}", "GET") == ("file", {"name": long_name})
    assert adapter.match("/files/short.txt", "GET") == ("file", {"name": "short.txt"})
    assert [key[1] for key in url_map._matcher.remembered] == ["/files/short.txt"]
