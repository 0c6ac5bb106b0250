"""The connection tree: drag and drop to reorder and to move connections and groups between
groups, the same by keyboard through each row's menu, and group management; checked in
what the server stores (groupId, parentId, sortOrder)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from testsupport.gateway import ADMIN_PASSWORD

from .conftest import Gateway, Screens, signed_in

pytestmark = pytest.mark.peer("chromium")


def post(gateway: Gateway, token: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = gateway.api("POST", path, token, json=body)
    assert response.status_code in {200, 201}, response.text
    return response.json()  # type: ignore[no-any-return]


@pytest.fixture
def ids(gateway: Gateway, admin_token: str) -> dict[str, str]:
    """Lab (web-1, web-2) > Rack 2 (db-1); laptop and nas at the top level."""
    lab = post(gateway, admin_token, "/connections/groups", {"name": "Lab"})["id"]
    rack = post(gateway, admin_token, "/connections/groups", {"name": "Rack 2", "parentId": lab})
    found = {"Lab": lab, "Rack 2": rack["id"]}
    for name, group in (("web-1", lab), ("web-2", lab), ("db-1", rack["id"])):
        body = {"name": name, "protocol": "ssh", "host": "10.0.0.1", "groupId": group}
        found[name] = post(gateway, admin_token, "/connections", body)["id"]
    for name in ("laptop", "nas"):
        body = {"name": name, "protocol": "ssh", "host": "10.0.0.2"}
        found[name] = post(gateway, admin_token, "/connections", body)["id"]
    return found


def listing(gateway: Gateway, token: str) -> dict[str, Any]:
    response = gateway.api("GET", "/connections", token)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def group_node(tree: dict[str, Any], name: str) -> dict[str, Any]:
    def walk(groups: list[dict[str, Any]]) -> dict[str, Any] | None:
        for group in groups:
            if group["name"] == name:
                return group
            found = walk(group["children"])
            if found:
                return found
        return None

    found = walk(tree["groups"])
    assert found is not None, f"no group {name}"
    return found


def names_in(tree: dict[str, Any], group: str | None) -> list[str]:
    """Connection names of a group (None: ungrouped), in the server's order."""
    items = tree["ungrouped"] if group is None else group_node(tree, group)["connections"]
    return [c["name"] for c in items]


def drag(page: Any, source: Any, target: Any, y: float = 0.5) -> None:
    """A real HTML5 drag in Chromium: press on the source, move, release at ``y`` of the target."""
    source.hover()
    page.mouse.down()
    box = source.bounding_box()
    page.mouse.move(box["x"] + 8, box["y"] + box["height"] / 2 + 6)  # starts the drag
    target.wait_for()
    spot = target.bounding_box()
    x, top = spot["x"] + spot["width"] / 3, spot["y"] + spot["height"] * y
    page.mouse.move(x, top, steps=4)
    page.mouse.up()


def test_drag_to_reorder_and_move_between_groups(
    page: Any, gateway: Gateway, admin_token: str, ids: dict[str, str], screens: Screens
) -> None:
    signed_in(page, gateway)
    nav = page.get_by_role("navigation", name="Connections")
    status = nav.get_by_role("status")

    def link(name: str) -> Any:
        return nav.get_by_role("link", name=name)

    def group(name: str) -> Any:
        return nav.get_by_role("button", name=name).filter(has_text=name).first

    # a connection onto a group: into it, last
    drag(page, link("laptop"), group("Lab"))
    expect(status).to_have_text("Moved laptop to Lab.")
    tree = listing(gateway, admin_token)
    assert names_in(tree, "Lab") == ["web-1", "web-2", "laptop"]
    assert names_in(tree, None) == ["nas"]

    # onto the top half of a sibling: before it (the whole group renumbered)
    drag(page, link("laptop"), link("web-1"), y=0.2)
    expect(status).to_have_text("Moved laptop.")
    tree = listing(gateway, admin_token)
    assert names_in(tree, "Lab") == ["laptop", "web-1", "web-2"]
    assert [c["sortOrder"] for c in group_node(tree, "Lab")["connections"]] == [0, 1, 2]

    # a connection of a sub-group onto the bottom half of a top-level one
    drag(page, link("db-1"), link("nas"), y=0.8)
    expect(status).to_have_text("Moved db-1 to the top level.")
    assert names_in(listing(gateway, admin_token), None) == ["nas", "db-1"]

    # a group into the drop zone under the tree: top level, last
    drag(page, group("Rack 2"), nav.get_by_text("Drop here to move it to the top level"))
    expect(status).to_have_text("Moved Rack 2 to the top level.")
    tree = listing(gateway, admin_token)
    assert [g["name"] for g in tree["groups"]] == ["Lab", "Rack 2"]
    assert group_node(tree, "Rack 2")["parentId"] is None

    # a group onto the middle of another: nested in it; never into itself
    drag(page, group("Lab"), group("Rack 2"))
    expect(status).to_have_text("Moved Lab to Rack 2.")
    tree = listing(gateway, admin_token)
    assert group_node(tree, "Lab")["parentId"] == ids["Rack 2"]
    drag(page, group("Rack 2"), group("Lab"))  # refused in the page, nothing sent
    expect(status).to_have_text("Moved Lab to Rack 2.")
    assert group_node(listing(gateway, admin_token), "Rack 2")["parentId"] is None
    screens.check(page, "tree")


