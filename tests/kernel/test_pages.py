"""``register_pages``: blueprints at the site root, never in front of the kernel's paths."""

from __future__ import annotations

from typing import Any

import pytest
from hostgate import hookimpl
from hostgate.guards import public
from quart import Blueprint

pages = Blueprint("testpages", __name__)


@pages.get("/")
@pages.get("/<path:path>")
@public
async def page(path: str = "") -> tuple[str, int, dict[str, str]]:
    """Every GET path answers a page (as a careless catch-all would)."""
    return f"page {path}", 200, {"Content-Type": "text/plain"}


class PagesPack:
    """A pack with one catch-all page blueprint."""

    @hookimpl
    def register_pages(self) -> list[Blueprint]:
        """The catch-all pages."""
        return [pages]


@pytest.fixture
def plugins(plugins: list[object]) -> list[object]:
    """The default test packs plus the pages one."""
    return [*plugins, PagesPack()]


async def test_a_page_blueprint_is_mounted_at_the_root(client: Any) -> None:
    root = await client.get("/")
    deep = await client.get("/connections/abc")
    assert (root.status_code, await root.get_data(as_text=True)) == (200, "page ")
    assert (deep.status_code, await deep.get_data(as_text=True)) == (200, "page connections/abc")


@pytest.mark.parametrize("path", ["/api/v1/no-such-route", "/api/other", "/ws/nothing"])
async def test_a_page_never_answers_the_kernels_paths(client: Any, path: str) -> None:
    response = await client.get(path)
    assert response.status_code == 404
    assert (await response.get_json())["code"] == "not_found"


async def test_kernel_routes_still_win_over_a_catch_all_page(client: Any) -> None:
    status = await client.get("/api/v1/auth/status")
    health = await client.get("/health")
    assert status.status_code == 200 and "needsSetup" in await status.get_json()
    assert health.status_code == 200
