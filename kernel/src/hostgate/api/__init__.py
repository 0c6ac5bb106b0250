"""HTTP API: one module per resource, each exposing ``blueprint`` (mounted at /api/v1)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator

from quart import Blueprint


def blueprints() -> Iterator[Blueprint]:
    """Every resource blueprint of the kernel, in module-name order."""
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        loaded = importlib.import_module(f"{__name__}.{module.name}")
        blueprint = getattr(loaded, "blueprint", None)
        if isinstance(blueprint, Blueprint):
            yield blueprint
