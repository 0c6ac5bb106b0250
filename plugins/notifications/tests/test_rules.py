"""Rules over HTTP: create (201), list, update any subset, toggle, delete, recipients."""

from hostgate.db.models.identity import Role
from sqlmodel import select

RULES = "/api/v1/notifications/rules"

RULE = {
    "name": "Logins from outside",
    "enabled": True,
    "events": ["auth.login", "auth.login_failed"],
    "conditionLogic": "and",
    "conditions": [{"field": "ipAddress", "operator": "not_in", "value": ["10.0.0.0/8"]}],
    "cadence": "instant",
    "actions": [{"channel": "smtp", "recipients": ["sec@example.org"]}],
}


async def create(client, admin, **changes):
    response = await client.post(RULES, headers=admin.headers, json={**RULE, **changes})
    assert response.status_code == 201, await response.get_data()
    return (await response.get_json())["rule"]


async def test_create_returns_201_and_the_spec_shape(client, admin):
    rule = await create(client, admin)
    assert set(rule) == {
        "id",
        "name",
        "enabled",
        "events",
        "conditionLogic",
        "conditions",
        "cadence",
        "actions",
        "createdAt",
        "lastTriggeredAt",
    }
    assert {k: rule[k] for k in RULE} == RULE
    assert rule["lastTriggeredAt"] is None
    assert rule["createdAt"].endswith("Z")
    listed = await (await client.get(RULES, headers=admin.headers)).get_json()
    assert listed == {"rules": [rule]}


async def test_defaults_for_optional_fields(client, admin):
    response = await client.post(
        RULES,
        headers=admin.headers,
        json={"name": "all", "events": ["*"], "actions": [{"channel": "slack"}]},
    )
    assert response.status_code == 201
    rule = (await response.get_json())["rule"]
    assert rule["enabled"] is True
    assert rule["conditionLogic"] == "and"
    assert rule["conditions"] == []
    assert rule["cadence"] == "instant"
    assert rule["actions"] == [{"channel": "slack", "recipients": []}]


async def test_update_any_subset_and_toggle_and_delete(client, admin):
    rule = await create(client, admin)
    url = f"{RULES}/{rule['id']}"
    response = await client.put(
        url, headers=admin.headers, json={"name": "Renamed", "cadence": "daily"}
    )
    assert response.status_code == 200
    updated = (await response.get_json())["rule"]
    assert updated["name"] == "Renamed" and updated["cadence"] == "daily"
    assert updated["events"] == RULE["events"]
    response = await client.put(url, headers=admin.headers, json={"enabled": False})
    assert (await response.get_json())["rule"]["enabled"] is False
    response = await client.patch(f"{url}/toggle", headers=admin.headers)
    assert response.status_code == 200
    assert await response.get_json() == {"ok": True, "enabled": True}
    response = await client.patch(f"{url}/toggle", headers=admin.headers)
    assert await response.get_json() == {"ok": True, "enabled": False}
    response = await client.delete(url, headers=admin.headers)
    assert response.status_code == 200
    assert await response.get_json() == {"ok": True}
    assert (await (await client.get(RULES, headers=admin.headers)).get_json()) == {"rules": []}
    for method, path in (("put", url), ("patch", f"{url}/toggle"), ("delete", url)):
        kwargs = {"json": {"name": "x"}} if method == "put" else {}
        response = await getattr(client, method)(path, headers=admin.headers, **kwargs)
        assert response.status_code == 404


INVALID = [
    {"name": ""},
    {"name": "x" * 201},
    {"events": []},
    {"events": ["bad event"]},
    {"events": ["user.*.x"]},
    {"conditionLogic": "xor"},
    {"cadence": "weekly"},
    {"conditions": [{"field": "ip", "operator": "equals", "value": ["1.2.3.4"]}]},
    {"conditions": [{"field": "username", "operator": "between", "value": ["a"]}]},
    {"conditions": [{"field": "username", "operator": "equals", "value": "bob"}]},
    {"conditions": [{"field": "username", "operator": "equals", "value": []}]},
    {"conditions": [{"field": "username", "operator": "matches", "value": ["(unclosed"]}]},
    {"conditions": [{"field": "ipAddress", "operator": "in", "value": ["10.0.0.0/33"]}]},
    {"conditions": [{"field": "ipAddress", "operator": "not_in", "value": ["office"]}]},
    {"actions": [{"channel": "pager", "recipients": []}]},
    {"actions": [{"channel": "smtp", "recipients": ["no-such-user-or-role"]}]},
    {"actions": [{"channel": "smtp", "to": ["a@example.org"]}]},
    {"extra": True},
    {"enabled": 0},
    {"enabled": 1},
    {"enabled": "true"},
    {"enabled": "yes"},
    {"enabled": None},
]


