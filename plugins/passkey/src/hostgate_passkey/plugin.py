"""The pack's hooks: the ``passkey`` login method, its second step and its settings."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hostgate import Account, KernelAPI, LoginMethod, SecondFactor, SettingSpec, hookimpl

from .settings import PASSKEY_SETTINGS


def _providers(kernel: KernelAPI) -> Mapping[str, Any]:
    return {"passkey": bool(kernel.settings.get("security.passkey_enabled"))}


async def _can_sign_in(kernel: KernelAPI, setting: Callable[[str], Any], account: Account) -> bool:
    """A registered passkey, while passkey login is on."""
    if not setting("security.passkey_enabled"):
        return False
    return await kernel.credentials.count(account.id, "passkey") > 0


@hookimpl
def register_login_methods() -> Sequence[LoginMethod]:
    """Passkey login under ``/auth/login/passkey`` and management under ``/profile/passkeys``."""
    from . import second_step  # noqa: F401 - its routes join the blueprint
    from .routes import blueprint

    return [
        LoginMethod(
            name="passkey", blueprint=blueprint, providers=_providers, can_sign_in=_can_sign_in
        )
    ]


@hookimpl
def register_second_factors() -> Sequence[SecondFactor]:
    """A registered passkey as the second step after a password."""
    return [SecondFactor(name="passkey", holds=_holds)]


async def _holds(kernel: KernelAPI, account: Account) -> bool:
    """A registered passkey, while passkeys are on."""
    return await _can_sign_in(kernel, kernel.settings.get, account)


@hookimpl
def register_settings() -> Sequence[SettingSpec]:
    """On/off, relying party id and origins, passkeys per user."""
    return PASSKEY_SETTINGS
