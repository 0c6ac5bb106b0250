"""``GET /system/plugins``: the running instance's packs, as ``hostgate plugins`` lists them."""

from __future__ import annotations

import types

from hostgate import ProtocolSpec, SettingSpec, hookimpl
from hostgate.app import create_app

PASSWORD = "a long enough password"


def make_plugin(name, **hooks):
    module = types.ModuleType(name)
    for hook_name, function in hooks.items():
        setattr(module, hook_name, hookimpl(function))
    return module


class EntryPoint:
    def __init__(self, name, version, load):
        self.name = name
        self.dist = types.SimpleNamespace(name=f"hostgate-{name}", version=version)
        self._load = load

    def load(self):
        return self._load()


def good():
    return make_plugin(
        "good_mod",
        register_protocols=lambda: [ProtocolSpec("goodproto", 7000, title="Good")],
        register_settings=lambda: [SettingSpec("good.level", int, 1)],
        register_permissions=lambda: {"connections": ["connections.use_goodproto"]},
    )


def broken():
    raise ImportError("No module named 'missing_dependency'")


async def test_plugins_route_lists_loaded_failed_and_disabled_packs(monkeypatch, config):
    entry_points = [
        EntryPoint("good", "1.2.3", good),
        EntryPoint("broken", "0.1", broken),
        EntryPoint("quiet", "2.0", good),
    ]
    monkeypatch.setattr("hostgate.plugins._entry_points", lambda: entry_points)
    app = create_app(config.with_overrides(load_entry_points=True, disabled_plugins=("quiet",)))
    async with app.test_app() as test_app:
        client = test_app.test_client()
        setup = await client.post(
            "/api/v1/auth/setup", json={"username": "root", "password": PASSWORD}
        )
        token = (await setup.get_json())["token"]
        headers = {"Authorization": f"Bearer {token}"}
        response = await client.get("/api/v1/system/plugins", headers=headers)
        assert response.status_code == 200
        packs = {p["name"]: p for p in (await response.get_json())["plugins"]}
        assert list(packs) == ["broken", "good", "quiet"]
        assert packs["good"] == {
            "name": "good",
            "distribution": "hostgate-good",
            "version": "1.2.3",
            "state": "loaded",
            "reason": "",
            "provides": packs["good"]["provides"],
            "settings": ["good.level"],
            "permissions": ["connections.use_goodproto"],
        }
        assert "protocols:goodproto" in packs["good"]["provides"]
        assert packs["broken"]["state"] == "failed"
        assert "missing_dependency" in packs["broken"]["reason"]
        assert packs["quiet"]["state"] == "disabled"

        # settings.manage only
        created = await client.post(
            "/api/v1/users",
            headers=headers,
            json={"username": "plain", "password": PASSWORD, "role": "user"},
        )
        assert created.status_code == 201
        login = await client.post(
            "/api/v1/auth/login", json={"username": "plain", "password": PASSWORD}
        )
        plain = {"Authorization": f"Bearer {(await login.get_json())['token']}"}
        assert (await client.get("/api/v1/system/plugins", headers=plain)).status_code == 403
        anonymous = test_app.test_client()
        assert (await anonymous.get("/api/v1/system/plugins")).status_code == 401
