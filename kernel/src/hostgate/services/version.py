"""Version info: the running version and the latest release from a feed, cached."""

from __future__ import annotations

import asyncio
import importlib.metadata
import time
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from ..kernel import Kernel

CACHE_SECONDS = 15 * 60


def current_version() -> str:
    """The installed kernel version."""
    try:
        return importlib.metadata.version("hostgate-kernel")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0"


def version_tuple(text: str) -> tuple[int, ...]:
    """``v1.2.3`` -> ``(1, 2, 3)``; non-numeric parts stop the tuple."""
    parts = []
    for piece in text.strip().lstrip("vV").split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if digits != piece:
            break
    return tuple(parts)


def parse_feed(payload: Any) -> tuple[str, str]:
    """``(latest, release url)`` from a PyPI JSON document or a ``{version, url}`` feed."""
    if isinstance(payload, dict) and isinstance(payload.get("info"), dict):
        info = payload["info"]
        version = str(info["version"])
        url = info.get("release_url") or info.get("package_url") or ""
        return version, str(url)
    if isinstance(payload, dict) and "version" in payload:
        return str(payload["version"]), str(payload.get("url", ""))
    if isinstance(payload, dict) and "tag_name" in payload:
        return str(payload["tag_name"]), str(payload.get("html_url", ""))
    raise ValueError("the release feed answered in an unknown format")


class VersionChecker:
    """Fetches the latest version at most every 15 minutes (``force`` skips the cache)."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._cached: dict[str, Any] | None = None
        self._cached_at = 0.0
        self._lock = asyncio.Lock()

    async def info(self, *, force: bool = False) -> dict[str, Any]:
        """The spec's version info."""
        async with self._lock:
            fresh = time.monotonic() - self._cached_at < CACHE_SECONDS
            if self._cached is not None and fresh and not force:
                return dict(self._cached)
            self._cached = await self._fetch()
            self._cached_at = time.monotonic()
            return dict(self._cached)

    async def _fetch(self) -> dict[str, Any]:
        current = current_version()
        result: dict[str, Any] = {
            "current": current,
            "latest": None,
            "updateAvailable": False,
            "releaseUrl": None,
            "fetchError": None,
        }
        url = self.kernel.config.version_feed_url
        timeout = self.kernel.config.version_timeout_seconds
        try:
            async with httpx.AsyncClient(timeout=timeout) as client:
                response = await asyncio.wait_for(client.get(url), timeout + 1)
            if response.status_code != 200:
                result["fetchError"] = f"release feed returned HTTP {response.status_code}"
                return result
            latest, release_url = parse_feed(response.json())
        except (httpx.HTTPError, TimeoutError) as exc:
            result["fetchError"] = f"could not reach the release feed: {type(exc).__name__}"
            return result
        except (ValueError, KeyError) as exc:
            result["fetchError"] = f"could not read the release feed: {exc}"
            return result
        newer = version_tuple(latest) > version_tuple(current)
        result.update(
            latest=latest, updateAvailable=newer, releaseUrl=release_url if newer else None
        )
        return result
