"""/users and /roles: shapes, rules, the last manager, audit events."""

import pytest
from hostgate.errors import Conflict

from tests.services.identity.helpers import API, ISO, audit_entries, login_token


async def test_user_lifecycle(client, admin, kernel):
    response = await client.post(
        f"{API}/users",
        headers=admin.headers,
        json={
            "username": "newbie",
            "password": "long-enough",
            "displayName": "New Bie",
            "email": "newbie@example.com",
            "role": "user",
        },
    )
    assert response.status_code == 201
    created = await response.get_json()
    assert created == {
        "id": created["id"],
        "username": "newbie",
        "displayName": "New Bie",
        "email": "newbie@example.com",
        "role": "user",
        "failedLoginCount": 0,
        "lockedUntil": None,
        "lastLoginAt": None,
        "authProvider": "local",
        "suspended": False,
        "mustChangePassword": False,
    }
    await login_token(client, "newbie", "long-enough")

    listed = (await (await client.get(f"{API}/users", headers=admin.headers)).get_json())["users"]
    assert [u["username"] for u in listed] == ["admin", "newbie"]
    row = listed[1]
    assert ISO.match(row["createdAt"]) and ISO.match(row["lastLoginAt"])
    assert row["mfaEnabled"] is False

    response = await client.put(
        f"{API}/users/{created['id']}",
        headers=admin.headers,
        json={"displayName": "Renamed", "email": "", "role": "admin"},
    )
    assert response.status_code == 200 and await response.get_json() == {"success": True}
    listed = (await (await client.get(f"{API}/users", headers=admin.headers)).get_json())["users"]
    assert listed[1]["displayName"] == "Renamed" and listed[1]["email"] == ""
    assert listed[1]["role"] == "admin"
    updated = (await audit_entries(kernel, "user.updated"))[0]
    assert (
        updated.details["before"]["role"] == "user" and updated.details["after"]["role"] == "admin"
    )

    response = await client.delete(f"{API}/users/{created['id']}", headers=admin.headers)
    assert response.status_code == 200 and await response.get_json() == {"success": True}
    assert (
        await client.delete(f"{API}/users/{created['id']}", headers=admin.headers)
    ).status_code == 404
    events = [e.event_type for e in await audit_entries(kernel) if e.event_type.startswith("user.")]
    assert events == ["user.created", "user.updated", "user.deleted"]
    created_event = (await audit_entries(kernel, "user.created"))[0]
    assert created_event.user_id == admin.id and created_event.target == "newbie"


async def test_create_user_rules(client, admin, kernel):
    async def create(**body):
        payload = {"username": "x1", "password": "long-enough", **body}
        return await client.post(f"{API}/users", headers=admin.headers, json=payload)

    assert (await create(password="short")).status_code == 400
    assert (await create(role="no-such-role")).status_code == 404
    assert (await create(email="not-an-email")).status_code == 400
    assert (await create(unexpected=True)).status_code == 400
    assert (await create(username="")).status_code == 400
    # role by id works, and the response names the role
    roles = (await (await client.get(f"{API}/roles", headers=admin.headers)).get_json())["roles"]
    admin_role = next(r for r in roles if r["name"] == "admin")
    response = await create(role=admin_role["id"])
    assert response.status_code == 201 and (await response.get_json())["role"] == "admin"
    duplicate = await create(username="X1")
    assert duplicate.status_code == 409
    assert (await duplicate.get_json())["error"] == "Username already exists"
    default_role = await create(username="x2")
    assert (await default_role.get_json())["role"] == "user"


async def test_update_user_rules(client, admin, make_user):
    user = await make_user("target")
    bad_role = await client.put(
        f"{API}/users/{user.id}", headers=admin.headers, json={"role": "nope"}
    )
    assert bad_role.status_code == 404
    unknown_field = await client.put(
        f"{API}/users/{user.id}", headers=admin.headers, json={"username": "renamed"}
    )
    assert unknown_field.status_code == 400
    missing = await client.put(
        f"{API}/users/nope", headers=admin.headers, json={"displayName": "x"}
    )
    assert missing.status_code == 404


async def test_cannot_delete_yourself(client, admin):
    response = await client.delete(f"{API}/users/{admin.id}", headers=admin.headers)
    assert response.status_code == 403
    assert (await response.get_json())["error"] == "Cannot delete your own account"


async def test_last_manager_cannot_be_demoted_or_deleted(client, make_user):
    boss = await make_user("boss", permissions=["users.manage", "roles.manage"])
    nobody = await make_user("nobody", permissions=[])
    helper = await make_user("helper", role="role-boss")
    # deleting the other manager (a peer) is fine while boss remains
    assert (
        await client.delete(f"{API}/users/{helper.id}", headers=boss.headers)
    ).status_code == 200
    # boss is now the only holder: demoting boss would lock the instance out
    other = await make_user("other", role="role-boss")
    demote = await client.put(
        f"{API}/users/{other.id}", headers=boss.headers, json={"role": "role-nobody"}
    )
    assert demote.status_code == 200  # boss still holds both permissions
    self_demote = await client.put(
        f"{API}/users/{boss.id}", headers=boss.headers, json={"role": "role-nobody"}
    )
    assert self_demote.status_code == 409
    assert (await self_demote.get_json())["code"] == "last_manager"
    # removing the permissions from boss's role is refused the same way
    strip = await client.put(
        f"{API}/roles/{boss.role_id}", headers=boss.headers, json={"permissions": ["users.manage"]}
    )
    assert strip.status_code == 409
    # a second manager makes it possible
    await make_user("deputy", role="admin")
    assert (
        await client.put(
            f"{API}/users/{boss.id}", headers=boss.headers, json={"role": nobody.role_id}
        )
    ).status_code == 200


