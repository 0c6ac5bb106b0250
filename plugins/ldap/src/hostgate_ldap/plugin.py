"""The pack's hooks: the ``ldap`` login method and its settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hostgate import KernelAPI, LoginMethod, SettingSpec, hookimpl

from .settings import LDAP_SETTINGS


def _providers(kernel: KernelAPI) -> Mapping[str, Any]:
    return {"ldap": bool(kernel.settings.get("auth.ldap_enabled"))}


@hookimpl
def register_login_methods() -> Sequence[LoginMethod]:
    """``POST /auth/login/ldap`` and ``POST /auth/ldap/test``."""
    from .routes import blueprint

    return [LoginMethod(name="ldap", blueprint=blueprint, providers=_providers)]


@hookimpl
def register_settings() -> Sequence[SettingSpec]:
    """Bind password, filters, attributes, TLS options and the group-to-role map."""
    return LDAP_SETTINGS
