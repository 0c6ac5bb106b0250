"""``/connections/groups`` and re-ordering: each user's own tree of connection folders."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from ..db.models.connections import ConnectionGroup
from ..errors import InvalidInput
from ..guards import app_kernel, authenticated, current_caller
from ..openapi import Success, Unset, answers
from ..services.connections.connection_input import check_sort_order
from .fields import Name, SortOrder

blueprint = Blueprint("connection_groups", __name__)


class GroupCreate(BaseModel):
    """``POST /connections/groups``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: Name
    parentId: str | None = None  # noqa: N815 - wire name
    sortOrder: SortOrder | None = None  # noqa: N815


class GroupUpdate(BaseModel):
    """``PUT /connections/groups/:id``: rename, move (``parentId`` null = top level), re-sort."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: Name | Unset = None
    parentId: str | None = None  # noqa: N815
    sortOrder: SortOrder | Unset = None  # noqa: N815


class OrderItem(BaseModel):
    """One ``{id, sortOrder}``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str = Field(min_length=1, max_length=64)
    sortOrder: SortOrder  # noqa: N815


class ReorderBody(BaseModel):
    """``{items: [{id, sortOrder}]}``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    items: list[OrderItem] = Field(max_length=2000)


class Group(TypedDict):
    """A group."""

    id: str
    name: str
    parentId: str | None
    sortOrder: int


class GroupUpdated(TypedDict):
    """The group as changed."""

    success: bool
    group: Group


class GroupDeleted(TypedDict):
    """Where the group's contents went."""

    success: bool
    movedTo: str | None
    movedConnections: int
    movedGroups: int


def group_json(group: ConnectionGroup) -> dict[str, Any]:
    """A group (SPEC §2)."""
    return {
        "id": group.id,
        "name": group.name,
        "parentId": group.parent_id,
        "sortOrder": group.sort_order,
    }


def _items(data: ReorderBody) -> list[tuple[str, int]]:
    return [(item.id, check_sort_order(item.sortOrder)) for item in data.items]


@blueprint.post("/connections/groups")
@authenticated
@validate_request(GroupCreate)
@tag(["connections"])
@answers(Group, status=201, errors=(404, 409))
async def create_group(data: GroupCreate) -> tuple[dict[str, Any], int]:
    """Create a group of the caller's (201)."""
    group = await app_kernel().connections.groups.create(
        current_caller(), data.name, data.parentId, data.sortOrder
    )
    return group_json(group), 201


@blueprint.put("/connections/groups/reorder")
@authenticated
@validate_request(ReorderBody)
@tag(["connections"])
@answers(Success, errors=(404,))
async def reorder_groups(data: ReorderBody) -> Success:
    """Set the sort order of several groups at once (all or nothing)."""
    await app_kernel().connections.groups.reorder(current_caller(), _items(data))
    return {"success": True}


@blueprint.put("/connections/groups/<group_id>")
@authenticated
@validate_request(GroupUpdate)
@tag(["connections"])
@answers(GroupUpdated, errors=(409,))
async def update_group(group_id: str, data: GroupUpdate) -> dict[str, Any]:
    """Rename, move or re-sort a group; moving it below itself is refused."""
    changes = data.model_dump(exclude_unset=True)
    if changes.get("name", "") is None or ("sortOrder" in changes and changes["sortOrder"] is None):
        raise InvalidInput("name and sortOrder may not be null")
    group = await app_kernel().connections.groups.update(current_caller(), group_id, changes)
    return {"success": True, "group": group_json(group)}


@blueprint.delete("/connections/groups/<group_id>")
@authenticated
@tag(["connections"])
@answers(GroupDeleted)
async def delete_group(group_id: str) -> GroupDeleted:
    """Delete a group; its connections and sub-groups move to its parent."""
    result = await app_kernel().connections.groups.delete(current_caller(), group_id)
    return {
        "success": True,
        "movedTo": result.group.parent_id,
        "movedConnections": result.moved_connections,
        "movedGroups": result.moved_groups,
    }


@blueprint.put("/connections/reorder")
@authenticated
@validate_request(ReorderBody)
@tag(["connections"])
@answers(Success, errors=(404,))
async def reorder_connections(data: ReorderBody) -> Success:
    """Set the sort order of several connections (each must be editable; all or nothing)."""
    await app_kernel().connections.reorder(current_caller(), _items(data))
    return {"success": True}
