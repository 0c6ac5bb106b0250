"""What the directory code works with, none of which needs ldap3.

The settings, the errors and the user a login resolves to, and the checks made
before any connection (URL, attribute names, filter syntax, group-to-role map).
:mod:`.directory` (ldap3) is imported only where the directory is used (a login,
a connection test): ldap3 costs every start about 70 ms CPU to import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

ATTRIBUTE_NAME = re.compile(r"^(?:[A-Za-z][A-Za-z0-9-]*|\d+(?:\.\d+)+)$")


class DirectoryError(Exception):
    """The directory could not be used; ``str(error)`` is safe to show an admin."""

    reason = "directory_error"


class DirectoryUnreachable(DirectoryError):
    """No connection (network, TLS handshake or certificate problem)."""

    reason = "ldap_unreachable"


class DirectoryMisconfigured(DirectoryError):
    """The settings are incomplete or wrong (bad URL, service bind refused, bad base)."""

    reason = "ldap_misconfigured"


class DirectoryRefused(DirectoryUnreachable):
    """The network policy does not allow connecting to the directory's address."""

    reason = "ldap_target_denied"


class AmbiguousUser(DirectoryError):
    """More than one entry matched the login name."""

    reason = "ldap_ambiguous_user"


@dataclass(frozen=True)
class DirectorySettings:
    """What is needed to reach and search the directory."""

    url: str
    bind_dn: str
    bind_password: str
    search_base: str
    username_attr: str = "uid"
    user_filter: str = ""
    email_attr: str = "mail"
    display_name_attr: str = "cn"
    group_search_base: str = ""
    starttls: bool = False
    tls_verify: bool = True
    ca_cert: str = ""
    timeout: int = 5
    address: str = ""
    """The IP address the network policy approved for the URL's host (empty: the host)."""

    @classmethod
    def from_settings(cls, get: Any) -> DirectorySettings:
        """Build from the instance settings (``get`` is ``kernel.settings.get``)."""
        return cls(
            url=str(get("auth.ldap_url") or "").strip(),
            bind_dn=str(get("auth.ldap_bind_dn") or "").strip(),
            bind_password=str(get("auth.ldap_bind_password") or ""),
            search_base=str(get("auth.ldap_search_base") or "").strip(),
            username_attr=str(get("auth.ldap_username_attr") or "uid").strip(),
            user_filter=str(get("auth.ldap_user_filter") or "").strip(),
            email_attr=str(get("auth.ldap_email_attr") or "").strip(),
            display_name_attr=str(get("auth.ldap_display_name_attr") or "").strip(),
            group_search_base=str(get("auth.ldap_group_search_base") or "").strip(),
            starttls=bool(get("auth.ldap_starttls")),
            tls_verify=bool(get("auth.ldap_tls_verify")),
            ca_cert=str(get("auth.ldap_ca_cert") or "").strip(),
            timeout=int(get("auth.ldap_timeout_seconds") or 5),
        )


@dataclass(frozen=True)
class DirectoryUser:
    """The entry a login name resolved to."""

    dn: str
    username: str
    display_name: str
    email: str
    groups: tuple[str, ...]


def check_filter(text: str) -> None:
    """Raise ValueError unless ``text`` is empty or one balanced, parenthesised filter."""
    if not text:
        return
    if not (text.startswith("(") and text.endswith(")")):
        raise ValueError("must be an LDAP filter in parentheses, e.g. (objectClass=person)")
    depth = 0
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0 or (depth == 0 and index != len(text) - 1):
                raise ValueError("parentheses are not balanced")
    if depth != 0:
        raise ValueError("parentheses are not balanced")


def endpoint(settings: DirectorySettings) -> tuple[str, int, bool]:
    """``(host, port, use_ssl)`` of the configured URL; DirectoryMisconfigured when it is bad."""
    if not settings.url:
        raise DirectoryMisconfigured("No LDAP URL is configured")
    shape = "The LDAP URL must look like ldap://host:389 or ldaps://host"
    try:
        parts = urlsplit(settings.url)
        hostname = parts.hostname
    except ValueError:  # e.g. an unclosed IPv6 bracket
        raise DirectoryMisconfigured(shape) from None
    if parts.scheme not in {"ldap", "ldaps"} or not hostname:
        raise DirectoryMisconfigured(shape)
    try:
        port = parts.port
    except ValueError:
        raise DirectoryMisconfigured("The LDAP URL has an invalid port") from None
    use_ssl = parts.scheme == "ldaps"
    return hostname, port or (636 if use_ssl else 389), use_ssl


def check_attributes(settings: DirectorySettings) -> None:
    """Raise DirectoryMisconfigured unless attribute names, search base and filter are usable."""
    for label, value in (
        ("username attribute", settings.username_attr),
        ("e-mail attribute", settings.email_attr),
        ("display name attribute", settings.display_name_attr),
    ):
        if value and not ATTRIBUTE_NAME.match(value):
            raise DirectoryMisconfigured(f"The {label} {value!r} is not a valid attribute name")
    if not settings.username_attr:
        raise DirectoryMisconfigured("No username attribute is configured")
    if not settings.search_base:
        raise DirectoryMisconfigured("No search base is configured")
    try:
        check_filter(settings.user_filter)
    except ValueError as exc:
        raise DirectoryMisconfigured(f"The user filter {exc}") from None


def redact(message: str, *secrets: str) -> str:
    """``message`` with every non-empty secret replaced (belt and braces for error text)."""
    for secret in secrets:
        if secret:
            message = message.replace(secret, "[redacted]")
    return message


def role_for_groups(groups: Sequence[str], mapping: Mapping[str, str]) -> str | None:
    """The role of the first mapping entry whose group DN the user is in (case-insensitive)."""
    held = {_normalise_dn(g) for g in groups}
    for group, role in mapping.items():
        if _normalise_dn(group) in held:
            return role
    return None


def _normalise_dn(dn: str) -> str:
    return ",".join(part.strip() for part in dn.split(",")).lower()
