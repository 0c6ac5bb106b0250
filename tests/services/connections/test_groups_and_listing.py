"""GET /connections (tree, ungrouped, shared) and group management."""

from __future__ import annotations

from tests.services.connections.support import audit_entries, create, get_json, send


async def make_group(client, user, name, parent=None, sort=None, expect=201):
    body = {"name": name}
    if parent is not None:
        body["parentId"] = parent
    if sort is not None:
        body["sortOrder"] = sort
    return await send(client, "POST", "/connections/groups", user, body, expect=expect)


async def test_listing_is_a_tree_ordered_by_sort_order_then_name(client, make_user):
    alice = await make_user("alice")
    zeta = await make_group(client, alice, "zeta", sort=0)
    alpha = await make_group(client, alice, "Alpha", sort=0)
    first = await make_group(client, alice, "last-by-name", sort=-1)
    child = await make_group(client, alice, "child", parent=alpha["id"])
    assert child == {"id": child["id"], "name": "child", "parentId": alpha["id"], "sortOrder": 0}
    in_child = await create(client, alice, name="b-conn", groupId=child["id"])
    in_child2 = await create(client, alice, name="A-conn", groupId=child["id"])
    top = await create(client, alice, name="top", sortOrder=5)
    top2 = await create(client, alice, name="top-first", sortOrder=1)

    listing = await get_json(client, "/connections", alice)
    assert [g["name"] for g in listing["groups"]] == ["last-by-name", "Alpha", "zeta"]
    assert listing["groups"][0]["id"] == first["id"]
    alpha_node = listing["groups"][1]
    assert set(alpha_node) == {"id", "name", "parentId", "sortOrder", "children", "connections"}
    assert alpha_node["connections"] == []
    child_node = alpha_node["children"][0]
    assert child_node["parentId"] == alpha["id"]
    assert [c["id"] for c in child_node["connections"]] == [in_child2["id"], in_child["id"]]
    item = child_node["connections"][0]
    assert {"id", "name", "protocol", "host", "port", "tags", "groupId", "isShared"} <= set(item)
    assert item["groupId"] == child["id"] and item["isShared"] is False
    assert [c["id"] for c in listing["ungrouped"]] == [top2["id"], top["id"]]
    assert listing["sharedConnections"] == []
    assert listing["groups"][2]["id"] == zeta["id"]


async def test_other_users_connections_and_groups_are_never_listed(client, make_user):
    alice = await make_user("alice")
    bob = await make_user("bob")
    group = await make_group(client, alice, "mine")
    await create(client, alice, name="secret-box", groupId=group["id"])
    listing = await get_json(client, "/connections", bob)
    assert listing == {"groups": [], "ungrouped": [], "sharedConnections": []}
    await get_json(client, "/connections?scope=all", bob, expect=403)


async def test_scope_all_shows_everyone_elses_connections_to_edit_any(client, make_user, admin):
    alice = await make_user("alice")
    theirs = await create(client, alice, name="theirs")
    listing = await get_json(client, "/connections?scope=all", admin)
    assert [c["id"] for c in listing["otherConnections"]] == [theirs["id"]]
    await get_json(client, "/connections?scope=everything", admin, expect=400)


async def test_rename_move_and_cycles(client, make_user, kernel):
    alice = await make_user("alice")
    a = await make_group(client, alice, "a")
    b = await make_group(client, alice, "b", parent=a["id"])
    c = await make_group(client, alice, "c", parent=b["id"])
    body = await send(client, "PUT", f"/connections/groups/{b['id']}", alice, {"name": "B2"})
    assert body["group"]["name"] == "B2" and body["group"]["parentId"] == a["id"]
    for parent in (a["id"], c["id"]):
        error = await send(
            client, "PUT", f"/connections/groups/{a['id']}", alice, {"parentId": parent}, expect=409
        )
        assert "itself" in error["error"]
    await send(client, "PUT", f"/connections/groups/{c['id']}", alice, {"parentId": None})
    listing = await get_json(client, "/connections", alice)
    assert sorted(g["name"] for g in listing["groups"]) == ["a", "c"]
    entry = (await audit_entries(kernel, "group.updated"))[-1]
    assert entry.details["changes"]["parentId"] == {"from": b["id"], "to": None}


