"""The plugin manager: discovery, blocking, registries with duplicate checks, status.

Every hook is called through pluggy (``pm.hook.<name>(...)`` with keyword
arguments, or a one-plugin subset of it where failures must stay apart), so
hook call monitoring sees each call: ``HOSTGATE_TRACE_PLUGINS=1`` logs every
call with its plugin and duration.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import logging
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pluggy

from . import hookspecs

log = logging.getLogger("hostgate.plugins")
trace_log = logging.getLogger("hostgate.plugins.trace")

ENTRY_POINT_GROUP = "hostgate"
CONTRIBUTION_HOOKS = (
    "register_protocols",
    "register_login_methods",
    "register_second_factors",
    "register_channels",
    "register_settings",
    "register_permissions",
    "register_blueprints",
    "register_pages",
    "register_commands",
)
# The kernel's own behaviour, written as plugins (registered after the packs).
DEFAULT_PLUGINS = (
    "hostgate.default_settings",
    "hostgate.default_permissions",
    "hostgate.default_access_checks",
)
# Old hook name -> its replacement; packs implementing the old name still get
# called, with a DeprecationWarning at registration.
DEPRECATED_HOOKS = {"event": "track_event"}


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

    def contributed(self, kind: str) -> list[str]:
        """Names this pack registered of one kind (``settings``, ``permissions``, ...)."""
        return [p.partition(":")[2] for p in self.provides if p.partition(":")[0] == kind]

    def to_json(self) -> dict[str, Any]:
        """JSON form for ``hostgate plugins --json`` (documented in docs/plugins.md)."""
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "state": self.state,
            "reason": self.reason,
            "provides": self.provides,
            "settings": self.contributed("settings"),
            "permissions": self.contributed("permissions"),
        }


async def resolve(value: Any) -> Any:
    """Await a hook result if it is awaitable (hooks may be sync or async)."""
    if inspect.isawaitable(value):
        return await value
    return value


def _entry_points() -> Iterable[importlib.metadata.EntryPoint]:
    return importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)


class HookTracer:
    """Logs every hook call with its plugins and duration (pluggy's call monitoring)."""

    def __init__(self) -> None:
        self._started: list[float] = []

    def before(self, hook_name: str, hook_impls: Sequence[Any], kwargs: Any) -> None:
        """Note the start of a call (calls nest, so a stack)."""
        self._started.append(time.perf_counter())

    def after(self, outcome: Any, hook_name: str, hook_impls: Sequence[Any], kwargs: Any) -> None:
        """Log the call: hook, plugins in call order, duration, and whether it raised."""
        elapsed = (time.perf_counter() - self._started.pop()) * 1000
        plugins = ", ".join(impl.plugin_name for impl in reversed(hook_impls)) or "-"
        failed = f" raised {type(outcome.exception).__name__}" if outcome.exception else ""
        trace_log.info("hook %s plugin %s %.3f ms%s", hook_name, plugins, elapsed, failed)

    @staticmethod
    def awaited(hook_name: str, plugin_name: str, seconds: float) -> None:
        """Log the time an async implementation took once awaited."""
        trace_log.info("hook %s plugin %s awaited %.3f ms", hook_name, plugin_name, seconds * 1000)


class PluginHost:
    """Owns the pluggy manager and the status of every pack."""

    def __init__(self, *, trace: bool = False) -> None:
        self.pm = pluggy.PluginManager("hostgate")
        self.pm.add_hookspecs(hookspecs)
        self.packs: list[PackStatus] = []
        self._loaded = False
        self._contributed: dict[str, dict[str, Any]] = {hook: {} for hook in CONTRIBUTION_HOOKS}
        self._callers: dict[tuple[str, str], pluggy.HookCaller] = {}
        self.tracer: HookTracer | None = None
        if trace:
            self.tracer = HookTracer()
            self.pm.add_hookcall_monitoring(self.tracer.before, self.tracer.after)

    def load(
        self,
        *,
        entry_points: bool,
        disabled: Iterable[str] = (),
        extra: Iterable[object] = (),
    ) -> None:
        """Register entry-point packs, the kernel's default plugins and ``extra`` (idempotent).

        Each plugin's contribution hooks are called once, right after it is
        registered; an entry-point pack whose hook raises is unregistered and
        reported as failed.
        """
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
                    self._register(plugin, ep.name)
                except Exception as exc:  # a broken pack never stops start-up
                    self._forget(ep.name)
                    reason = f"{type(exc).__name__}: {exc}"
                    log.warning("plugin %s failed to load: %s", ep.name, reason)
                    self.packs.append(PackStatus(ep.name, dist, version, "failed", reason))
                    continue
                self.packs.append(PackStatus(ep.name, dist, version, "loaded"))
                self._warn_deprecated(ep.name)
        for module_name in DEFAULT_PLUGINS:
            self._register(importlib.import_module(module_name), module_name)
        for index, plugin in enumerate(extra):
            name = getattr(plugin, "__name__", None) or f"extra-{index}-{id(plugin)}"
            if self.pm.is_registered(plugin) or self.pm.has_plugin(name):
                continue
            self._register(plugin, name)
            self._warn_deprecated(name)
        self.pm.check_pending()

    def _register(self, plugin: object, name: str) -> None:
        """Register one plugin and call each of its contribution hooks once."""
        self.pm.register(plugin, name=name)
        self._callers.clear()
        for hook_name in CONTRIBUTION_HOOKS:
            if not self._implements(name, hook_name):
                continue
            results = self._one(name, hook_name)()
            if results and results[0] is not None:
                self._contributed[hook_name][name] = results[0]

    def _forget(self, name: str) -> None:
        if self.pm.has_plugin(name):
            self.pm.unregister(name=name)
        self._callers.clear()
        for results in self._contributed.values():
            results.pop(name, None)

    def _warn_deprecated(self, name: str) -> None:
        for old, new in DEPRECATED_HOOKS.items():
            if self._implements(name, old):
                message = f"plugin {name!r} implements the hook {old!r}; rename it to {new!r}"
                log.warning(message)
                warnings.warn(message, DeprecationWarning, stacklevel=2)

    def _implements(self, plugin_name: str, hook_name: str) -> bool:
        caller: pluggy.HookCaller = getattr(self.pm.hook, hook_name)
        return any(impl.plugin_name == plugin_name for impl in caller.get_hookimpls())

    def _implementers(self, hook_name: str) -> list[str]:
        """Names of the plugins implementing a hook, in pluggy's call order."""
        caller: pluggy.HookCaller = getattr(self.pm.hook, hook_name)
        return [impl.plugin_name for impl in reversed(caller.get_hookimpls())]

    def _one(self, plugin_name: str, hook_name: str) -> pluggy.HookCaller:
        """``pm.hook.<hook_name>`` restricted to one plugin (cached)."""
        key = (plugin_name, hook_name)
        caller = self._callers.get(key)
        if caller is None or len(caller.get_hookimpls()) > 1:  # a plugin registered since
            others = [
                plugin
                for name, plugin in self.pm.list_name_plugin()
                if name != plugin_name and plugin is not None
            ]
            caller = self.pm.subset_hook_caller(hook_name, remove_plugins=others)
            self._callers[key] = caller
        return caller

    def contributions(self, hook_name: str) -> Iterator[tuple[str, Any]]:
        """Yield ``(plugin_name, result)`` for each plugin's answer to a contribution hook.

        The answers were collected once at registration; this never calls the hook again.
        """
        answers = self._contributed[hook_name]
        for plugin_name in self._implementers(hook_name):
            if plugin_name in answers:
                yield plugin_name, answers[plugin_name]

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

    def blueprints(self) -> list[tuple[str, Any]]:
        """``(plugin_name, blueprint)`` of every ``register_blueprints`` blueprint, noted."""
        found = []
        for plugin_name, blueprints in self.contributions("register_blueprints"):
            for blueprint in blueprints:
                self.note(plugin_name, f"blueprints:{blueprint.name}")
                found.append((plugin_name, blueprint))
        return found

    def pages(self) -> list[tuple[str, Any]]:
        """``(plugin_name, blueprint)`` of every ``register_pages`` blueprint, noted as provided."""
        found = []
        for plugin_name, blueprints in self.contributions("register_pages"):
            for blueprint in blueprints:
                self.note(plugin_name, f"pages:{blueprint.name}")
                found.append((plugin_name, blueprint))
        return found

    def note_permissions(self) -> None:
        """Record in each pack's status the permission names it registers."""
        for plugin_name, groups in self.contributions("register_permissions"):
            for names in groups.values():
                for name in names:
                    self.note(plugin_name, f"permissions:{name}")

    def note(self, plugin_name: str, what: str) -> None:
        """Add ``kind:name`` to what a pack's status says it provides."""
        for pack in self.packs:
            if pack.name == plugin_name and what not in pack.provides:
                pack.provides.append(what)

    def _hooks(self, hook_name: str) -> list[str]:
        """The hook and the deprecated names it replaces."""
        return [hook_name, *(old for old, new in DEPRECATED_HOOKS.items() if new == hook_name)]

    async def _call_one(self, plugin_name: str, hook_name: str, kwargs: dict[str, Any]) -> None:
        started = time.perf_counter()
        (result,) = self._one(plugin_name, hook_name)(**kwargs) or [None]
        if inspect.isawaitable(result):
            await result
            if self.tracer is not None:
                self.tracer.awaited(hook_name, plugin_name, time.perf_counter() - started)

    async def call_each(self, hook_name: str, **kwargs: Any) -> None:
        """Call every implementation separately; log and swallow each failure."""
        for name in self._hooks(hook_name):
            for plugin_name in self._implementers(name):
                try:
                    await self._call_one(plugin_name, name, kwargs)
                except Exception:
                    log.exception("plugin %s failed in hook %s", plugin_name, name)

    async def any_true(self, hook_name: str, **kwargs: Any) -> bool:
        """Ask every implementation of a yes/no hook in order; True at the first yes.

        A failing implementation is logged and counts as no.
        """
        for plugin_name in self._implementers(hook_name):
            try:
                (answer,) = self._one(plugin_name, hook_name)(**kwargs) or [None]
                if inspect.isawaitable(answer):
                    answer = await answer
            except Exception:
                log.exception("plugin %s failed in hook %s", plugin_name, hook_name)
                continue
            if answer is True:
                return True
        return False

    async def call_all(self, hook_name: str, **kwargs: Any) -> None:
        """Call every implementation in order; a failure propagates (lifecycle hooks)."""
        for plugin_name in self._implementers(hook_name):
            await self._call_one(plugin_name, hook_name, kwargs)


def installed_packs() -> list[PackStatus]:
    """Discover packs without starting the app (for ``hostgate plugins``)."""
    host = PluginHost()
    host.load(entry_points=True)
    return host.packs