async def test_last_manager_cannot_be_deleted(client, make_user, kernel):
    boss = await make_user("boss2", role="admin")
    users_only = await make_user("usersonly", permissions=["users.manage"])
    # over the API the admin outranks the caller; the recovery CLI meets the last-manager rule
    response = await client.delete(f"{API}/users/{boss.id}", headers=users_only.headers)
    assert response.status_code == 403
    with pytest.raises(Conflict) as refused:
        await kernel.accounts.delete_user(boss.id, actor=None)
    assert refused.value.code == "last_manager"  # boss is the only one with roles.manage
    assert (await client.get(f"{API}/auth/me", headers=boss.headers)).status_code == 200


async def test_roles_list_and_permissions(client, admin, kernel):
    response = await client.get(f"{API}/roles", headers=admin.headers)
    roles = (await response.get_json())["roles"]
    assert [r["name"] for r in roles][:2] == ["admin", "user"]
    for role in roles:
        assert set(role) == {
            "id",
            "name",
            "description",
            "isBuiltin",
            "permissions",
            "createdAt",
            "updatedAt",
        }
        assert ISO.match(role["createdAt"]) and ISO.match(role["updatedAt"])
    assert set(roles[0]["permissions"]) == set(kernel.permission_names)
    groups = await (await client.get(f"{API}/roles/permissions", headers=admin.headers)).get_json()
    assert set(groups["permissionGroups"]) >= {
        "connections",
        "sessions",
        "users",
        "roles",
        "audit",
        "settings",
    }
    assert "users.manage" in groups["permissionGroups"]["users"]


async def test_custom_role_lifecycle(client, admin, make_user, kernel):
    response = await client.post(
        f"{API}/roles",
        headers=admin.headers,
        json={"name": "Auditor", "description": "reads logs", "permissions": ["audit.view_any"]},
    )
    assert response.status_code == 201
    role = await response.get_json()
    assert role["isBuiltin"] is False and role["permissions"] == ["audit.view_any"]

    dup = await client.post(f"{API}/roles", headers=admin.headers, json={"name": "auditor"})
    assert dup.status_code == 409
    unknown = await client.post(
        f"{API}/roles", headers=admin.headers, json={"name": "Bad", "permissions": ["nope.x"]}
    )
    assert unknown.status_code == 400 and "nope.x" in (await unknown.get_json())["error"]

    response = await client.put(
        f"{API}/roles/{role['id']}",
        headers=admin.headers,
        json={"name": "Auditors", "permissions": ["audit.view_any", "sessions.view_any"]},
    )
    assert response.status_code == 200
    updated = await response.get_json()
    assert updated["name"] == "Auditors"
    assert updated["permissions"] == ["sessions.view_any", "audit.view_any"]
    bad = await client.put(
        f"{API}/roles/{role['id']}", headers=admin.headers, json={"permissions": ["nope.x"]}
    )
    assert bad.status_code == 400

    # a user holding it blocks deletion
    user = await make_user("aud")
    await client.put(f"{API}/users/{user.id}", headers=admin.headers, json={"role": "Auditors"})
    blocked = await client.delete(f"{API}/roles/{role['id']}", headers=admin.headers)
    assert blocked.status_code == 409
    assert "1 user(s)" in (await blocked.get_json())["error"]
    await client.put(f"{API}/users/{user.id}", headers=admin.headers, json={"role": "user"})
    deleted = await client.delete(f"{API}/roles/{role['id']}", headers=admin.headers)
    assert deleted.status_code == 200 and await deleted.get_json() == {"success": True}
    assert (
        await client.delete(f"{API}/roles/{role['id']}", headers=admin.headers)
    ).status_code == 404
    types = [e.event_type for e in await audit_entries(kernel) if e.event_type.startswith("role.")]
    assert types == ["role.created", "role.updated", "role.deleted"]


async def test_builtin_roles_keep_name_and_description_and_reset(client, admin, kernel):
    roles = (await (await client.get(f"{API}/roles", headers=admin.headers)).get_json())["roles"]
    user_role = next(r for r in roles if r["name"] == "user")
    rename = await client.put(
        f"{API}/roles/{user_role['id']}", headers=admin.headers, json={"name": "people"}
    )
    assert rename.status_code == 409
    describe = await client.put(
        f"{API}/roles/{user_role['id']}", headers=admin.headers, json={"description": "x"}
    )
    assert describe.status_code == 409
    # sending the unchanged name with new permissions is fine
    changed = await client.put(
        f"{API}/roles/user",
        headers=admin.headers,
        json={"name": "user", "permissions": ["connections.create"]},
    )
    assert changed.status_code == 200
    assert (await changed.get_json())["permissions"] == ["connections.create"]
    delete = await client.delete(f"{API}/roles/{user_role['id']}", headers=admin.headers)
    assert delete.status_code == 409
    reset = await client.post(f"{API}/roles/{user_role['id']}/reset", headers=admin.headers)
    assert reset.status_code == 200
    assert (await reset.get_json())["permissions"] == user_role["permissions"]
    assert (await audit_entries(kernel, "role.reset"))[0].details["permissionsAdded"]

    custom = await (
        await client.post(f"{API}/roles", headers=admin.headers, json={"name": "Temp"})
    ).get_json()
    not_builtin = await client.post(f"{API}/roles/{custom['id']}/reset", headers=admin.headers)
    assert not_builtin.status_code == 409


async def test_permission_changes_apply_on_the_next_request(client, admin, make_user):
    user = await make_user("live")
    assert (await client.get(f"{API}/users", headers=user.headers)).status_code == 403
    await client.put(
        f"{API}/roles/user",
        headers=admin.headers,
        json={"permissions": ["users.manage", "connections.create"]},
    )
    assert (await client.get(f"{API}/users", headers=user.headers)).status_code == 200
