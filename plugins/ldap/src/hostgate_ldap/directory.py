"""Talking to the directory: service bind, user search, user bind, connection test (ldap3).

Everything here is blocking ldap3 code; the routes run it in a worker thread and
import this module on first use (a login, a connection test), so a start does
not pay for ldap3. Error messages are written for admins and never contain a
password. The routes resolve the URL's host under the network policy first
(:func:`~.model.endpoint`) and hand the approved address in
``DirectorySettings.address``: ldap3 connects to it, while TLS names and
certificate checks keep the host of the URL.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping, Sequence
from ipaddress import ip_address
from typing import Any

import ldap3
from ldap3.core import exceptions as ldap_errors
from ldap3.utils.conv import escape_filter_chars

from .model import (
    AmbiguousUser,
    DirectoryMisconfigured,
    DirectorySettings,
    DirectoryUnreachable,
    DirectoryUser,
    check_attributes,
    endpoint,
)

GROUP_FILTER = (
    "(&(|(objectClass=groupOfNames)(objectClass=groupOfUniqueNames)(objectClass=group))"
    "(|(member={dn})(uniqueMember={dn})))"
)


def user_filter(username_attr: str, username: str, extra: str = "") -> str:
    """The search filter for one login name; the name is escaped (RFC 4515)."""
    match = f"({username_attr}={escape_filter_chars(username)})"
    return f"(&{match}{extra})" if extra else match


def _tls(settings: DirectorySettings, host: str) -> ldap3.Tls:
    try:
        ip_address(host)
        sni = None
    except ValueError:
        sni = host
    return ldap3.Tls(
        validate=ssl.CERT_REQUIRED if settings.tls_verify else ssl.CERT_NONE,
        ca_certs_data=settings.ca_cert or None,
        sni=sni,
        # ldap3 checks the certificate against the address it dials; the URL's host counts.
        valid_names=[host],
    )


def _server(settings: DirectorySettings) -> ldap3.Server:
    host, port, use_ssl = endpoint(settings)
    return ldap3.Server(
        settings.address or host,
        port=port,
        use_ssl=use_ssl,
        tls=_tls(settings, host),
        connect_timeout=settings.timeout,
        get_info=ldap3.NONE,
    )


def _describe(error: Exception) -> str:
    text = str(error) or type(error).__name__
    lowered = text.lower()
    if "certificate" in lowered or "ssl" in lowered or "tls" in lowered:
        return f"TLS handshake failed: {text}"
    return text


def close(connection: ldap3.Connection) -> None:
    """Unbind, ignoring a connection that is already broken."""
    try:
        connection.unbind()
    except (ldap_errors.LDAPException, OSError):
        return


def _open(settings: DirectorySettings, bind_dn: str, password: str) -> ldap3.Connection:
    """An open connection (StartTLS when configured), not yet bound."""
    server = _server(settings)
    connection = ldap3.Connection(
        server,
        user=bind_dn or None,
        password=password or None,
        authentication=ldap3.SIMPLE if bind_dn else ldap3.ANONYMOUS,
        receive_timeout=settings.timeout,
        raise_exceptions=False,
        read_only=True,
        auto_referrals=False,
    )
    try:
        connection.open()
        if settings.starttls and not server.ssl and not connection.start_tls():
            raise DirectoryUnreachable(f"StartTLS failed: {connection.result.get('message')}")
    except ldap_errors.LDAPStartTLSError as exc:
        close(connection)
        raise DirectoryUnreachable(f"StartTLS failed: {_describe(exc)}") from None
    except ldap_errors.LDAPException as exc:
        close(connection)
        raise DirectoryUnreachable(f"Cannot connect to {settings.url}: {_describe(exc)}") from None
    return connection


def _bind(connection: ldap3.Connection) -> bool:
    try:
        return bool(connection.bind())
    except ldap_errors.LDAPException as exc:
        raise DirectoryUnreachable(f"Bind failed: {_describe(exc)}") from None


def service_connection(settings: DirectorySettings) -> ldap3.Connection:
    """A connection bound as the service account (anonymous when no DN is set)."""
    connection = _open(settings, settings.bind_dn, settings.bind_password)
    if not _bind(connection):
        result = connection.result or {}
        close(connection)
        description = result.get("description") or "refused"
        if description == "invalidCredentials":
            raise DirectoryMisconfigured(
                "The service account bind was refused: invalid bind DN or password"
            )
        raise DirectoryMisconfigured(f"The service account bind was refused: {description}")
    return connection


def _first(entry: Mapping[str, Any], name: str) -> str:
    if not name:
        return ""
    value = entry.get(name)
    if isinstance(value, list | tuple):
        value = value[0] if value else ""
    return "" if value is None else str(value)


def _values(entry: Mapping[str, Any], name: str) -> list[str]:
    value = entry.get(name)
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return [str(value)]


def _group_dns(
    connection: ldap3.Connection, settings: DirectorySettings, dn: str, member_of: Sequence[str]
) -> tuple[str, ...]:
    groups = {g.strip(): None for g in member_of if g.strip()}
    base = settings.group_search_base or settings.search_base
    search = GROUP_FILTER.format(dn=escape_filter_chars(dn))
    if connection.search(base, search, ldap3.SUBTREE, attributes=[], size_limit=500):
        for found in connection.response or []:
            if found.get("type") == "searchResEntry" and found.get("dn"):
                groups.setdefault(str(found["dn"]), None)
    return tuple(groups)


def find_user(settings: DirectorySettings, username: str) -> DirectoryUser | None:
    """Search the login name with the service account; None when no entry matches."""
    check_attributes(settings)
    attributes = [
        a for a in {settings.username_attr, settings.email_attr, settings.display_name_attr} if a
    ]
    connection = service_connection(settings)
    try:
        return _find(connection, settings, username, attributes)
    except ldap_errors.LDAPException as exc:
        raise DirectoryUnreachable(f"The user search failed: {_describe(exc)}") from None
    finally:
        close(connection)


def _find(
    connection: ldap3.Connection,
    settings: DirectorySettings,
    username: str,
    attributes: list[str],
) -> DirectoryUser | None:
    connection.search(
        settings.search_base,
        user_filter(settings.username_attr, username, settings.user_filter),
        ldap3.SUBTREE,
        attributes=[*attributes, "memberOf"],
        size_limit=2,
    )
    description = (connection.result or {}).get("description") or "failed"
    entries = [e for e in connection.response or [] if e.get("type") == "searchResEntry"]
    if description == "noSuchObject":
        raise DirectoryMisconfigured("The search base does not exist")
    if description not in {"success", "sizeLimitExceeded"}:
        raise DirectoryMisconfigured(f"The user search failed: {description}")
    if not entries:
        return None
    if len(entries) > 1:
        raise AmbiguousUser("More than one directory entry matches this login name")
    entry = entries[0]
    found = entry.get("attributes") or {}
    dn = str(entry["dn"])
    groups = _group_dns(connection, settings, dn, _values(found, "memberOf"))
    return DirectoryUser(
        dn=dn,
        username=_first(found, settings.username_attr) or username,
        display_name=_first(found, settings.display_name_attr),
        email=_first(found, settings.email_attr),
        groups=groups,
    )


def check_password(settings: DirectorySettings, dn: str, password: str) -> bool:
    """True when the directory accepts a simple bind as ``dn`` with ``password``."""
    if not password:
        return False
    connection = _open(settings, dn, password)
    try:
        return _bind(connection)
    finally:
        close(connection)


def test_connection(settings: DirectorySettings) -> None:
    """Connect, bind as the service account and read the search base; raise on any failure."""
    if not settings.search_base:
        raise DirectoryMisconfigured("No search base was given")
    connection = service_connection(settings)
    try:
        _read_base(connection, settings)
    except ldap_errors.LDAPException as exc:
        raise DirectoryMisconfigured(f"Reading the search base failed: {_describe(exc)}") from None
    finally:
        close(connection)


def _read_base(connection: ldap3.Connection, settings: DirectorySettings) -> None:
    found = connection.search(
        settings.search_base, "(objectClass=*)", ldap3.BASE, attributes=[], size_limit=1
    )
    if not found:
        description = (connection.result or {}).get("description") or "failed"
        if description == "noSuchObject":
            raise DirectoryMisconfigured(f"The search base {settings.search_base!r} does not exist")
        if description == "invalidDNSyntax":
            raise DirectoryMisconfigured(
                f"The search base {settings.search_base!r} is not a valid DN"
            )
        raise DirectoryMisconfigured(f"Reading the search base failed: {description}")
