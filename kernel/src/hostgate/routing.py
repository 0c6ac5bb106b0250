"""URL rules whose URL builders are compiled once per process, not once per app.

werkzeug compiles two Python functions (``_build`` and ``_build_unknown``) for
every rule it adds to a map: code generation, ``ast`` walks and ``compile``, the
bulk of ``create_app``'s time. The generated function depends only on the rule's
text and its parsed shape (``_trace``); it reads the rule's converters through
its ``self`` argument when called. So rules of the same shape, in this app or
the next one (each test builds one; each ``serve`` worker builds one), can share
one compiled function, bound to each rule as werkzeug binds its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from quart.routing import QuartRule


class SharedBuilderRule(QuartRule):
    """A Quart rule that reuses the URL builder compiled for an identical rule."""

    _builders: ClassVar[dict[tuple[Any, ...], Callable[..., tuple[str, str]]]] = {}

    def _compile_builder(self, append_unknown: bool = True) -> Callable[..., tuple[str, str]]:
        if self.defaults:
            # a default of a URL variable is converted into the code by the
            # rule's own converter (with its arguments): not part of the key
            return super()._compile_builder(append_unknown)
        key = (self.rule, tuple(self._trace), append_unknown)
        builder = self._builders.get(key)
        if builder is None:
            builder = self._builders[key] = super()._compile_builder(append_unknown)
        return builder
