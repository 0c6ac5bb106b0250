"""The pack's hooks: the ``oidc`` login method and its settings."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hostgate import Account, KernelAPI, LoginMethod, SettingSpec, hookimpl

from .settings import OIDC_SETTINGS


def _providers(kernel: KernelAPI) -> Mapping[str, Any]:
    return {"oidc": bool(kernel.settings.get("auth.oidc_enabled"))}


def _can_sign_in(kernel: KernelAPI, setting: Callable[[str], Any], account: Account) -> bool:
    """An account OIDC created, while OIDC login is on."""
    return bool(setting("auth.oidc_enabled")) and account.auth_provider == "oidc"


@hookimpl
def register_login_methods() -> Sequence[LoginMethod]:
    """``GET /auth/oidc/authorize`` and ``GET /auth/oidc/callback``."""
    from .routes import blueprint

    return [
        LoginMethod(
            name="oidc", blueprint=blueprint, providers=_providers, can_sign_in=_can_sign_in
        )
    ]


@hookimpl
def register_settings() -> Sequence[SettingSpec]:
    """Client secret, redirect URI, scopes, claims, TLS options and the role map."""
    return OIDC_SETTINGS
