"""The pack's hooks: the ``oidc`` login method and its settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hostgate import KernelAPI, LoginMethod, SettingSpec, hookimpl

from .settings import OIDC_SETTINGS


def _providers(kernel: KernelAPI) -> Mapping[str, Any]:
    return {"oidc": bool(kernel.settings.get("auth.oidc_enabled"))}


@hookimpl
def register_login_methods() -> Sequence[LoginMethod]:
    """``GET /auth/oidc/authorize`` and ``GET /auth/oidc/callback``."""
    from .routes import blueprint

    return [LoginMethod(name="oidc", blueprint=blueprint, providers=_providers)]


@hookimpl
def register_settings() -> Sequence[SettingSpec]:
    """Client secret, redirect URI, scopes, claims, TLS options and the role map."""
    return OIDC_SETTINGS
