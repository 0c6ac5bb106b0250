"""The pack serves the app at ``/``: SPA fallback, hashed assets, caching and security headers."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hostgate_web import plugin as web_plugin
from hostgate_web.assets import STATIC, ensure_built

INDEX = (
    "<!doctype html><title>hostgate</title><script type=module src=/assets/app-1a2b.js></script>"
)


@pytest.fixture
def static(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A built app in a temp folder, served instead of the package's."""
    root = tmp_path / "static"
    (root / "assets").mkdir(parents=True)
    (root / "index.html").write_text(INDEX)
    (root / "assets" / "app-1a2b.js").write_text("console.log(1)")
    (root / "favicon.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    (root / ".source-hash").write_text("abc\n")
    monkeypatch.setattr(web_plugin, "STATIC", root)
    return root


def assert_strict_headers(response: Any) -> None:
    csp = response.headers["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    # no inline script, no eval; WebAssembly from the app's own files may be compiled
    assert directives["script-src"] == "'self' 'wasm-unsafe-eval'"
    assert directives["connect-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'"
    assert "'unsafe-eval'" not in csp
    assert directives["default-src"] == "'self'"
    assert directives["style-src"] == "'self' 'unsafe-inline'"  # xterm.js writes styles
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize(
    "path",
    ["/", "/?sso=success", "/?sso_error=access_denied", "/connections/c1", "/admin/users", "/x.js"],
)
async def test_every_app_path_answers_the_page_uncached(
    client: Any, static: Path, path: str
) -> None:
    response = await client.get(path)
    assert response.status_code == 200
    assert await response.get_data(as_text=True) == INDEX
    assert response.headers["Content-Type"].startswith("text/html")
    assert response.headers["Cache-Control"] == "no-cache"
    assert_strict_headers(response)


async def test_hashed_assets_are_cached_for_a_year(client: Any, static: Path) -> None:
    response = await client.get("/assets/app-1a2b.js")
    assert response.status_code == 200
    assert await response.get_data(as_text=True) == "console.log(1)"
    assert "javascript" in response.headers["Content-Type"]
    assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert_strict_headers(response)


async def test_unhashed_files_revalidate(client: Any, static: Path) -> None:
    response = await client.get("/favicon.svg")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-cache"


@pytest.mark.parametrize("path", ["/assets/gone-0000.js", "/assets/../index.html"])
async def test_a_missing_asset_is_404_never_the_page(client: Any, static: Path, path: str) -> None:
    response = await client.get(path)
    assert response.status_code == 404
    assert await response.get_data(as_text=True) != INDEX


@pytest.mark.parametrize(
    "outside",
    ["../secret.txt", "assets/../../secret.txt", "..%2fsecret.txt", "x/../../secret.txt"],
)
async def test_a_path_out_of_the_build_folder_tells_nothing_about_what_is_there(
    client: Any, static: Path, outside: str
) -> None:
    (static.parent / "secret.txt").write_text("not for the web")
    present = await client.get("/" + outside)
    absent = await client.get("/" + outside.replace("secret", "absent"))
    assert present.status_code == absent.status_code
    assert await present.get_data() == await absent.get_data()
    assert b"not for the web" not in await present.get_data()


async def test_the_build_stamp_is_not_served(client: Any, static: Path) -> None:
    response = await client.get("/.source-hash")
    assert await response.get_data(as_text=True) == INDEX


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE"])
async def test_unknown_api_paths_keep_their_json_404(
    client: Any, static: Path, method: str
) -> None:
    response = await client.open("/api/v1/no-such-thing", method=method)
    assert response.status_code == 404
    assert (await response.get_json())["code"] == "not_found"


async def test_api_routes_are_not_the_pages(client: Any, static: Path) -> None:
    response = await client.get("/api/v1/auth/status")
    assert response.status_code == 200
    assert "needsSetup" in await response.get_json()
    assert "Content-Security-Policy" not in response.headers


async def test_without_a_build_the_page_says_how_to_build(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web_plugin, "STATIC", tmp_path / "nothing")
    response = await client.get("/")
    assert response.status_code == 503
    assert "hostgate_web.assets" in await response.get_data(as_text=True)


class _Scripts(HTMLParser):
    """Collects inline script bodies and inline event handlers of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.inline: list[str] = []
        self._in_inline_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name.lower() for name, _ in attrs}
        self.inline += [f"{tag} {name}=" for name in names if name.startswith("on")]
        self._in_inline_script = tag == "script" and "src" not in names

    def handle_endtag(self, tag: str) -> None:
        self._in_inline_script = False

    def handle_data(self, data: str) -> None:
        if self._in_inline_script and data.strip():
            self.inline.append(data.strip()[:80])


def test_the_built_pages_need_no_inline_script() -> None:
    """The CSP refuses inline script: the shipped pages must not rely on any."""
    ensure_built()
    pages = list(STATIC.rglob("*.html"))
    assert STATIC / "index.html" in pages
    for page in pages:
        scripts = _Scripts()
        scripts.feed(page.read_text())
        assert scripts.inline == [], page
