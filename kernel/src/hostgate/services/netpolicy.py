"""The target network policy: which hosts and addresses the gateway may connect to.

Three settings hold the rules, ``network.allow``, ``network.deny`` and
``network.protected``: lists of CIDR ranges (``10.0.0.0/8``, ``2001:db8::/32``, a
single address), host-name patterns (``*.corp.example``, ``db?.example``) and the
keywords ``loopback``, ``private``, ``link-local``, ``metadata``, separated by
commas, spaces or new lines.

A target matching ``network.deny`` is refused; one matching ``network.protected``
(by default loopback, link-local and the cloud metadata services) is refused
unless an entry of ``network.allow`` covers it; a non-empty ``network.allow``
refuses everything it does not cover. The gateway's own listening address and
port are refused whatever the lists say.

``resolve_allowed`` checks the name, resolves it once, checks every address it
resolves to, and returns the one address the caller must connect to, so neither
a name that resolves to a denied address nor a DNS answer that changes between
check and connect gets through.
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
from typing import TYPE_CHECKING, NoReturn

from ..errors import ApiError, PermissionDenied, RemoteTimeout, RemoteUnreachable

if TYPE_CHECKING:
    from ..config import Config
    from .audit.audit import AuditLog
    from .identity.identity import Caller
    from .settings import Settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOW_KEY = "network.allow"
DENY_KEY = "network.deny"
PROTECTED_KEY = "network.protected"
PROTECTED_DEFAULT = "loopback, link-local, metadata"
RESOLVE_TIMEOUT = 10.0

# Cloud instance metadata services: credentials for the machine the gateway runs on.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, Oracle, DigitalOcean, OpenStack
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.169.253",  # AWS VPC DNS
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::253",
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure WireServer
        "192.0.0.192",  # Oracle Cloud (classic)
    )
)
METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.internal",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
    }
)

_KEYWORDS: dict[str, Callable[[Address], bool]] = {
    "loopback": lambda a: a.is_loopback,
    "private": lambda a: a.is_private,
    "link-local": lambda a: a.is_link_local,
    "metadata": lambda a: a in METADATA_ADDRESSES,
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

    def matches_name(self, host: str) -> bool:
        """True when the host name alone falls under this rule (checked before resolving)."""
        if self.pattern is not None:
            return fnmatch.fnmatchcase(host, self.pattern)
        return self.keyword == "metadata" and host in METADATA_NAMES

    def matches(self, host: str, address: Address) -> bool:
        """True when the host name or the address falls under this rule."""
        if self.pattern is not None:
            return fnmatch.fnmatchcase(host, self.pattern)
        if self.matches_name(host):
            return True
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


def _protected_reason(rule: Rule) -> str:
    return f"matches {PROTECTED_KEY} entry {rule.text!r} and no {ALLOW_KEY} entry"


def name_refusal(
    host: str, allow: Iterable[Rule], deny: Iterable[Rule], protected: Iterable[Rule] = ()
) -> str | None:
    """The reason the host name alone is refused (before any DNS lookup), or None."""
    name = host.lower().rstrip(".")
    for rule in deny:
        if rule.matches_name(name):
            return f"matches {DENY_KEY} entry {rule.text!r}"
    if any(rule.matches_name(name) for rule in allow):
        return None
    for rule in protected:
        if rule.matches_name(name):
            return _protected_reason(rule)
    return None


def refusal(
    host: str,
    addresses: Sequence[Address],
    allow: Iterable[Rule],
    deny: Iterable[Rule],
    protected: Iterable[Rule] = (),
) -> tuple[Address, str] | None:
    """``(address, reason)`` of the first address the rules refuse, or None when all pass."""
    name = host.lower().rstrip(".")
    allow, deny, protected = tuple(allow), tuple(deny), tuple(protected)
    for address in addresses:
        forms = _forms(address)
        for rule in deny:
            if any(rule.matches(name, form) for form in forms):
                return address, f"matches {DENY_KEY} entry {rule.text!r}"
        if any(rule.matches(name, form) for rule in allow for form in forms):
            continue
        for rule in protected:
            if any(rule.matches(name, form) for form in forms):
                return address, _protected_reason(rule)
        if allow:
            return address, f"not covered by {ALLOW_KEY}"
    return None


CONCEALED_CODES = frozenset(
    {"target_denied", "remote_error", "remote_unreachable", "remote_timeout"}
)
UNREACHABLE = "The connection's target cannot be reached"


def conceal(caller: Caller | None, error: ApiError) -> ApiError:
    """The error a caller may see when a connection's target fails.

    A caller who may not create connections learns nothing about the network: a
    refusal by the policy, a refused port, a timeout and a failed handshake all
    read the same (502 ``target_unreachable``), so a connection cannot be used to
    learn which ports are open. Others, and every other error, pass unchanged;
    the audit log keeps the real reason.
    """
    if caller is None or caller.can("connections.create") or error.code not in CONCEALED_CODES:
        return error
    return RemoteUnreachable(UNREACHABLE, code="target_unreachable")


def is_local_address(address: Address) -> bool:
    """True when this machine owns ``address`` (a socket can be bound to it)."""
    if address.is_loopback or address.is_unspecified:
        return True
    family = socket.AF_INET if address.version == 4 else socket.AF_INET6
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((str(address), 0))
    except OSError:
        return False
    return True


class NetworkPolicy:
    """Resolve-and-check for every outbound connection the gateway makes."""

    def __init__(self, *, settings: Settings, config: Config, audit: AuditLog) -> None:
        self.settings = settings
        self.config = config
        self.audit = audit

    def rules(self) -> tuple[tuple[Rule, ...], tuple[Rule, ...], tuple[Rule, ...]]:
        """The current ``(allow, deny, protected)`` rules."""
        settings = self.settings
        return (
            parse_rules(str(settings.get(ALLOW_KEY) or "")),
            parse_rules(str(settings.get(DENY_KEY) or "")),
            parse_rules(str(settings.get(PROTECTED_KEY) or "")),
        )

    def is_gateway(self, address: Address, port: int) -> bool:
        """True when ``address:port`` reaches this gateway's own listening socket."""
        config = self.config
        if port != config.port:
            return False
        try:
            bound = ipaddress.ip_address(config.host.strip("[]"))
        except ValueError:
            bound = None
        forms = _forms(address)
        if bound is not None and not bound.is_unspecified:
            return bound in forms or any(form.is_loopback for form in forms)
        return any(is_local_address(form) for form in forms)

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
        audit: bool = True,
    ) -> str:
        """Resolve ``host``, check every address, return the approved IP to connect to.

        Raises PermissionDenied (code ``target_denied``) and, unless ``audit`` is
        False (a periodic probe), writes a ``network.denied`` audit entry when the
        policy refuses the name or any address.
        """
        allow, deny, protected = self.rules()
        reason = name_refusal(host, allow, deny, protected)
        if reason is not None:
            await self._refuse(host, port, host, reason, actor, purpose, audit)
        addresses = await self.resolve(host, port)
        refused = refusal(host, addresses, allow, deny, protected)
        if refused is None:
            own = next((a for a in addresses if self.is_gateway(a, port)), None)
            if own is not None:
                refused = own, "it is the gateway's own listening address"
        if refused is not None:
            address, reason = refused
            await self._refuse(host, port, str(address), reason, actor, purpose, audit)
        return str(addresses[0])

    async def check_beyond(
        self, host: str, port: int, *, actor: Caller | None = None, purpose: str = "connection"
    ) -> str:
        """Check a host the gateway reaches through a jump host; return it unresolved.

        The previous hop resolves the name, so the gateway checks what it knows: the
        name against the rules, and the address when the host is a literal IP. A
        refusal is audited and raised as for a direct target.
        """
        allow, deny, protected = self.rules()
        reason = name_refusal(host, allow, deny, protected)
        if reason is not None:
            await self._refuse(host, port, host, reason, actor, purpose, True)
        try:
            literal = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            return host
        refused = refusal(host, [literal], allow, deny, protected)
        if refused is not None:
            await self._refuse(host, port, str(literal), refused[1], actor, purpose, True)
        return str(literal)

    async def _refuse(
        self,
        host: str,
        port: int,
        address: str,
        reason: str,
        actor: Caller | None,
        purpose: str,
        audit: bool,
    ) -> NoReturn:
        """Audit ``network.denied`` (when asked to) and raise the 403 ``target_denied``."""
        if audit:
            await self.audit.record(
                "network.denied",
                actor=actor,
                target=f"{host}:{port}",
                details={
                    "host": host,
                    "port": port,
                    "address": address,
                    "purpose": purpose,
                    "reason": reason,
                },
            )
        shown = host if address == host else f"{host} ({address})"
        raise PermissionDenied(
            f"The network policy does not allow connecting to {shown}: {reason}",
            code="target_denied",
        )
