"""URL rules whose URL builders are compiled once per process, not once per app.

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
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ClassVar

from quart.routing import QuartRule

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
