"""The pack's own settings (the spec's ``auth.ldap_*`` keys belong to the kernel)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hostgate import SettingSpec

from .model import ATTRIBUTE_NAME, check_filter


def parse_role_map(text: str) -> dict[str, str]:
    """``auth.ldap_group_role_map`` as a dict (group DN -> role name); ValueError if malformed."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"must be a JSON object: {exc.msg}") from None
    if not isinstance(value, Mapping):
        raise ValueError(
            'must be a JSON object like {"cn=admins,ou=groups,dc=example,dc=org": "admin"}'
        )
    out: dict[str, str] = {}
    for group, role in value.items():
        if not isinstance(group, str) or not group.strip():
            raise ValueError("group DNs must be non-empty strings")
        if not isinstance(role, str) or not role.strip():
            raise ValueError(f"the role for {group!r} must be a non-empty role name")
        out[group.strip()] = role.strip()
    return out


def _role_map(value: Any) -> None:
    parse_role_map(str(value))


def _filter(value: Any) -> None:
    check_filter(str(value).strip())


def _attribute(value: Any) -> None:
    text = str(value).strip()
    if text and not ATTRIBUTE_NAME.match(text):
        raise ValueError("must be an attribute name such as mail or displayName")


def _pem(value: Any) -> None:
    text = str(value).strip()
    if text and "-----BEGIN CERTIFICATE-----" not in text:
        raise ValueError("must be one or more PEM certificates (-----BEGIN CERTIFICATE-----)")


LDAP_SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "auth.ldap_bind_password",
        str,
        "",
        secret=True,
        max_length=1024,
        description="Password of the service bind DN (stored encrypted)",
    ),
    SettingSpec(
        "auth.ldap_user_filter",
        str,
        "",
        max_length=1000,
        validate=_filter,
        description="Extra LDAP filter ANDed with the username match, "
        "e.g. (objectClass=person); empty for none",
    ),
    SettingSpec(
        "auth.ldap_email_attr",
        str,
        "mail",
        max_length=100,
        validate=_attribute,
        description="Attribute holding the e-mail address",
    ),
    SettingSpec(
        "auth.ldap_display_name_attr",
        str,
        "cn",
        max_length=100,
        validate=_attribute,
        description="Attribute holding the display name (displayName on AD)",
    ),
    SettingSpec(
        "auth.ldap_group_search_base",
        str,
        "",
        max_length=1000,
        description="Where to look for groups holding the user (empty: the search base)",
    ),
    SettingSpec(
        "auth.ldap_group_role_map",
        str,
        "",
        max_length=20_000,
        validate=_role_map,
        description="JSON object of group DN to role name; the first group the user "
        "is in decides the role of a new account (empty: default role)",
    ),
    SettingSpec(
        "auth.ldap_starttls", bool, False, description="Upgrade ldap:// connections with StartTLS"
    ),
    SettingSpec(
        "auth.ldap_tls_verify",
        bool,
        True,
        description="Verify the directory's TLS certificate (turn off only for labs)",
    ),
    SettingSpec(
        "auth.ldap_ca_cert",
        str,
        "",
        max_length=100_000,
        validate=_pem,
        description="PEM CA certificate(s) to trust for the directory instead of the system store",
    ),
    SettingSpec(
        "auth.ldap_timeout_seconds",
        int,
        5,
        minimum=1,
        maximum=120,
        description="Connect and response timeout for directory requests",
    ),
)
