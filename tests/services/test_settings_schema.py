"""``GET /settings/schema``: every setting's type, bounds and help, grouped, packs' included."""

from __future__ import annotations

import pytest
from hostgate import SettingSpec, hookimpl
from hostgate.services.settings import setting_group


class WidgetPack:
    """A pack with settings of its own: a family (widgets.colour_*) and a named group."""

    @hookimpl
    def register_settings(self) -> list[SettingSpec]:
        return [
            SettingSpec("widgets.size", int, 3, minimum=1, maximum=9, description="How big"),
            SettingSpec("widgets.token", str, "", secret=True, description="API token"),
            SettingSpec("widgets.mode", str, "fast", choices=("fast", "slow")),
            *(
                SettingSpec(f"widgets.colour_{n}", str, "red", description=f"Colour {n}")
                for n in ("a", "b", "c", "d")
            ),
            SettingSpec("gadgets.on", bool, False, group="widgets"),
        ]


@pytest.fixture
def plugins() -> list[object]:
    return [WidgetPack()]


async def test_schema_lists_every_key_with_type_bounds_and_help(client, admin, kernel, make_user):
    response = await client.get("/api/v1/settings/schema", headers=admin.headers)
    assert response.status_code == 200
    entries = (await response.get_json())["settings"]
    by_key = {e["key"]: e for e in entries}
    # exactly the registry, kernel and packs alike, in key order
    assert list(by_key) == sorted(kernel.settings.specs)

    size = by_key["widgets.size"]
    assert size == {
        "key": "widgets.size",
        "group": "widgets",
        "pack": size["pack"],
        "type": "integer",
        "default": 3,
        "description": "How big",
        "nullable": False,
        "secret": False,
        "public": False,
        "readonly": False,
        "minimum": 1,
        "maximum": 9,
        "choices": None,
        "maxLength": None,
        "checked": False,
    }
    assert size["pack"] != "kernel"
    assert by_key["widgets.token"]["secret"] is True
    assert by_key["widgets.token"]["maxLength"] == 4096
    assert by_key["widgets.mode"]["choices"] == ["fast", "slow"]
    # a family of four or more keys gets its own group; a pack may name one
    assert {by_key[f"widgets.colour_{n}"]["group"] for n in "abcd"} == {"widgets.colour"}
    assert by_key["gadgets.on"]["group"] == "widgets"

    # the kernel's own
    name = by_key["app.name"]
    assert (name["pack"], name["group"], name["type"], name["public"]) == (
        "kernel",
        "app",
        "string",
        True,
    )
    assert by_key["ssh.font_size"]["type"] == "number"
    assert by_key["system.insecure_key"]["readonly"] is True
    assert by_key["app.logo"]["nullable"] is True
    assert by_key["network.allow"]["checked"] is True

    nobody = await make_user("nobody", permissions=["users.manage"])
    refused = await client.get("/api/v1/settings/schema", headers=nobody.headers)
    assert refused.status_code == 403
    anonymous = await client.get("/api/v1/settings/schema")
    assert anonymous.status_code == 401


def test_setting_group_rule():
    keys = [
        "auth.ldap_url",
        "auth.ldap_dn",
        "auth.ldap_base",
        "auth.ldap_tls",
        "auth.local_enabled",
    ]
    assert setting_group("auth.ldap_url", keys) == "auth.ldap"
    assert setting_group("auth.local_enabled", keys) == "auth"
    assert setting_group("app.name", keys) == "app"
    assert setting_group("plain", keys) == "plain"
    assert setting_group("a._x", ["a._x"] * 5) == "a"
