"""Version info: the running version and the latest release from a feed, cached.

The feed is the setting ``updates.feed_url``; empty turns the check off and the
gateway makes no outbound call at all. The fetch goes through the kernel's one
outbound HTTP client (``kernel.notifications.outbound``): the target network
policy applies, the checked address is the one connected to, and proxy
variables from the environment are ignored.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import time
from typing import TYPE_CHECKING, Any

from ..errors import ApiError, InvalidInput
from ..security.ratelimit import Limit

if TYPE_CHECKING:
    from .notifications.outbound import Outbound
    from .settings import Settings

CACHE_SECONDS = 15 * 60
FEED_KEY = "updates.feed_url"
DEFAULT_FEED = "https://pypi.org/pypi/hostgate/json"
FEED_LIMIT = 8 * 1024 * 1024  # PyPI's document lists every release
FORCE_BUCKET = "version.force"
FORCE_PER_USER = Limit(5, 60)


def validate_feed_url(value: object) -> None:
    """Setting validator: empty, or an http(s) URL with a host."""
    import httpx

    if not isinstance(value, str) or not value:
        return
    try:
        url = httpx.URL(value)
    except (httpx.InvalidURL, TypeError, ValueError):
        raise ValueError("must be an http:// or https:// URL, or empty") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError("must be an http:// or https:// URL, or empty")


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

    def __init__(self, *, settings: Settings, outbound: Outbound, timeout: float) -> None:
        self.settings = settings
        self.outbound = outbound
        self.timeout = timeout
        self._cached: dict[str, Any] | None = None
        self._cached_url = ""
        self._cached_at = 0.0
        self._lock = asyncio.Lock()

    async def info(self, *, force: bool = False) -> dict[str, Any]:
        """The spec's version info (a changed feed URL is fetched anew)."""
        async with self._lock:
            url = str(self.settings.get(FEED_KEY) or "")
            fresh = time.monotonic() - self._cached_at < CACHE_SECONDS
            if self._cached is not None and fresh and not force and url == self._cached_url:
                return dict(self._cached)
            self._cached = await self._fetch(url)
            self._cached_url = url
            self._cached_at = time.monotonic()
            return dict(self._cached)

    async def _fetch(self, url: str) -> dict[str, Any]:
        current = current_version()
        result: dict[str, Any] = {
            "current": current,
            "latest": None,
            "updateAvailable": False,
            "releaseUrl": None,
            "fetchError": None,
        }
        if not url:
            return result  # the check is off: no outbound call at all
        timeout = self.timeout
        outbound = self.outbound
        try:
            response = await asyncio.wait_for(
                outbound.request(
                    "GET", url, purpose="update check", timeout=timeout, limit=FEED_LIMIT
                ),
                timeout + 1,
            )
            if response.status != 200:
                result["fetchError"] = f"release feed returned HTTP {response.status}"
                return result
            latest, release_url = parse_feed(json.loads(response.body))
        except InvalidInput:
            result["fetchError"] = "the release feed URL is not valid"
            return result
        except ApiError as exc:
            result["fetchError"] = f"could not reach the release feed: {exc.code}"
            return result
        except TimeoutError:
            result["fetchError"] = "could not reach the release feed: remote_timeout"
            return result
        except (ValueError, KeyError) as exc:
            result["fetchError"] = f"could not read the release feed: {exc}"
            return result
        newer = version_tuple(latest) > version_tuple(current)
        result.update(
            latest=latest, updateAvailable=newer, releaseUrl=release_url if newer else None
        )
        return result
