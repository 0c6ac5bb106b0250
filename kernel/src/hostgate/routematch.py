"""URL matches remembered per request line: werkzeug's matcher walks its rules once per path.

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
"""

from __future__ import annotations

from typing import Any

from quart.routing import QuartMap
from werkzeug.routing import Rule
from werkzeug.routing.matcher import StateMachineMatcher

MAX_REMEMBERED = 4096
MAX_REMEMBERED_PATH = 256


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
