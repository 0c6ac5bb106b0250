"""``/command-rules``: writing rules, testing a command, refusals of bad input, the audit trail."""

from __future__ import annotations

from typing import Any

RULE = {"name": "no root rm", "action": "block", "match": "prefix", "pattern": "rm -rf /"}


async def audit_types(client: Any, admin: Any) -> list[str]:
    response = await client.get("/api/v1/audit?limit=200", headers=admin.headers)
    return [entry["eventType"] for entry in (await response.get_json())["entries"]]


async def test_rules_are_written_listed_changed_tested_and_deleted_with_an_audit_trail(
    client, admin, make_user, make_connection
):
    user = await make_user("alice")
    box = await make_connection(user, "ssh", "127.0.0.1", 22, name="box")
    tagged = await client.put(
        f"/api/v1/connections/{box.id}", json={"tags": ["prod"]}, headers=user.headers
    )
    assert tagged.status_code == 200
    response = await client.post("/api/v1/command-rules", json=RULE, headers=admin.headers)
    assert response.status_code == 201
    created = await response.get_json()
    assert created["enabled"] is True and created["priority"] == 100
    assert created["connectionIds"] == [] and created["createdAt"].endswith("Z")
    hold = {
        "name": "hold prod reboots",
        "action": "approve",
        "match": "regex",
        "pattern": r"^(sudo )?reboot\b",
        "tags": ["prod"],
        "priority": 1,
    }
    response = await client.post("/api/v1/command-rules", json=hold, headers=admin.headers)
    assert response.status_code == 201
    held_rule = await response.get_json()

    listed = await (await client.get("/api/v1/command-rules", headers=admin.headers)).get_json()
    assert [r["name"] for r in listed["rules"]] == ["hold prod reboots", "no root rm"]
    assert listed["total"] == 2 and listed["page"] == 1

    async def test(body: dict[str, Any]) -> dict[str, Any]:
        answer = await client.post("/api/v1/command-rules/test", json=body, headers=admin.headers)
        assert answer.status_code == 200
        return dict(await answer.get_json())

    blocked = await test({"command": "echo hi\nrm   -rf /home"})
    assert blocked["action"] == "block" and blocked["rule"]["id"] == created["id"]
    assert blocked["line"] == "rm -rf /home"
    assert (await test({"command": "sudo reboot now", "connectionId": box.id}))[
        "action"
    ] == "approve"
    other = await make_connection(user, "ssh", "127.0.0.1", 22, name="dev box")
    assert await test({"command": "sudo reboot", "connectionId": other.id}) == {
        "action": "allow",
        "rule": None,
        "line": None,
    }

    # disabled: no longer in force
    response = await client.put(
        f"/api/v1/command-rules/{held_rule['id']}",
        json={"enabled": False, "priority": 2.0},  # a whole number, also written 2.0
        headers=admin.headers,
    )
    assert response.status_code == 200
    changed = (await response.get_json())["rule"]
    assert changed["enabled"] is False and changed["priority"] == 2
    assert (await test({"command": "reboot"}))["action"] == "allow"

    response = await client.delete(f"/api/v1/command-rules/{created['id']}", headers=admin.headers)
    assert response.status_code == 200
    assert (await test({"command": "rm -rf /"}))["action"] == "allow"
    missing = await client.get(f"/api/v1/command-rules/{created['id']}", headers=admin.headers)
    assert missing.status_code == 404

    types = await audit_types(client, admin)
    assert types.count("command_rules.created") == 2
    assert "command_rules.updated" in types and "command_rules.deleted" in types


async def test_bad_input_is_refused_with_a_clear_4xx_and_changes_nothing(client, admin, make_user):
    response = await client.post("/api/v1/command-rules", json=RULE, headers=admin.headers)
    rule_id = (await response.get_json())["id"]
    cases = [
        ({**RULE, "name": "x", "match": "regex", "pattern": r"(a)\1"}, 400, "backreferences"),
        ({**RULE, "name": "x", "match": "glob", "pattern": "   "}, 400, "empty"),
        ({**RULE, "name": "x", "action": "explode"}, 400, ""),
        ({**RULE, "name": "x", "extra": 1}, 400, ""),
        ({**RULE, "name": "x", "priority": "1"}, 400, ""),
        ({**RULE, "name": "x", "pattern": "a" * 501}, 400, ""),
        (RULE, 409, "exists"),
    ]
    for body, status, words in cases:
        response = await client.post("/api/v1/command-rules", json=body, headers=admin.headers)
        assert response.status_code == status, (body, await response.get_data())
        error = await response.get_json()
        assert words in error["error"], error
    response = await client.put(
        f"/api/v1/command-rules/{rule_id}",
        json={"match": "regex", "pattern": "("},
        headers=admin.headers,
    )
    assert response.status_code == 400
    response = await client.put(
        f"/api/v1/command-rules/{rule_id}", json={"name": None}, headers=admin.headers
    )
    assert response.status_code == 400
    for path in ("/api/v1/command-rules?limit=abc", "/api/v1/command-rules?page=0"):
        assert (await client.get(path, headers=admin.headers)).status_code == 400
    response = await client.post("/api/v1/command-rules/held/nope/approve", headers=admin.headers)
    assert response.status_code == 404
    listed = await (await client.get("/api/v1/command-rules", headers=admin.headers)).get_json()
    assert [(r["name"], r["pattern"], r["match"]) for r in listed["rules"]] == [
        (RULE["name"], RULE["pattern"], "prefix")
    ]

    # without the permission: 403 for the rules, an empty list of held commands
    bob = await make_user("bob")
    assert (await client.get("/api/v1/command-rules", headers=bob.headers)).status_code == 403
    response = await client.post("/api/v1/command-rules", json=RULE, headers=bob.headers)
    assert response.status_code == 403
    response = await client.post(
        "/api/v1/command-rules/test", json={"command": "ls"}, headers=bob.headers
    )
    assert response.status_code == 403
    held = await client.get("/api/v1/command-rules/held", headers=bob.headers)
    assert held.status_code == 200 and (await held.get_json())["held"] == []
    response = await client.post("/api/v1/command-rules/held/nope/deny", headers=bob.headers)
    assert response.status_code == 403
