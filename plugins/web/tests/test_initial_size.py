"""What the browser loads before the sign-in screen stays small (goal: < 150 KB gzip)."""

from __future__ import annotations

import gzip
import re

from hostgate_web.assets import STATIC, ensure_built

BUDGET = 150 * 1024


def initial_assets() -> list[str]:
    """The scripts and stylesheets index.html loads (lazy chunks are not among them)."""
    html = (STATIC / "index.html").read_text()
    return re.findall(r'(?:src|href)="/(assets/[^"]+\.(?:js|css))"', html)


def test_initial_js_and_css_fit_the_budget() -> None:
    ensure_built()
    assets = initial_assets()
    assert any(a.endswith(".js") for a in assets) and any(a.endswith(".css") for a in assets)
    size = sum(len(gzip.compress((STATIC / a).read_bytes(), 9)) for a in assets)
    assert size < BUDGET, f"{size} bytes gzip before sign-in: {assets}"


def test_heavy_libraries_are_not_in_the_initial_bundle() -> None:
    ensure_built()
    initial = "".join((STATIC / a).read_text() for a in initial_assets() if a.endswith(".js"))
    assert "zxcvbn" not in initial.lower() or "import(" in initial  # only a lazy import
    assert "xterm-helper-textarea" not in initial  # xterm.js loads with the first terminal
