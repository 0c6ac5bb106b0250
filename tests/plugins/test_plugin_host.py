"""Plugin loading: discovery, duplicates, failures, disabling, lifecycle and events."""

import sys
import types

import pytest
from hostgate import ProtocolSpec, SettingSpec, hookimpl
from hostgate.app import create_app, kernel_of
from hostgate.plugins import PluginConflict, PluginHost


def make_plugin(name, **hooks):
    module = types.ModuleType(name)
    for hook_name, function in hooks.items():
        setattr(module, hook_name, hookimpl(function))
    return module


def test_duplicate_protocol_names_both_plugins(config):
    one = make_plugin("pack_one", register_protocols=lambda: [ProtocolSpec("dup", 1)])
    two = make_plugin("pack_two", register_protocols=lambda: [ProtocolSpec("dup", 2)])
    with pytest.raises(PluginConflict) as info:
        create_app(config, plugins=[one, two])
    assert "pack_one" in str(info.value) and "pack_two" in str(info.value)


def test_duplicate_setting_key_is_refused(config):
    clash = make_plugin("clash", register_settings=lambda: [SettingSpec("app.name", str, "x")])
    with pytest.raises(PluginConflict) as info:
        create_app(config, plugins=[clash])
    assert "hostgate.builtin" in str(info.value) and "clash" in str(info.value)


def test_misspelled_hook_is_caught(config):
    wrong = make_plugin("typo", register_protocol=lambda: [])
    with pytest.raises(Exception, match="register_protocol"):
        create_app(config, plugins=[wrong])


async def test_lifecycle_and_event_hooks(config):
    calls = []

    async def startup(kernel):
        calls.append("startup")

    def shutdown(kernel):
        calls.append("shutdown")

    def event(event, kernel):
        calls.append(event.event_type)

    def broken(event, kernel):
        raise RuntimeError("subscriber failure must not reach the caller")

    watcher = make_plugin("watcher", startup=startup, shutdown=shutdown, event=event)
    breaker = make_plugin("breaker", event=broken)
    app = create_app(config, plugins=[watcher, breaker])
    async with app.test_app():
        kernel = kernel_of(app)
        await kernel.audit.record("test.happened", target="x")
    assert calls == ["startup", "test.happened", "shutdown"]


async def test_plugin_permissions_reach_builtin_roles(config):
    pack = make_plugin(
        "permpack", register_permissions=lambda: {"connections": ["connections.use_zap"]}
    )
    app = create_app(config, plugins=[pack])
    async with app.test_app():
        kernel = kernel_of(app)
        assert "connections.use_zap" in kernel.permission_groups["connections"]
        from hostgate.db.models.identity import Role
        from sqlmodel import select

        async with kernel.db.session() as session:
            roles = {r.name: r for r in (await session.exec(select(Role))).all()}
        assert "connections.use_zap" in roles["admin"].permissions
        assert "connections.use_zap" in roles["user"].permissions
        assert "users.manage" not in roles["user"].permissions


def test_failing_entry_point_is_reported_not_fatal(monkeypatch):
    class BrokenEntryPoint:
        name = "broken"
        dist = types.SimpleNamespace(name="hostgate-broken", version="9.9")

        def load(self):
            raise ImportError("No module named 'missing_dependency'")

    monkeypatch.setattr("hostgate.plugins._entry_points", lambda: [BrokenEntryPoint()])
    host = PluginHost()
    host.load(entry_points=True)
    (pack,) = host.packs
    assert pack.state == "failed" and "missing_dependency" in pack.reason


def test_pack_whose_hook_raises_is_failed_not_fatal(monkeypatch, config):
    def register_protocols():
        from hostgate_missing import routes  # noqa: F401  (the lazy import a broken pack does)

        return []

    class EntryPoint:
        name = "lazy"
        dist = types.SimpleNamespace(name="hostgate-lazy", version="1.0")

        def load(self):
            return make_plugin("lazy_mod", register_protocols=register_protocols)

    monkeypatch.setattr("hostgate.plugins._entry_points", lambda: [EntryPoint()])
    app = create_app(config.with_overrides(load_entry_points=True))
    host = kernel_of(app).plugins
    (pack,) = [p for p in host.packs if p.name == "lazy"]
    assert pack.state == "failed" and "hostgate_missing" in pack.reason
    assert not host.pm.has_plugin("lazy")


def test_disabled_entry_point_is_blocked(monkeypatch):
    loaded = []

    class EntryPoint:
        name = "quiet"
        dist = types.SimpleNamespace(name="hostgate-quiet", version="1.0")

        def load(self):
            loaded.append(True)
            return make_plugin("quiet_mod")

    monkeypatch.setattr("hostgate.plugins._entry_points", lambda: [EntryPoint()])
    host = PluginHost()
    host.load(entry_points=True, disabled=["quiet"])
    assert host.packs[0].state == "disabled" and not loaded


def test_importing_hostgate_has_no_side_effects():
    import importlib

    before = set(sys.modules)
    importlib.reload(sys.modules["hostgate"])
    assert not any(name.startswith("hostgate_") for name in set(sys.modules) - before)
