"""URL rules whose ``url_for`` builders are compiled once per process (werkzeug internals).

Binding a rule to an app's URL map makes werkzeug generate two Python functions
for ``url_for`` (an AST built and compiled per rule, per map): about three quarters
of ``create_app``, which the test suite runs over a thousand times and every
worker of a cluster node runs once. Each generated function depends only on the
rule's text, its trace (static parts and variable names, in order) and the names
of its defaults; it reaches the rule's converters through the rule it is bound
to. So one function per distinct rule serves every map: ``CachedBuilderRule``
keeps them in a process-wide table and binds the shared function to each rule,
as werkzeug binds the one it just compiled. Matching is untouched.

A rule with a default for one of its own variables (werkzeug folds the default's
URL form into the function) is compiled the stock way.

Private names used: werkzeug's ``Rule._compile_builder`` (overridden), and its
``_trace`` and ``defaults`` read in the override. Guarded by ``RANGES``; outside
them apps keep Quart's own ``QuartRule``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from quart.routing import QuartRule

from . import VersionRange, applies

RANGES = (VersionRange("werkzeug", "3.1.9", "3.2"),)
"""The versions this patch was written and tested against."""

MAX_BUILDERS = 4096
"""Builders kept at most (two per distinct rule); the table starts over beyond it."""

_builders: dict[tuple[Any, ...], Callable[..., tuple[str, str]]] = {}


class CachedBuilderRule(QuartRule):
    """Quart's rule, sharing its compiled ``url_for`` builders with every equal rule."""

    def _compile_builder(self, append_unknown: bool = True) -> Callable[..., tuple[str, str]]:
        trace = tuple(self._trace)
        defaults = self.defaults or {}
        if any(dynamic and name in defaults for dynamic, name in trace):
            return super()._compile_builder(append_unknown)
        key = (self.rule, trace, tuple(defaults), append_unknown)
        builder = _builders.get(key)
        if builder is None:
            if len(_builders) >= MAX_BUILDERS:
                _builders.clear()
            builder = _builders[key] = super()._compile_builder(append_unknown)
        return builder


def rule_class() -> type[QuartRule]:
    """The URL rule class for a new app: ``CachedBuilderRule`` within ``RANGES``, else Quart's."""
    if not applies("werkzeug.rule_class", *RANGES):
        return QuartRule
    return CachedBuilderRule
