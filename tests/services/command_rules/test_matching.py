"""Command rule matching: exact, prefix, glob and regex patterns, scopes, and which rule decides."""

from __future__ import annotations

import pytest
from hostgate.safe_regex import PatternError
from hostgate.services.command_rules.matching import (
    Rule,
    Scope,
    check_pattern,
    decide,
    glob_to_regex,
    normalise,
    ordered,
)


def rule(name: str, action: str, match: str, pattern: str, priority: int = 100, **scope) -> Rule:
    return Rule(
        id=name,
        name=name,
        action=action,
        match=match,
        pattern=pattern,
        priority=priority,
        **{key: frozenset(value) for key, value in scope.items()},
    )


def test_each_kind_of_pattern_matches_what_it_says_and_nothing_more() -> None:
    exact = rule("e", "block", "exact", "  reboot ")
    assert exact.matches(normalise("reboot")) and exact.matches(normalise(" reboot  "))
    assert not exact.matches(normalise("reboot now")) and not exact.matches("Reboot")

    prefix = rule("p", "block", "prefix", "rm -rf")
    assert prefix.matches(normalise("rm   -rf   /tmp/x"))
    assert not prefix.matches(normalise("echo rm -rf")) and not prefix.matches("rm -r")

    glob = rule("g", "block", "glob", "cat /etc/sha*")
    assert glob.matches("cat /etc/shadow") and glob.matches("cat /etc/sha")
    assert glob.matches("cat /etc/shadow; ls ~")  # * runs to the end of the line
    assert not glob.matches("sudo cat /etc/shadow")  # a glob covers the whole line
    one = rule("q", "block", "glob", "kill -? 1")
    assert one.matches("kill -9 1") and not one.matches("kill -15 1")
    classes = rule("c", "block", "glob", "init [06]")
    assert classes.matches("init 0") and classes.matches("init 6") and not classes.matches("init 3")
    negated = rule("n", "block", "glob", "init [!06]")
    assert negated.matches("init 3") and not negated.matches("init 0")
    literal = rule("l", "block", "glob", "echo a.b+(c)")
    assert literal.matches("echo a.b+(c)") and not literal.matches("echo axb+(c)")

    regex = rule("r", "block", "regex", r"\bdd\s+if=")
    assert regex.matches("sudo dd if=/dev/zero of=/dev/sda") and not regex.matches("add if=x")


def test_glob_translation_keeps_brackets_and_backslashes_literal_where_they_must_be() -> None:
    assert glob_to_regex("a[b") == r"(?s)^a\[b$"
    assert rule("x", "block", "glob", "a[b").matches("a[b")
    assert rule("y", "block", "glob", "[\\]x").matches("\\x")


def test_patterns_the_engine_cannot_run_or_empty_ones_are_refused() -> None:
    for match, pattern in [
        ("regex", r"(a)\1"),
        ("regex", "(?=x)"),
        ("regex", "("),
        ("exact", "   "),
        ("nonsense", "ls"),
        ("regex", "a" * 501),
    ]:
        with pytest.raises(PatternError):
            check_pattern(match, pattern)


def test_a_pathological_regex_is_run_by_the_linear_time_engine() -> None:
    evil = rule("evil", "block", "regex", r"^(a+)+$")
    # a backtracking engine would not finish this in the age of the universe
    assert not evil.matches("a" * 4000 + "!")
    assert evil.matches("a" * 4000)


def test_the_strictest_action_decides_then_priority_then_name() -> None:
    rules = ordered(
        [
            rule("flag-all-rm", "alert", "prefix", "rm"),
            rule("hold-rm-rf", "approve", "prefix", "rm -rf", priority=5),
            rule("block-rm-root", "block", "exact", "rm -rf /", priority=500),
            rule("b-hold", "approve", "prefix", "rm -rf /tmp", priority=5),
        ]
    )
    assert decide(rules, "ls") is None
    assert decide(rules, "rm x").rule.name == "flag-all-rm"
    assert decide(rules, "rm -rf /var").rule.name == "hold-rm-rf"
    assert decide(rules, "rm -rf /tmp/x").rule.name == "b-hold"  # same priority: by name
    blocked = decide(rules, "rm   -rf /")
    assert blocked.action == "block" and blocked.rule.name == "block-rm-root"
    assert blocked.command == "rm -rf /"


def test_every_line_of_a_multi_line_entry_is_checked() -> None:
    rules = ordered([rule("no-reboot", "block", "exact", "reboot")])
    decision = decide(rules, "echo one\n  reboot  \necho two")
    assert decision is not None and decision.command == "reboot"
    assert decide(rules, "echo reboot\n") is None


def test_a_rule_covers_its_connections_groups_tags_and_roles_only() -> None:
    scope = Scope("c1", "g1", frozenset({"prod", "db"}), "role-ops")
    assert rule("all", "block", "exact", "x").applies(scope)
    assert rule("by-id", "block", "exact", "x", connection_ids={"c1"}).applies(scope)
    assert rule("by-group", "block", "exact", "x", group_ids={"g1"}).applies(scope)
    assert rule("by-tag", "block", "exact", "x", tags={"prod"}).applies(scope)
    assert not rule("other", "block", "exact", "x", connection_ids={"c2"}, tags={"dev"}).applies(
        scope
    )
    assert rule("ops", "block", "exact", "x", role_ids={"role-ops"}).applies(scope)
    assert not rule("devs", "block", "exact", "x", role_ids={"role-dev"}).applies(scope)
    # both must hold: the connection and the role
    assert not rule(
        "prod-devs", "block", "exact", "x", tags={"prod"}, role_ids={"role-dev"}
    ).applies(scope)
    ungrouped = Scope("c1", None, frozenset(), "role-ops")
    assert not rule("by-group", "block", "exact", "x", group_ids={"g1"}).applies(ungrouped)
