"""The plugin manager: discovery, blocking, registries with duplicate checks, status."""

from __future__ import annotations

import importlib.metadata
import inspect
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pluggy

from . import hookspecs

log = logging.getLogger("hostgate.plugins")

ENTRY_POINT_GROUP = "hostgate"
CONTRIBUTION_HOOKS = (
    "register_protocols",
    "register_login_methods",
    "register_channels",
    "register_settings",
    "register_permissions",
    "register_blueprints",
    "register_pages",
)


class PluginConflict(RuntimeError):
    """Two plugins contributed the same name; the message names both."""


@dataclass
class PackStatus:
    """One entry of ``hostgate plugins``."""

    name: str
    distribution: str
    version: str
    state: str  # loaded | disabled | failed
    reason: str = ""
    provides: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON form for ``hostgate plugins --json``."""
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "state": self.state,
            "reason": self.reason,
            "provides": self.provides,
        }


async def resolve(value: Any) -> Any:
    """Await a hook result if it is awaitable (hooks may be sync or async)."""
    if inspect.isawaitable(value):
        return await value
    return value


def _entry_points() -> Iterable[importlib.metadata.EntryPoint]:
    return importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)


class PluginHost:
    """Owns the pluggy manager and the status of every pack."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager("hostgate")
        self.pm.add_hookspecs(hookspecs)
        self.packs: list[PackStatus] = []
        self._loaded = False

    def load(
        self,
        *,
        entry_points: bool,
        disabled: Iterable[str] = (),
        extra: Iterable[object] = (),
    ) -> None:
        """Register entry-point packs, the kernel's built-ins and ``extra`` (idempotent)."""
        if self._loaded:
            return
        self._loaded = True
        blocked = set(disabled)
        if entry_points:
            for ep in _entry_points():
                dist = ep.dist.name if ep.dist else "?"
                version = ep.dist.version if ep.dist else "?"
                if ep.name in blocked or dist in blocked:
                    self.pm.set_blocked(ep.name)
                    self.packs.append(PackStatus(ep.name, dist, version, "disabled"))
                    continue
                try:
                    plugin = ep.load()
                    self.pm.register(plugin, name=ep.name)
                    self._probe(ep.name)
                except Exception as exc:  # a broken pack never stops start-up
                    if self.pm.has_plugin(ep.name):
                        self.pm.unregister(name=ep.name)
                    reason = f"{type(exc).__name__}: {exc}"
                    log.warning("plugin %s failed to load: %s", ep.name, reason)
                    self.packs.append(PackStatus(ep.name, dist, version, "failed", reason))
                    continue
                self.packs.append(PackStatus(ep.name, dist, version, "loaded"))
        from . import builtin

        self.pm.register(builtin, name="hostgate.builtin")
        for index, plugin in enumerate(extra):
            name = getattr(plugin, "__name__", None) or f"extra-{index}-{id(plugin)}"
            if self.pm.is_registered(plugin) or self.pm.has_plugin(name):
                continue
            self.pm.register(plugin, name=name)
        self.pm.check_pending()

    def _probe(self, plugin_name: str) -> None:
        """Call a pack's contribution hooks once, so one that raises fails at load time."""
        for hook_name in CONTRIBUTION_HOOKS:
            caller = getattr(self.pm.hook, hook_name)
            for impl in caller.get_hookimpls():
                if impl.plugin_name == plugin_name:
                    impl.function()

    def contributions(self, hook_name: str) -> Iterator[tuple[str, Any]]:
        """Yield ``(plugin_name, result)`` for each implementation of a contribution hook."""
        caller = getattr(self.pm.hook, hook_name)
        for impl in reversed(caller.get_hookimpls()):
            result = impl.function()
            if result is None:
                continue
            yield impl.plugin_name, result

    def collect(self, hook_name: str, key: Callable[[Any], str]) -> dict[str, tuple[str, Any]]:
        """Merge a list-returning contribution hook into ``{key: (plugin, item)}``.

        Raises PluginConflict naming both plugins when a key repeats.
        """
        registry: dict[str, tuple[str, Any]] = {}
        for plugin_name, items in self.contributions(hook_name):
            for item in items:
                name = key(item)
                if name in registry:
                    other = registry[name][0]
                    raise PluginConflict(
                        f"{hook_name}: {name!r} is provided by both {other!r} and {plugin_name!r}"
                    )
                registry[name] = (plugin_name, item)
                self.note(plugin_name, f"{hook_name.removeprefix('register_')}:{name}")
        return registry

    def pages(self) -> list[tuple[str, Any]]:
        """``(plugin_name, blueprint)`` of every ``register_pages`` blueprint, noted as provided."""
        found = []
        for plugin_name, blueprints in self.contributions("register_pages"):
            for blueprint in blueprints:
                self.note(plugin_name, f"pages:{blueprint.name}")
                found.append((plugin_name, blueprint))
        return found

    def note(self, plugin_name: str, what: str) -> None:
        """Record what a pack provides (``hostgate plugins`` lists it)."""
        for pack in self.packs:
            if pack.name == plugin_name:
                pack.provides.append(what)

    async def call_each(self, hook_name: str, **kwargs: Any) -> None:
        """Call every implementation separately; log and swallow each failure."""
        caller = getattr(self.pm.hook, hook_name)
        for impl in reversed(caller.get_hookimpls()):
            try:
                args = {name: kwargs[name] for name in impl.argnames}
                await resolve(impl.function(**args))
            except Exception:
                log.exception("plugin %s failed in hook %s", impl.plugin_name, hook_name)

    async def call_all(self, hook_name: str, **kwargs: Any) -> None:
        """Call every implementation in order; a failure propagates (lifecycle hooks)."""
        caller = getattr(self.pm.hook, hook_name)
        for impl in reversed(caller.get_hookimpls()):
            args = {name: kwargs[name] for name in impl.argnames}
            await resolve(impl.function(**args))


def installed_packs() -> list[PackStatus]:
    """Discover packs without starting the app (for ``hostgate plugins``)."""
    host = PluginHost()
    host.load(entry_points=True)
    return host.packs
