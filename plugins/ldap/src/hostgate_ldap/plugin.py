"""The pack's hooks: the ``ldap`` login method and its settings."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hostgate import Account, ClientInfo, KernelAPI, LoginMethod, SettingSpec, hookimpl

from .settings import LDAP_SETTINGS


def _providers(kernel: KernelAPI) -> Mapping[str, Any]:
    return {"ldap": bool(kernel.settings.get("auth.ldap_enabled"))}


async def _check_password(
    kernel: KernelAPI, username: str, password: str, client: ClientInfo
) -> Account:
    from .routes import directory_sign_in

    return await directory_sign_in(kernel, username, password, client)


def _can_sign_in(kernel: KernelAPI, setting: Callable[[str], Any], account: Account) -> bool:
    """An account LDAP created, while LDAP login is on."""
    return bool(setting("auth.ldap_enabled")) and account.auth_provider == "ldap"


@hookimpl
def register_login_methods() -> Sequence[LoginMethod]:
    """``POST /auth/login/ldap`` and ``POST /auth/ldap/test``."""
    from .routes import blueprint

    return [
        LoginMethod(
            name="ldap",
            blueprint=blueprint,
            providers=_providers,
            can_sign_in=_can_sign_in,
            check_password=_check_password,
        )
    ]


@hookimpl
def register_settings() -> Sequence[SettingSpec]:
    """Bind password, filters, attributes, TLS options and the group-to-role map."""
    return LDAP_SETTINGS
