"""The ``matches`` operator cannot stall the server: RE2, bounded input, refused patterns."""

import asyncio

import pytest
from hostgate_notifications.patterns import MAX_SUBJECT_LENGTH, search

from testsupport.receivers import settled_entries

CHANNELS = "/api/v1/notifications/channels"
RULES = "/api/v1/notifications/rules"
LOGIN = "/api/v1/auth/login"
#: The classic catastrophic-backtracking pattern: exponential in Python's ``re``.
EVIL = "^(a+)+$"


async def evil_rule(client, admin, http_receiver):
    response = await client.put(
        f"{CHANNELS}/webhook",
        headers=admin.headers,
        json={"enabled": True, "config": {"url": http_receiver.url("/hook")}},
    )
    assert response.status_code == 200, await response.get_data()
    response = await client.post(
        RULES,
        headers=admin.headers,
        json={
            "name": "evil",
            "events": ["auth.login_failed"],
            "conditions": [{"field": "username", "operator": "matches", "value": [EVIL]}],
            "actions": [{"channel": "webhook", "recipients": []}],
        },
    )
    assert response.status_code == 201, await response.get_data()


# A hang guard, not a timing: Python's re would need 2**999 steps for the crafted name.
@pytest.mark.timeout(120)
async def test_a_crafted_username_cannot_stall_the_server(client, admin, http_receiver):
    """An unauthenticated login with a 1,000-character crafted username is evaluated
    against ``^(a+)+$`` while a concurrent /health is answered; the rule still matches
    the username it should, and only that one."""
    await evil_rule(client, admin, http_receiver)
    # Events carry the first 200 characters of a username: the crafted part sits there.
    crafted = "a" * 199 + "!" + "b" * 800
    assert len(crafted) == 1000
    login = asyncio.create_task(client.post(LOGIN, json={"username": crafted, "password": "x"}))
    health = await client.get("/api/v1/health")
    assert health.status_code == 200
    assert (await login).status_code == 401

    matching = "a" * 1000
    response = await client.post(LOGIN, json={"username": matching, "password": "x"})
    assert response.status_code == 401
    # Events are matched in order: once the second one is delivered, the crafted one
    # was evaluated too, and it did not match.
    [delivered] = await http_receiver.wait_for("/hook")
    assert set(delivered.json()["event"]["username"]) == {"a"}
    [entry] = await settled_entries(client, admin.headers)
    assert entry["status"] == "sent"
    assert len(http_receiver.received("/hook")) == 1


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"^(a)\1$", "backreference"),
        (r"^(?=admin)", "lookahead"),
        (r"(?<!x)root", "lookbehind"),
        (r"(unclosed", "syntax"),
    ],
)
async def test_patterns_the_engine_cannot_run_are_refused(client, admin, pattern, why):
    body = {
        "name": why,
        "events": ["auth.login_failed"],
        "conditions": [{"field": "username", "operator": "matches", "value": [pattern]}],
    }
    response = await client.post(RULES, headers=admin.headers, json=body)
    assert response.status_code == 400, why
    error = await response.get_json()
    assert error["code"] == "invalid_input"
    assert "regular expression" in error["error"]
    assert "traceback" not in error["error"].lower()

    good = {**body, "conditions": [{"field": "username", "operator": "matches", "value": ["^a"]}]}
    created = await client.post(RULES, headers=admin.headers, json=good)
    assert created.status_code == 201
    rule = (await created.get_json())["rule"]
    url = f"{RULES}/{rule['id']}"
    response = await client.put(url, headers=admin.headers, json={"conditions": body["conditions"]})
    assert response.status_code == 400
    assert "lookaround" in (await response.get_json())["error"]
    stored = await (await client.get(RULES, headers=admin.headers)).get_json()
    assert stored["rules"][0]["conditions"] == good["conditions"]


def test_only_the_first_characters_are_matched():
    assert search("^a+$", "a" * MAX_SUBJECT_LENGTH)
    assert not search("b", "a" * MAX_SUBJECT_LENGTH + "b")


def test_a_stored_pattern_the_engine_refuses_never_matches(caplog):
    assert search(r"(a)\1", "aa") is False
    assert "pattern skipped" in caplog.text
