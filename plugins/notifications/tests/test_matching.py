"""Matching events against rules: event patterns, every field and operator, CIDR, and/or."""

from datetime import UTC, datetime

import pytest
from hostgate.descriptors import AuditEvent
from hostgate_notifications.rule_matching import event_matches, rule_matches
from hostgate_notifications.service import period_of


def make_event(**changes):
    values = {
        "id": "e1",
        "event_type": "auth.login_failed",
        "user_id": "u-123",
        "username": "Alice",
        "display_name": "Alice A",
        "target": "alice",
        "details": {},
        "ip_address": "203.0.113.7",
        "timestamp": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    }
    values.update(changes)
    return AuditEvent(**values)


def holds(field, operator, value, **event):
    return rule_matches(
        ["*"], "and", [{"field": field, "operator": operator, "value": value}], make_event(**event)
    )


@pytest.mark.parametrize(
    ("patterns", "event_type", "expected"),
    [
        (["*"], "anything.at_all", True),
        (["auth.login"], "auth.login", True),
        (["auth.login"], "auth.login_failed", False),
        (["auth.*"], "auth.login_failed", True),
        (["auth.*"], "authx.login", False),
        (["user.created", "role.*"], "role.deleted", True),
        ([], "auth.login", False),
    ],
)
def test_event_patterns(patterns, event_type, expected):
    assert event_matches(patterns, event_type) is expected


@pytest.mark.parametrize(
    ("field", "operator", "value", "expected"),
    [
        ("username", "equals", ["alice"], True),
        ("username", "equals", ["bob", "ALICE"], True),
        ("username", "equals", ["ali"], False),
        ("username", "not_equals", ["bob"], True),
        ("username", "not_equals", ["alice"], False),
        ("username", "in", ["bob", "alice"], True),
        ("username", "not_in", ["bob", "alice"], False),
        ("username", "contains", ["LIC"], True),
        ("username", "not_contains", ["lic"], False),
        ("username", "not_contains", ["zed"], True),
        ("username", "starts_with", ["al"], True),
        ("username", "starts_with", ["ce"], False),
        ("username", "ends_with", ["ice"], True),
        ("username", "matches", ["^A.*e$"], True),
        ("username", "matches", ["^a.*e$"], False),
        ("username", "matches", ["(?i)^a.*e$"], True),
        ("userId", "equals", ["u-123"], True),
        ("eventType", "starts_with", ["auth."], True),
        ("target", "equals", ["alice"], True),
        ("target", "matches", ["^bob$", "^ali"], True),
        ("ipAddress", "equals", ["203.0.113.7"], True),
        ("ipAddress", "in", ["203.0.113.0/24"], True),
        ("ipAddress", "in", ["198.51.100.0/24", "203.0.113.7"], True),
        ("ipAddress", "in", ["10.0.0.0/8"], False),
        ("ipAddress", "not_in", ["10.0.0.0/8", "192.168.0.0/16"], True),
        ("ipAddress", "not_in", ["203.0.0.0/8"], False),
        ("ipAddress", "starts_with", ["203.0."], True),
    ],
)
def test_operators(field, operator, value, expected):
    assert holds(field, operator, value) is expected


def test_ipv6_ranges_and_empty_addresses():
    assert holds("ipAddress", "in", ["2001:db8::/32"], ip_address="2001:db8::5")
    assert not holds("ipAddress", "in", ["2001:db8::/32"], ip_address="10.1.2.3")
    assert holds("ipAddress", "not_in", ["10.0.0.0/8"], ip_address="")
    assert not holds("ipAddress", "in", ["10.0.0.0/8"], ip_address="")


def test_and_or_logic():
    outside = {"field": "ipAddress", "operator": "not_in", "value": ["10.0.0.0/8"]}
    bob = {"field": "username", "operator": "equals", "value": ["bob"]}
    event = make_event()
    assert rule_matches(["*"], "and", [outside], event)
    assert not rule_matches(["*"], "and", [outside, bob], event)
    assert rule_matches(["*"], "or", [outside, bob], event)
    assert not rule_matches(["*"], "or", [bob], event)
    assert rule_matches(["*"], "or", [], event)
    assert not rule_matches(["user.*"], "and", [], event)


def test_digest_periods_are_utc_hours_and_days():
    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert period_of("hourly", moment) == (
        datetime(2026, 1, 2, 3, tzinfo=UTC),
        datetime(2026, 1, 2, 4, tzinfo=UTC),
    )
    assert period_of("daily", moment) == (
        datetime(2026, 1, 2, tzinfo=UTC),
        datetime(2026, 1, 3, tzinfo=UTC),
    )


def test_a_rule_on_commands_matches_the_command_line_of_session_command_events():
    conditions = [{"field": "command", "operator": "matches", "value": [r"rm\s+-rf\s+/(\s|$)"]}]
    command = make_event(event_type="session.command", details={"command": "sudo rm -rf / "})
    harmless = make_event(event_type="session.command", details={"command": "rm -rf /tmp/x"})
    other = make_event(event_type="auth.login", details={"command": "rm -rf /"})
    assert rule_matches(["session.command"], "and", conditions, command)
    assert not rule_matches(["session.command"], "and", conditions, harmless)
    assert not rule_matches(["*"], "and", conditions, other)
