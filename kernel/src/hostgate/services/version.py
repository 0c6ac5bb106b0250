"""Version info: the running version and the latest release from a feed, cached.

The feed is the setting ``updates.feed_url``; empty turns the check off and the
gateway makes no outbound call at all. The fetch goes through the kernel's one
outbound HTTP client (``kernel.outbound``): the target network
policy applies, the checked address is the one connected to, and proxy
variables from the environment are ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.metadata
import json
import time
import uuid
from typing import TYPE_CHECKING, Any

from ..cluster.lease import Lease, LocalLease
from ..cluster.shared import KEY_PREFIX, reaching
from ..errors import ApiError, InvalidInput, SharedStateUnavailable
from ..security.ratelimit import Limit

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from ..cluster.bus import Bus
    from .outbound import Outbound
    from .settings import Settings

CACHE_SECONDS = 15 * 60
FEED_KEY = "updates.feed_url"
DEFAULT_FEED = "https://pypi.org/pypi/hostgate/json"
FEED_LIMIT = 8 * 1024 * 1024  # PyPI's document lists every release
FORCE_BUCKET = "version.force"
FORCE_PER_USER = Limit(5, 60)
SHARED_KEY = f"{KEY_PREFIX}version"
"""Several nodes: the lease holder's last answer (JSON), expiring after CACHE_SECONDS."""
CHECK_TOPIC = "version.check"
"""Bus: a node without the lease asks the holder to check (``{"force": bool}``)."""


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


@functools.cache
def current_version() -> str:
    """The installed kernel version (read once per process: every app built asks)."""
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
    """Fetches the latest version at most every 15 minutes (``force`` skips the cache).

    Several nodes (a Redis): only the node that holds the lease for once-only work
    calls the feed; it stores the answer in Redis (``hostgate:version``, expiring
    after the 15 minutes) where every node reads it. A node that finds nothing
    there (or is forced) asks the holder over the bus and waits for the new answer
    (at most the feed timeout and 2 s), so N nodes make one feed request per 15
    minutes, not N.
    """

    def __init__(
        self,
        *,
        settings: Settings,
        outbound: Outbound,
        timeout: float,
        lease: Lease | None = None,
        bus: Bus | None = None,
        redis: Redis | None = None,
    ) -> None:
        self.settings = settings
        self.outbound = outbound
        self.timeout = timeout
        self.lease: Lease = lease or LocalLease()
        self._bus = bus
        self._redis = redis
        self._cached: dict[str, Any] | None = None
        self._cached_url = ""
        self._cached_at = 0.0
        self._lock = asyncio.Lock()
        self.fetches = 0
        """Feed requests this node made (tests check only the lease holder makes them)."""
        if bus is not None and redis is not None:
            bus.subscribe(CHECK_TOPIC, self._asked)

    async def info(self, *, force: bool = False) -> dict[str, Any]:
        """The spec's version info (a changed feed URL is fetched anew)."""
        url = str(self.settings.get(FEED_KEY) or "")
        if self._redis is None:
            async with self._lock:
                fresh = time.monotonic() - self._cached_at < CACHE_SECONDS
                if self._cached is not None and fresh and not force and url == self._cached_url:
                    return dict(self._cached)
                self._cached = await self._fetch(url)
                self._cached_url = url
                self._cached_at = time.monotonic()
                return dict(self._cached)
        shared = await self._shared()
        if not force and shared is not None and shared.get("url") == url:
            return dict(shared["result"])
        if self.lease.held():
            return await self._check_here(url, force=force, seen=shared)
        return await self._ask_holder(url, force=force, seen=shared)

    async def _check_here(
        self, url: str, *, force: bool, seen: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The lease holder: fetch (once for concurrent askers) and store for every node."""
        async with self._lock:
            shared = await self._shared()
            if shared is not None and shared.get("url") == url:
                newer = seen is None or shared.get("serial") != seen.get("serial")
                if not force or newer:  # fetched meanwhile: that is the answer
                    return dict(shared["result"])
            result = await self._fetch(url)
            entry = {"url": url, "result": result, "serial": uuid.uuid4().hex}
            try:
                assert self._redis is not None
                with reaching():
                    await self._redis.set(SHARED_KEY, json.dumps(entry), ex=CACHE_SECONDS)
            except SharedStateUnavailable:
                pass  # answered here all the same; the next ask fetches again
            self._cached, self._cached_url = entry, url
            return dict(result)

    async def _ask_holder(
        self, url: str, *, force: bool, seen: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Another node holds the lease: ask it, wait for its answer in Redis."""
        assert self._bus is not None
        with contextlib.suppress(SharedStateUnavailable):
            await self._bus.publish(CHECK_TOPIC, {"force": force})
        deadline = time.monotonic() + self.timeout + 2.0
        while time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            shared = await self._shared()
            if shared is None or shared.get("url") != url:
                continue
            if seen is None or shared.get("serial") != seen.get("serial"):
                return dict(shared["result"])
        if seen is not None and seen.get("url") == url:
            return dict(seen["result"])  # the last answer, older than asked for
        result = self._unchecked()
        result["fetchError"] = (
            "the update check is made by the gateway node holding the lease, "
            "which did not answer in time"
        )
        return result

    async def _asked(self, message: dict[str, Any]) -> None:
        """Bus: another node wants the check; the lease holder makes it."""
        if self.lease.held():
            await self.info(force=bool(message.get("force")))

    async def _shared(self) -> dict[str, Any] | None:
        """The answer every node reads (None: none yet, expired, or Redis unreachable)."""
        assert self._redis is not None
        try:
            with reaching():
                raw = await self._redis.get(SHARED_KEY)
        except SharedStateUnavailable:
            return self._cached  # this node's last copy
        try:
            entry = json.loads(raw) if raw else None
        except ValueError:
            return None
        if not isinstance(entry, dict) or not isinstance(entry.get("result"), dict):
            return None
        self._cached = entry
        return entry

    @staticmethod
    def _unchecked() -> dict[str, Any]:
        return {
            "current": current_version(),
            "latest": None,
            "updateAvailable": False,
            "releaseUrl": None,
            "fetchError": None,
        }

    async def _fetch(self, url: str) -> dict[str, Any]:
        result = self._unchecked()
        current = result["current"]
        if not url:
            return result  # the check is off: no outbound call at all
        self.fetches += 1
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