async def test_groups_of_other_users_are_out_of_reach(client, make_user):
    alice = await make_user("alice")
    bob = await make_user("bob")
    mine = await make_group(client, alice, "mine")
    path = f"/connections/groups/{mine['id']}"
    await send(client, "PUT", path, bob, {"name": "x"}, expect=404)
    await send(client, "DELETE", path, bob, expect=404)
    await make_group(client, bob, "under-alice", parent=mine["id"], expect=404)
    await create(client, bob, groupId=mine["id"], expect=404)


async def test_deleting_a_group_moves_its_contents_to_the_parent(client, make_user, kernel):
    alice = await make_user("alice")
    top = await make_group(client, alice, "top")
    middle = await make_group(client, alice, "middle", parent=top["id"])
    leaf = await make_group(client, alice, "leaf", parent=middle["id"])
    in_middle = await create(client, alice, name="in-middle", groupId=middle["id"])
    in_leaf = await create(client, alice, name="in-leaf", groupId=leaf["id"])

    body = await send(client, "DELETE", f"/connections/groups/{middle['id']}", alice)
    assert body == {"success": True, "movedTo": top["id"], "movedConnections": 1, "movedGroups": 1}
    listing = await get_json(client, "/connections", alice)
    top_node = listing["groups"][0]
    assert [c["id"] for c in top_node["connections"]] == [in_middle["id"]]
    assert [g["id"] for g in top_node["children"]] == [leaf["id"]]
    assert [c["id"] for c in top_node["children"][0]["connections"]] == [in_leaf["id"]]

    await send(client, "DELETE", f"/connections/groups/{top['id']}", alice)
    listing = await get_json(client, "/connections", alice)
    assert [g["id"] for g in listing["groups"]] == [leaf["id"]]
    assert [c["id"] for c in listing["ungrouped"]] == [in_middle["id"]]
    entry = (await audit_entries(kernel, "group.deleted"))[0]
    assert entry.details["movedConnections"] == 1 and entry.details["movedTo"] == top["id"]


async def test_reorder_groups_and_connections_all_or_nothing(client, make_user):
    alice = await make_user("alice")
    bob = await make_user("bob")
    g1 = await make_group(client, alice, "g1")
    g2 = await make_group(client, alice, "g2")
    items = {"items": [{"id": g1["id"], "sortOrder": 2}, {"id": g2["id"], "sortOrder": 1}]}
    await send(client, "PUT", "/connections/groups/reorder", alice, items)
    listing = await get_json(client, "/connections", alice)
    assert [g["id"] for g in listing["groups"]] == [g2["id"], g1["id"]]

    c1 = await create(client, alice, name="c1")
    c2 = await create(client, alice, name="c2")
    theirs = await create(client, bob, name="theirs")
    bad = {"items": [{"id": c2["id"], "sortOrder": -1}, {"id": theirs["id"], "sortOrder": 0}]}
    await send(client, "PUT", "/connections/reorder", alice, bad, expect=404)
    listing = await get_json(client, "/connections", alice)
    assert [c["id"] for c in listing["ungrouped"]] == [c1["id"], c2["id"]]
    good = {"items": [{"id": c2["id"], "sortOrder": -1}]}
    await send(client, "PUT", "/connections/reorder", alice, good)
    listing = await get_json(client, "/connections", alice)
    assert [c["id"] for c in listing["ungrouped"]] == [c2["id"], c1["id"]]


async def test_group_input_is_validated(client, make_user):
    alice = await make_user("alice")
    await make_group(client, alice, "", expect=400)
    await make_group(client, alice, "x" * 201, expect=400)
    await send(client, "POST", "/connections/groups", alice, {"name": "a", "colour": 1}, expect=400)
    g = await make_group(client, alice, "ok")
    await send(client, "PUT", f"/connections/groups/{g['id']}", alice, {"name": None}, expect=400)
    await send(
        client,
        "PUT",
        "/connections/groups/reorder",
        alice,
        {"items": [{"id": g["id"]}]},
        expect=400,
    )
