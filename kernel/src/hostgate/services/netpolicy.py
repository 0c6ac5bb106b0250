"""The target network policy: which hosts and addresses the gateway may connect to.

Two settings hold the rules, ``network.allow`` and ``network.deny``: lists of
CIDR ranges (``10.0.0.0/8``, ``2001:db8::/32``, a single address), host-name
patterns (``*.corp.example``, ``db?.example``) and the keywords ``loopback``,
``private``, ``link-local``, separated by commas, spaces or new lines.

``resolve_allowed`` resolves a host once, checks every address it resolves to,
and returns the one address the caller must connect to, so neither a name that
resolves to a denied address nor a DNS answer that changes between check and
connect gets through. Empty lists allow everything.
"""

from __future__ import annotations

import asyncio
import fnmatch
import ipaddress
import re
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from ..errors import PermissionDenied, RemoteTimeout, RemoteUnreachable

if TYPE_CHECKING:
    from ..kernel import Kernel
    from .identity import Caller

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOW_KEY = "network.allow"
DENY_KEY = "network.deny"
RESOLVE_TIMEOUT = 10.0

_KEYWORDS: dict[str, Callable[[Address], bool]] = {
    "loopback": lambda a: a.is_loopback,
    "private": lambda a: a.is_private,
    "link-local": lambda a: a.is_link_local,
}
_PATTERN = re.compile(r"^[a-z0-9*?_.-]+$")
_NUMERIC_PATTERN = re.compile(r"^[0-9*?.]+$")
_SEPARATORS = re.compile(r"[\s,]+")


@dataclass(frozen=True)
class Rule:
    """One entry of an allow or deny list."""

    text: str
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    pattern: str | None = None
    keyword: str | None = None

    def matches(self, host: str, address: Address) -> bool:
        """True when the host name or the address falls under this rule."""
        if self.pattern is not None:
            return fnmatch.fnmatchcase(host, self.pattern)
        if self.keyword is not None:
            return _KEYWORDS[self.keyword](address)
        assert self.network is not None
        return address.version == self.network.version and address in self.network


def parse_rule(entry: str) -> Rule:
    """Parse one entry; ValueError says what is wrong with it."""
    text = entry.strip().lower()
    if text in _KEYWORDS:
        return Rule(text, keyword=text)
    if "/" in text or ":" in text or text.replace(".", "").isdigit():
        try:
            return Rule(text, network=ipaddress.ip_network(text, strict=False))
        except ValueError:
            raise ValueError(f"{entry!r} is not a valid address or CIDR range") from None
    if not _PATTERN.match(text):
        raise ValueError(
            f"{entry!r} is neither a CIDR range nor a host pattern "
            "(letters, digits, '.', '-', '_', '*' and '?')"
        )
    if _NUMERIC_PATTERN.match(text):
        raise ValueError(f"{entry!r}: write address ranges in CIDR notation, e.g. 10.0.0.0/8")
    return Rule(text, pattern=text.rstrip("."))


@lru_cache(maxsize=32)
def parse_rules(text: str) -> tuple[Rule, ...]:
    """Parse a whole list setting (commas, spaces or new lines between entries)."""
    return tuple(parse_rule(part) for part in _SEPARATORS.split(text or "") if part)


def validate_rules(value: object) -> None:
    """Setting validator: raise ValueError naming the first bad entry."""
    if isinstance(value, str):
        parse_rules(value)


def _forms(address: Address) -> list[Address]:
    """The address and what it really reaches (IPv4-mapped, unspecified = this host)."""
    forms: list[Address] = [address]
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        forms.append(address.ipv4_mapped)
    for form in list(forms):
        if form.is_unspecified:
            forms.append(
                ipaddress.IPv4Address("127.0.0.1")
                if form.version == 4
                else ipaddress.IPv6Address("::1")
            )
    return forms


def refusal(
    host: str, addresses: Sequence[Address], allow: Iterable[Rule], deny: Iterable[Rule]
) -> tuple[Address, str] | None:
    """``(address, reason)`` of the first address the rules refuse, or None when all pass."""
    name = host.lower().rstrip(".")
    allow, deny = tuple(allow), tuple(deny)
    for address in addresses:
        forms = _forms(address)
        for rule in deny:
            if any(rule.matches(name, form) for form in forms):
                return address, f"matches {DENY_KEY} entry {rule.text!r}"
        if allow and not any(rule.matches(name, form) for rule in allow for form in forms):
            return address, f"not covered by {ALLOW_KEY}"
    return None


class NetworkPolicy:
    """Resolve-and-check for every outbound connection the gateway makes."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def rules(self) -> tuple[tuple[Rule, ...], tuple[Rule, ...]]:
        """The current ``(allow, deny)`` rules."""
        settings = self.kernel.settings
        return (
            parse_rules(str(settings.get(ALLOW_KEY) or "")),
            parse_rules(str(settings.get(DENY_KEY) or "")),
        )

    async def resolve(self, host: str, port: int) -> list[Address]:
        """Every address a host resolves to (IPv4 first); Remote* errors when it cannot."""
        try:
            return [ipaddress.ip_address(host.strip("[]"))]
        except ValueError:
            pass
        loop = asyncio.get_running_loop()
        try:
            infos = await asyncio.wait_for(
                loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT
            )
        except TimeoutError:
            raise RemoteTimeout(f"resolving {host} timed out") from None
        except (socket.gaierror, UnicodeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise RemoteUnreachable(f"cannot resolve {host}: {reason}") from None
        found: list[Address] = []
        for info in infos:
            text = str(info[4][0]).split("%", 1)[0]
            address = ipaddress.ip_address(text)
            if address not in found:
                found.append(address)
        if not found:
            raise RemoteUnreachable(f"cannot resolve {host}")
        return sorted(found, key=lambda a: a.version)

    async def resolve_allowed(
        self,
        host: str,
        port: int,
        *,
        actor: Caller | None = None,
        purpose: str = "connection",
    ) -> str:
        """Resolve ``host``, check every address, return the approved IP to connect to.

        Raises PermissionDenied (code ``target_denied``) and writes a
        ``network.denied`` audit entry when the policy refuses any address.
        """
        addresses = await self.resolve(host, port)
        allow, deny = self.rules()
        refused = refusal(host, addresses, allow, deny)
        if refused is not None:
            address, reason = refused
            await self.kernel.audit.record(
                "network.denied",
                actor=actor,
                target=f"{host}:{port}",
                details={
                    "host": host,
                    "port": port,
                    "address": str(address),
                    "purpose": purpose,
                    "reason": reason,
                },
            )
            shown = host if str(address) == host else f"{host} ({address})"
            raise PermissionDenied(
                f"The network policy does not allow connecting to {shown}: {reason}",
                code="target_denied",
            )
        return str(addresses[0])