async def test_invalid_rules_are_refused(client, admin):
    for changes in INVALID:
        response = await client.post(RULES, headers=admin.headers, json={**RULE, **changes})
        assert response.status_code == 400, changes
        assert (await response.get_json())["code"] == "invalid_input"
    assert (await (await client.get(RULES, headers=admin.headers)).get_json()) == {"rules": []}


async def test_invalid_updates_change_nothing(client, admin):
    rule = await create(client, admin)
    url = f"{RULES}/{rule['id']}"
    for body in (
        {},
        {"name": None},
        {"conditions": [{"field": "target", "operator": "matches", "value": ["[z-a]"]}]},
        {"unknown": 1},
        {"enabled": 0},
        {"enabled": "false"},
    ):
        response = await client.put(url, headers=admin.headers, json=body)
        assert response.status_code == 400, body
    listed = (await (await client.get(RULES, headers=admin.headers)).get_json())["rules"]
    assert listed == [rule]


async def test_smtp_recipients_may_be_user_ids_and_role_ids(client, admin, make_user, kernel):
    colleague = await make_user("colleague", email="colleague@example.org")
    async with kernel.db.session() as session:
        role = (await session.exec(select(Role).where(Role.name == "admin"))).one()
    rule = await create(
        client,
        admin,
        actions=[
            {"channel": "smtp", "recipients": [colleague.id, role.id, "x@example.org"]},
            {"channel": "telegram", "recipients": ["-1001", "42"]},
        ],
    )
    assert rule["actions"][0]["recipients"] == [colleague.id, role.id, "x@example.org"]


async def test_recipients_lists_users_and_roles(client, admin, make_user):
    await make_user("carol", email="carol@example.org")
    response = await client.get("/api/v1/notifications/recipients", headers=admin.headers)
    assert response.status_code == 200
    body = await response.get_json()
    carol = next(u for u in body["users"] if u["username"] == "carol")
    assert set(carol) == {"id", "username", "email"}
    assert carol["email"] == "carol@example.org"
    assert {"admin", "user"} <= {r["name"] for r in body["roles"]}
    assert all(set(r) == {"id", "name"} for r in body["roles"])


async def test_rule_routes_need_the_permission(client, admin, make_user):
    rule = await create(client, admin)
    user = await make_user("plain")
    url = f"{RULES}/{rule['id']}"
    calls = [
        ("get", RULES, {}),
        ("post", RULES, {"json": RULE}),
        ("put", url, {"json": {"name": "x"}}),
        ("patch", f"{url}/toggle", {}),
        ("delete", url, {}),
        ("get", "/api/v1/notifications/recipients", {}),
    ]
    for method, path, kwargs in calls:
        response = await getattr(client, method)(path, **kwargs)
        assert response.status_code == 401, (method, path)
        response = await getattr(client, method)(path, headers=user.headers, **kwargs)
        assert response.status_code == 403, (method, path)


async def test_a_replaced_database_brings_its_rules_into_the_matcher(client, admin, kernel):
    """After a restore (here: a row changed behind the service, then the kernel's
    reload), the pack's database_replaced hook re-reads the rules it matches against."""
    from hostgate_notifications.models import NotificationRule
    from hostgate_notifications.service import service

    rule = await create(client, admin)
    rules = service(kernel).rules
    assert rules.cache[rule["id"]].name == RULE["name"]
    async with kernel.db.session() as session:
        row = await session.get(NotificationRule, rule["id"])
        row.name = "restored name"
        session.add(row)
        session.add(NotificationRule(name="only in the restored copy", events=["user.*"]))
        await session.commit()
    assert rules.cache[rule["id"]].name == RULE["name"]  # the matcher's copy, until a reload
    await kernel.reload_state()
    names = {cached.name for cached in rules.cache.values()}
    assert names == {"restored name", "only in the restored copy"}
