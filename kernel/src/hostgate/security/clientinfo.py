"""Who is calling from where: client IP (trusted proxies only) and User-Agent parsing."""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable
from typing import Any

from ..config import IPNetwork


@functools.lru_cache(maxsize=4096)
def normalise_ip(text: str) -> str:
    """Strip IPv4-mapped prefixes and brackets; return the text unchanged if it is no IP."""
    cleaned = text.strip().strip("[]")
    try:
        address = ipaddress.ip_address(cleaned)
    except ValueError:
        return cleaned
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return str(address.ipv4_mapped)
    return str(address)


def _trusted(address: str, proxies: Iterable[IPNetwork]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in proxies)


def client_ip(peer: str | None, headers: Any, proxies: Iterable[IPNetwork]) -> str:
    """The TCP peer, or the X-Forwarded-For hop added by a trusted proxy (rightmost untrusted)."""
    proxies = tuple(proxies)
    current = normalise_ip(peer or "")
    if not proxies or not _trusted(current, proxies):
        return current
    forwarded = headers.get("X-Forwarded-For", "")
    hops = [normalise_ip(h) for h in forwarded.split(",") if h.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, proxies):
            return hop
        current = hop
    return current


_BROWSERS = (
    ("Edg/", "Edge"),
    ("OPR/", "Opera"),
    ("Opera", "Opera"),
    ("Firefox/", "Firefox"),
    ("Chrome/", "Chrome"),
    ("MSIE", "Internet Explorer"),
    ("Trident", "Internet Explorer"),
    ("curl", "cURL"),
    ("python-httpx", "httpx"),
    ("python-requests", "requests"),
)
_SYSTEMS = (
    ("Windows NT", "Windows"),
    ("CrOS", "ChromeOS"),
    ("Android", "Android"),
    ("iPhone", "iOS"),
    ("iPad", "iOS"),
    ("iPod", "iOS"),
    ("Macintosh", "macOS"),
    ("Mac OS X", "macOS"),
    ("Linux", "Linux"),
)


@functools.lru_cache(maxsize=1024)
def parse_user_agent(agent: str | None) -> tuple[str, str]:
    """``(browser, os)`` from a User-Agent, ``Unknown`` where nothing matches."""
    if not agent:
        return "Unknown", "Unknown"
    browser = next((name for token, name in _BROWSERS if token in agent), None)
    if browser is None:
        browser = "Safari" if "Safari/" in agent and "Version/" in agent else "Unknown"
    system = next((name for token, name in _SYSTEMS if token in agent), "Unknown")
    return browser, system