def test_move_menu_and_group_management_by_keyboard(
    page: Any, gateway: Gateway, admin_token: str, ids: dict[str, str], screens: Screens
) -> None:
    # a connection bob shares with admin: in the tree, but not admin's to arrange
    post(gateway, admin_token, "/users", {"username": "bob", "password": ADMIN_PASSWORD})
    bob = httpx.post(
        f"{gateway.url}/api/v1/auth/login", json={"username": "bob", "password": ADMIN_PASSWORD}
    ).json()["token"]
    jump = post(gateway, bob, "/connections", {"name": "jump", "protocol": "ssh", "host": "j"})
    shared = gateway.api(
        "PUT",
        f"/connections/{jump['id']}/shares",
        bob,
        json={"shares": [{"shareType": "user", "targetId": "admin"}]},
    )
    assert shared.status_code == 200, shared.text

    signed_in(page, gateway)
    nav = page.get_by_role("navigation", name="Connections")
    status = nav.get_by_role("status")
    expect(nav.get_by_role("link", name="jump")).to_be_visible()
    expect(nav.get_by_label("Actions for jump")).to_have_count(0)

    def menu(label: str, choice: str) -> None:
        summary = nav.get_by_label(label, exact=True)
        summary.focus()
        page.keyboard.press("Enter")
        item = nav.get_by_role("button", name=choice, exact=True)
        expect(item).to_be_visible()
        item.focus()
        page.keyboard.press("Enter")

    # Move to…: a list of every group by its path
    menu("Actions for laptop", "Move to…")
    dialog = page.get_by_role("dialog", name="Move laptop")
    expect(dialog).to_be_visible()
    screens.check(page, "tree-move")
    dialog.get_by_label("Move to").select_option(label="Lab / Rack 2")
    dialog.get_by_role("button", name="Move").focus()
    page.keyboard.press("Enter")
    expect(status).to_have_text("Moved laptop to Rack 2.")
    assert names_in(listing(gateway, admin_token), "Rack 2") == ["db-1", "laptop"]

    # Move up / Move down
    menu("Actions for laptop", "Move up")
    expect(status).to_have_text("Moved laptop.")
    assert names_in(listing(gateway, admin_token), "Rack 2") == ["laptop", "db-1"]

    # a new group at the top level, one inside it, renamed, then deleted
    nav.get_by_role("button", name="New group", exact=True).click()
    form = page.get_by_role("dialog", name="New group")
    form.get_by_role("button", name="Create group").click()
    expect(form.get_by_text("Give the group a name.")).to_be_visible()
    form.get_by_label("Group name").fill("Edge")
    page.keyboard.press("Enter")
    expect(status).to_have_text("Created the group Edge.")
    edge = group_node(listing(gateway, admin_token), "Edge")
    assert edge["parentId"] is None

    menu("Actions for group Edge", "New group inside")
    inner = page.get_by_role("dialog", name="New group in Edge")
    inner.get_by_label("Group name").fill("Edge 2")
    page.keyboard.press("Enter")
    expect(status).to_have_text("Created the group Edge 2.")
    assert group_node(listing(gateway, admin_token), "Edge 2")["parentId"] == edge["id"]

    menu("Actions for group Edge", "Rename")
    rename = page.get_by_role("dialog", name="Rename the group Edge")
    expect(rename.get_by_label("Group name")).to_have_value("Edge")
    rename.get_by_label("Group name").fill("Edge sites")
    page.keyboard.press("Enter")
    expect(status).to_have_text("Renamed the group to Edge sites.")

    menu("Actions for group Rack 2", "Move to…")
    moving = page.get_by_role("dialog", name="Move Rack 2")
    options = moving.get_by_label("Move to").locator("option").all_inner_texts()
    assert "Lab / Rack 2" not in options and "Top level (no group)" in options
    moving.get_by_label("Move to").select_option(label="Edge sites / Edge 2")
    moving.get_by_role("button", name="Move").click()
    expect(status).to_have_text("Moved Rack 2 to Edge 2.")

    menu("Actions for group Edge sites", "Delete group")
    page.get_by_role("dialog", name="Delete the group Edge sites?").get_by_role(
        "button", name="Delete group"
    ).click()
    expect(status).to_contain_text("Deleted the group Edge sites")
    tree = listing(gateway, admin_token)
    assert group_node(tree, "Edge 2")["parentId"] is None  # moved up, not deleted
    assert names_in(tree, "Rack 2") == ["laptop", "db-1"]
    assert {g["name"] for g in tree["groups"]} == {"Lab", "Edge 2"}
