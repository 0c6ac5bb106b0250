"""werkzeug's routing, tuned: URL builders compiled once per process, URL matches remembered.

1. ``SharedBuilderRule``: URL builders compiled once per process, not once per app.

werkzeug compiles two Python functions (``_build`` and ``_build_unknown``) for
every rule it adds to a map: code generation, ``ast`` walks and ``compile``, the
bulk of ``create_app``'s time. The generated function depends only on the rule's
text and its parsed shape (``_trace``); it reads the rule's converters through
its ``self`` argument when called. So rules of the same shape, in this app or
the next one (each test builds one; each ``serve`` worker builds one), can share
one compiled function, bound to each rule as werkzeug binds its own.

The cache is bounded: the least recently used builder goes once it holds
``max_builders`` (an app with every pack needs about 260), so a process that
builds apps with ever new rules does not grow without end.

2. ``RememberingMap``: URL matches remembered per request line.

werkzeug's ``StateMachineMatcher`` walks its state machine on every request (4-8 µs
over the gateway's ~150 rules) through a recursive closure that refers to itself.
Each walk leaves that closure, its cells and a set in a reference cycle, which only
the garbage collector frees: about eight objects per request, the only cyclic
garbage a cached API request makes. The answer depends only on the domain, the
path, the method, whether it is a WebSocket, and the rules; so the map remembers
the answers that matched (up to ``MAX_REMEMBERED``, then it starts again) and
forgets them all whenever a rule is added. Refusals (no such path, wrong method,
a redirect) are not remembered: they are rare for a working client, and a scanner
trying paths must not fill the memory; nor are paths longer than
``MAX_REMEMBERED_PATH`` (a file path or a page of the app can be as long as the
request line allows), so the memory stays under a few MiB.

Private names used: werkzeug's ``Rule._compile_builder`` (overridden) and
``Rule._trace``, ``Map._matcher`` (replaced). Guarded by ``RANGES``; outside them
``install()`` gives Quart's own rule and map classes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ClassVar

from quart.routing import QuartMap, QuartRule
from werkzeug.routing import Rule
from werkzeug.routing.matcher import StateMachineMatcher

from . import VersionRange, applies

RANGES = (
    VersionRange("werkzeug", "3.1.9", "3.2"),
    VersionRange("quart", "0.22.0", "0.23"),
)
"""The versions these classes were written and tested against."""

MAX_REMEMBERED = 4096
MAX_REMEMBERED_PATH = 256

Builder = Callable[..., tuple[str, str]]


class SharedBuilderRule(QuartRule):
    """A Quart rule that reuses the URL builder compiled for an identical rule."""

    max_builders: ClassVar[int] = 1024
    _builders: ClassVar[OrderedDict[tuple[Any, ...], Builder]] = OrderedDict()
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def _compile_builder(self, append_unknown: bool = True) -> Builder:
        if self.defaults:
            # a default of a URL variable is converted into the code by the
            # rule's own converter (with its arguments): not part of the key
            return super()._compile_builder(append_unknown)
        key = (self.rule, tuple(self._trace), append_unknown)
        builders = self._builders
        with self._lock:
            builder = builders.get(key)
            if builder is not None:
                builders.move_to_end(key)
                return builder
        builder = super()._compile_builder(append_unknown)
        with self._lock:
            builders[key] = builder
            while len(builders) > self.max_builders:
                builders.popitem(last=False)
        return builder


class RememberingMatcher(StateMachineMatcher):
    """werkzeug's matcher, answering a path it matched before from memory."""

    def __init__(self, merge_slashes: bool) -> None:
        super().__init__(merge_slashes)
        self.remembered: dict[tuple[str, str, str, bool], tuple[Rule, dict[str, Any]]] = {}

    def add(self, rule: Rule) -> None:
        """Add ``rule``; what was remembered may now match another rule."""
        self.remembered.clear()
        super().add(rule)

    def update(self) -> None:
        """Re-sort the rules (after adding some): forget every answer."""
        self.remembered.clear()
        super().update()

    def match(
        self, domain: str, path: str, method: str, websocket: bool
    ) -> tuple[Rule, dict[str, Any]]:
        """The rule and converted values for this request line (a copy: views may change it)."""
        key = (domain, path, method, websocket)
        known = self.remembered.get(key)
        if known is None:
            rule, values = super().match(domain, path, method, websocket)
            if len(path) > MAX_REMEMBERED_PATH:
                return rule, dict(values)
            if len(self.remembered) >= MAX_REMEMBERED:
                self.remembered.clear()
            known = self.remembered[key] = (rule, dict(values))
        return known[0], dict(known[1])


class RememberingMap(QuartMap):
    """Quart's URL map with a ``RememberingMatcher``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        matcher = RememberingMatcher(self._matcher.merge_slashes)
        for rule in self.iter_rules():  # rules given to the constructor
            matcher.add(rule)
        self._matcher = matcher
        self._remap = True


def install() -> tuple[type[QuartMap], type[QuartRule]]:
    """The URL map and rule classes for the app: ours within ``RANGES``, else Quart's."""
    if not applies("werkzeug.routing", *RANGES):
        return QuartMap, QuartRule
    return RememberingMap, SharedBuilderRule
