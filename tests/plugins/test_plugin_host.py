"""Plugin loading: discovery, duplicates, failures, disabling, lifecycle and events."""

import logging
import re
import sys
import types

import hostgate_notifications.plugin
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
    assert "hostgate.default_settings" in str(info.value) and "clash" in str(info.value)


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

    def track_event(event, kernel):
        calls.append(event.event_type)

    async def broken(event, kernel):
        raise RuntimeError("subscriber failure must not reach the caller")

    def broken_sync(event, kernel):
        raise RuntimeError("a synchronous failure is isolated too")

    breaker = make_plugin("breaker", track_event=broken)
    watcher = make_plugin("watcher", startup=startup, shutdown=shutdown, track_event=track_event)
    sync_breaker = make_plugin("sync_breaker", track_event=broken_sync)
    app = create_app(config, plugins=[breaker, watcher, sync_breaker])
    async with app.test_app():
        kernel = kernel_of(app)
        await kernel.audit.record("test.happened", target="x")
    assert calls == ["startup", "test.happened", "shutdown"]


async def test_event_hook_is_deprecated_but_still_called(config):
    seen = []
    legacy = make_plugin("legacy", event=lambda event, kernel: seen.append(event.event_type))
    with pytest.warns(DeprecationWarning, match="'legacy' implements the hook 'event'"):
        app = create_app(config, plugins=[legacy])
    async with app.test_app():
        await kernel_of(app).audit.record("test.legacy", target="x")
    assert seen == ["test.legacy"]


def test_each_contribution_hook_is_called_once(monkeypatch, config):
    calls = []

    def register_protocols():
        calls.append("protocols")
        return [ProtocolSpec("once", 1)]

    def register_permissions():
        calls.append("permissions")
        return {"connections": ["connections.use_once"]}

    class EntryPoint:
        name = "counted"
        dist = types.SimpleNamespace(name="hostgate-counted", version="1.0")

        def load(self):
            return make_plugin(
                "counted_mod",
                register_protocols=register_protocols,
                register_permissions=register_permissions,
            )

    monkeypatch.setattr("hostgate.plugins._entry_points", lambda: [EntryPoint()])
    app = create_app(config.with_overrides(load_entry_points=True))
    kernel = kernel_of(app)
    assert "once" in kernel.protocols
    assert "connections.use_once" in kernel.permission_groups["connections"]
    assert sorted(calls) == ["permissions", "protocols"]


async def test_trace_logs_every_hook_call_with_plugin_and_duration(config, caplog):
    async def startup(kernel):
        pass

    traced = make_plugin(
        "traced",
        register_settings=lambda: [SettingSpec("traced.flag", bool, False)],
        startup=startup,
        track_event=lambda event, kernel: None,
    )
    caplog.set_level(logging.INFO, logger="hostgate.plugins.trace")
    app = create_app(
        config.with_overrides(trace_plugins=True), plugins=[traced, hostgate_notifications.plugin]
    )
    async with app.test_app():
        await kernel_of(app).audit.record("test.traced", target="x")
    lines = [r.getMessage() for r in caplog.records if r.name == "hostgate.plugins.trace"]
    pattern = re.compile(r"^hook (\w+) plugin (\S+) (awaited )?\d+\.\d{3} ms$")
    calls = {(m[1], m[2]) for m in map(pattern.match, lines) if m}
    assert len(calls) and all(pattern.match(line) for line in lines), lines
    assert {
        ("register_settings", "traced"),
        ("register_settings", "hostgate.default_settings"),
        ("startup", "traced"),
        ("track_event", "traced"),
        ("track_event", "hostgate_notifications.plugin"),
    } <= calls
    assert any(line.startswith("hook startup plugin traced awaited ") for line in lines)


def test_no_trace_without_the_setting(config, caplog):
    caplog.set_level(logging.INFO, logger="hostgate.plugins.trace")
    create_app(config)
    assert not [r for r in caplog.records if r.name == "hostgate.plugins.trace"]


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
