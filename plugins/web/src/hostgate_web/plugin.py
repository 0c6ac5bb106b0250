"""The pack's hook: the browser app at ``/``, its hashed assets, strict headers.

Every path outside ``/api/``, ``/ws/`` and ``/health`` that is not a built file
answers ``index.html`` (the app routes on the client, so deep links and reloads
work, and the OIDC return ``/?sso=success`` / ``/?sso_error=...`` lands on it).
"""

from __future__ import annotations

from collections.abc import Sequence

from hostgate import hookimpl, public
from quart import Blueprint, Response, send_from_directory
from quart_schema import hide
from werkzeug.routing import PathConverter
from werkzeug.security import safe_join

from .assets import STATIC

# Vite names everything under assets/ by content hash: cached for a year, never revalidated.
HASHED_PREFIX = "assets/"
LONG_CACHE = "public, max-age=31536000, immutable"
# No inline script anywhere (Vite emits only external modules), no eval; WebSockets and
# fetches go to this origin only. Inline styles are allowed: xterm.js's renderers write
# <style> elements and style attributes (colours, cell sizes) and cannot take a nonce.
# 'wasm-unsafe-eval' lets the page compile WebAssembly shipped in its own scripts
# (asciinema-player's terminal emulator; IronRDP's client), and nothing else: eval() and
# new Function() stay refused.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self' 'wasm-unsafe-eval'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self'",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
}


class PagePath(PathConverter):
    """A path that is none of the kernel's (``api/``, ``ws/``, ``health``)."""

    regex = r"(?!api(?:/|$)|ws(?:/|$)|health$)[^/].*?"


pages = Blueprint("web", __name__)


@pages.record_once
def _add_converter(state: object) -> None:
    state.app.url_map.converters["page"] = PagePath  # type: ignore[attr-defined]


@pages.after_request
async def _security_headers(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value
    return response


def _not_built() -> Response:
    return Response(
        "The browser app is not built: run `python -m hostgate_web.assets`"
        " (scripts/dev.py serve does it).\n",
        status=503,
        content_type="text/plain; charset=utf-8",
        headers={"Cache-Control": "no-store"},
    )


async def _index() -> Response:
    if not (STATIC / "index.html").is_file():
        return _not_built()
    response = await send_from_directory(STATIC, "index.html")
    response.headers["Cache-Control"] = "no-cache"
    return response


@pages.get("/")
@public
@hide
async def app_root() -> Response:
    """The app's page (also the OIDC return ``/?sso=success`` and ``/?sso_error=...``)."""
    return await _index()


@pages.get("/<page:path>")
@public
@hide
async def app_path(path: str) -> Response:
    """A built file when one has this name, else the app's page (client-side routes).

    A path that would leave the build folder (``..``, a drive or NUL) names no
    file and is never looked up, so the answer cannot tell which files exist
    elsewhere on the machine.
    """
    local = safe_join(str(STATIC), path)
    candidate = STATIC / (local or ".")
    servable = (
        local is not None and candidate.name != "index.html" and not candidate.name.startswith(".")
    )
    if path.startswith(HASHED_PREFIX) or (servable and candidate.is_file()):
        if not (servable and candidate.is_file()):
            # a missing script must not come back as HTML
            return Response("Not found\n", status=404, content_type="text/plain; charset=utf-8")
        response = await send_from_directory(STATIC, path)
        hashed = path.startswith(HASHED_PREFIX)
        response.headers["Cache-Control"] = LONG_CACHE if hashed else "no-cache"
        return response
    return await _index()


@hookimpl
def register_pages() -> Sequence[Blueprint]:
    """The browser app at the site root."""
    return [pages]
