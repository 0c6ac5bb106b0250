"""Condition matching of notification rules against audit events."""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime

from hostgate.descriptors import AuditEvent
from hostgate_notifications.rule_matching import (
    CONDITION_FIELDS,
    OPERATORS,
    condition_holds,
    event_matches,
    rule_matches,
)
from hypothesis import given
from hypothesis import strategies as st

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
SHORT = st.text(max_size=12)
ADDRESSES = st.one_of(
    st.ip_addresses().map(str),
    st.sampled_from(["", "unknown", "::ffff:10.0.0.1", "10.0.0.1 "]),
)
NETWORKS = st.one_of(
    st.ip_addresses(v=4).flatmap(
        lambda a: st.integers(0, 32).map(lambda n: str(ipaddress.ip_network(f"{a}/{n}", False)))
    ),
    st.ip_addresses(v=6).flatmap(
        lambda a: st.integers(0, 128).map(lambda n: str(ipaddress.ip_network(f"{a}/{n}", False)))
    ),
    st.ip_addresses().map(str),
)
TEXT_OPERATORS = [op for op in OPERATORS if op != "matches"]


def event(**values: str) -> AuditEvent:
    return AuditEvent(
        id="e1",
        event_type=values.get("eventType", "auth.login"),
        user_id=values.get("userId", "u1"),
        username=values.get("username", "alice"),
        display_name="Alice",
        target=values.get("target", ""),
        details={},
        ip_address=values.get("ipAddress", "127.0.0.1"),
        timestamp=WHEN,
    )


def condition(field: str, operator: str, values: list[str]) -> dict[str, object]:
    return {"field": field, "operator": operator, "value": values}


@given(
    field=st.sampled_from(CONDITION_FIELDS),
    actual=SHORT,
    values=st.lists(SHORT, min_size=1, max_size=4),
)
def test_negated_operators_are_exact_negations(field: str, actual: str, values: list[str]) -> None:
    happened = event(**{field: actual})
    for positive, negative in (
        ("in", "not_in"),
        ("equals", "not_equals"),
        ("contains", "not_contains"),
    ):
        holds = condition_holds(condition(field, positive, values), happened)
        assert condition_holds(condition(field, negative, values), happened) is not holds


@given(actual=SHORT, values=st.lists(SHORT, min_size=1, max_size=4))
def test_text_comparisons_ignore_case(actual: str, values: list[str]) -> None:
    happened = event(username=actual)
    upper = event(username=actual.upper())
    for operator in TEXT_OPERATORS:
        if actual.upper().lower() != actual.lower():
            continue  # characters whose case mapping does not round-trip (e.g. "ß")
        check = condition("username", operator, values)
        assert condition_holds(check, happened) == condition_holds(check, upper)


@given(actual=SHORT, values=st.lists(SHORT, min_size=1, max_size=4))
def test_text_operators_agree_with_python(actual: str, values: list[str]) -> None:
    happened = event(target=actual)
    low, lowered = actual.lower(), [v.lower() for v in values]
    expected = {
        "equals": low in lowered,
        "contains": any(v in low for v in lowered),
        "starts_with": any(low.startswith(v) for v in lowered),
        "ends_with": any(low.endswith(v) for v in lowered),
    }
    for operator, wanted in expected.items():
        assert condition_holds(condition("target", operator, values), happened) is wanted


@given(address=ADDRESSES, networks=st.lists(NETWORKS, min_size=1, max_size=4))
def test_cidr_membership_agrees_with_ipaddress(address: str, networks: list[str]) -> None:
    happened = event(ipAddress=address)
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        expected = any(address.strip().lower() == n.lower() for n in networks)
    else:
        expected = any(ip in ipaddress.ip_network(n, strict=False) for n in networks)
    assert condition_holds(condition("ipAddress", "in", networks), happened) is expected
    assert condition_holds(condition("ipAddress", "not_in", networks), happened) is not expected


@given(
    checks=st.lists(
        st.tuples(
            st.sampled_from(CONDITION_FIELDS),
            st.sampled_from(TEXT_OPERATORS),
            st.lists(SHORT, min_size=1, max_size=3),
        ),
        max_size=5,
    ),
    username=SHORT,
    target=SHORT,
)
def test_and_is_all_and_or_is_any(
    checks: list[tuple[str, str, list[str]]], username: str, target: str
) -> None:
    happened = event(username=username, target=target)
    conditions = [condition(*c) for c in checks]
    results = [condition_holds(c, happened) for c in conditions]
    assert rule_matches(["*"], "and", conditions, happened) is all(results)
    assert rule_matches(["*"], "or", conditions, happened) is (any(results) or not conditions)
    # a rule for other event types never matches, whatever its conditions
    assert rule_matches(["other.event"], "or", conditions, happened) is False


@given(
    area=st.from_regex(r"[a-z]{1,8}", fullmatch=True),
    verb=st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
    other=st.from_regex(r"[a-z]{1,8}", fullmatch=True),
)
def test_event_patterns(area: str, verb: str, other: str) -> None:
    kind = f"{area}.{verb}"
    assert event_matches(["*"], kind)
    assert event_matches([kind], kind)
    assert event_matches([f"{area}.*"], kind)
    assert event_matches([f"{other}.*"], kind) is (other == area)
    assert not event_matches([f"{area}{other}.*"], kind)
    assert not event_matches([], kind)


@given(pattern=st.sampled_from(["(", "[a-", "*x", "(?P<"]), actual=SHORT)
def test_a_broken_regex_never_raises(pattern: str, actual: str) -> None:
    assert (
        condition_holds(condition("username", "matches", [pattern]), event(username=actual))
        is False
    )
