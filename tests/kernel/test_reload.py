"""After the database is replaced (a restore), every in-memory copy follows it."""

from hostgate.db.models.settings import SettingValue


async def test_reload_state_rereads_settings_and_runs_hooks(kernel):
    calls = []

    async def hook():
        calls.append("reloaded")

    kernel.on_reload(hook)
    async with kernel.db.session() as session:
        session.add(SettingValue(key="app.name", value="written behind the cache"))
        await session.commit()
    assert kernel.settings.get("app.name") == "hostgate"
    await kernel.reload_state()
    assert kernel.settings.get("app.name") == "written behind the cache"
    assert calls == ["reloaded"]


async def test_services_with_database_state_register_for_reload(kernel):
    registered = {
        getattr(hook, "__self__", None).__class__.__name__ for hook in kernel._reload_hooks
    }
    assert {"Recordings"} <= registered  # packs re-read theirs in database_replaced
