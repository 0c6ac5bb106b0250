"""The current request, app and ``g``, read from Quart's context variables directly.

``quart.request`` and ``quart.g`` are werkzeug proxies: each use looks the object
up again, and the kernel's hot path read them about ten times per request. Quart
keeps them in two context variables of its own (``_cv_request``, ``_cv_app``);
within ``RANGES`` they are read directly. Outside them (or with the patches off)
the public proxies answer (``_get_current_object()``, which werkzeug documents).

Each function raises ``LookupError`` outside a request (or app) context.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import quart
from quart import globals as quart_globals

from . import VersionRange, applies

RANGES = (VersionRange("quart", "0.22.0", "0.23"),)
"""The versions this was written and tested against."""


def _fast_request() -> quart.Request:
    return quart_globals._cv_request.get().request


def _fast_app_context() -> Any:
    return quart_globals._cv_app.get()


def _stock_request() -> quart.Request:
    if not quart.has_request_context():
        raise LookupError("no request context")
    return quart.request._get_current_object()  # type: ignore[attr-defined,no-any-return]


def _stock_app_context() -> Any:
    if not quart.has_app_context():
        raise LookupError("no app context")
    # what Quart's app context holds, through the public proxies
    return _AppContext(quart.current_app._get_current_object(), quart.g._get_current_object())  # type: ignore[attr-defined]


class _AppContext:
    """The two attributes of Quart's app context the kernel reads."""

    __slots__ = ("app", "g")

    def __init__(self, app: Any, g: Any) -> None:
        self.app = app
        self.g = g


current_request: Callable[[], quart.Request] = _stock_request
"""The current request (``LookupError`` outside one)."""
app_context: Callable[[], Any] = _stock_app_context
"""The current app context: ``.app`` and ``.g`` (``LookupError`` outside one)."""


def install() -> bool:
    """Choose direct reads within ``RANGES``, Quart's proxies outside; whether direct."""
    global current_request, app_context
    fast = applies("quart.context", *RANGES)
    current_request = _fast_request if fast else _stock_request
    app_context = _fast_app_context if fast else _stock_app_context
    return fast


install()
