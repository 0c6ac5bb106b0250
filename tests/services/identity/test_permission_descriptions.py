"""``GET /roles/permissions`` says what each permission allows (the role editor shows it)."""

from __future__ import annotations

import pytest
from hostgate.descriptors import ProtocolSpec
from hostgate.markers import hookimpl
from hostgate.permissions import KERNEL_PERMISSIONS, all_names

from tests.services.identity.helpers import API


class ReportsPack:
    """A pack with a described group, an undescribed name and a protocol."""

    @hookimpl
    def register_protocols(self) -> list[ProtocolSpec]:
        return [ProtocolSpec("gopher", 70, title="Gopher")]

    @hookimpl
    def register_permissions(self) -> dict[str, object]:
        return {
            "reports": {"reports.view": "Read the weekly reports", "reports.send": " "},
            "connections": ["connections.use_gopher", "connections.pin"],
        }


@pytest.fixture
def plugins() -> list[object]:
    return [ReportsPack()]


async def test_every_kernel_permission_and_pack_permission_is_described(client, admin, make_user):
    response = await client.get(f"{API}/roles/permissions", headers=admin.headers)
    assert response.status_code == 200
    body = await response.get_json()
    groups, described = body["permissionGroups"], body["descriptions"]
    # a mapping group still lists its names, in order
    assert groups["reports"] == ["reports.view", "reports.send"]
    assert "connections.pin" in groups["connections"]
    for name in all_names(KERNEL_PERMISSIONS):
        assert described[name], name
    assert described["reports.view"] == "Read the weekly reports"
    assert described["connections.use_gopher"] == "Open Gopher connections"
    # a blank description or a plain list entry is left out, never invented
    assert "reports.send" not in described and "connections.pin" not in described
    # only names that exist are described
    assert set(described) <= {n for names in groups.values() for n in names}

    # the new names are real permissions: a role can hold them, admin has them
    role = await client.post(
        f"{API}/roles",
        headers=admin.headers,
        json={"name": "Reporter", "permissions": ["reports.view"]},
    )
    assert role.status_code == 201

    # still guarded by roles.manage
    nobody = await make_user("nobody", permissions=["users.manage"])
    refused = await client.get(f"{API}/roles/permissions", headers=nobody.headers)
    assert refused.status_code == 403
