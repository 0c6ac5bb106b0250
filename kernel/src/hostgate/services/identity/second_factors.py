"""Which second sign-in steps an account holds: the kernel's TOTP and the packs' own.

A pack offers a step through ``register_second_factors`` (the passkey pack: a
registered passkey). Holding any of them counts as having set up two-step
verification for ``security.require_mfa``; after a correct password the account is
asked for one of them (``Logins.login_local``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .onboarding import mfa_required

if TYPE_CHECKING:
    from ...contract import Account, KernelAPI
    from ...descriptors import SecondFactor
    from ..settings import Settings

log = logging.getLogger("hostgate.logins")

TOTP = "totp"


class SecondFactors:
    """The registered second steps and the question "which does this account hold?"."""

    def __init__(
        self, factors: Mapping[str, SecondFactor], *, settings: Settings, kernel: KernelAPI
    ) -> None:
        if TOTP in factors:
            raise ValueError(f"second factor name {TOTP!r} is the kernel's own")
        self.factors = dict(sorted(factors.items()))
        self.settings = settings
        self.kernel = kernel

    async def held(self, user: Account, *, totp: bool) -> list[str]:
        """The methods ``user`` could answer a second step with: ``totp`` first, then the packs'.

        ``totp``: whether the account has TOTP on (the kernel's own column).
        """
        return ([TOTP] if totp else []) + await self.pack_held(user)

    async def set_up(self, user: Account, *, totp: bool, role_name: str) -> bool:
        """Whether ``user`` has set up two-step verification as ``security.require_mfa`` asks.

        TOTP or any pack's step counts. The packs are asked only when the role requires
        a second step (otherwise nothing depends on the answer).
        """
        if totp:
            return True
        if not self.factors or not mfa_required(self.settings, role_name):
            return False
        return bool(await self.pack_held(user))

    async def pack_held(self, user: Account) -> list[str]:
        """The packs' methods ``user`` holds (a check that fails counts as not held)."""
        found: list[str] = []
        for name, factor in self.factors.items():
            try:
                answer = factor.holds(self.kernel, user)
                if inspect.isawaitable(answer):
                    answer = await answer
            except Exception:
                # a broken pack's check never lets anyone past: it counts as nothing held
                log.exception("second factor %s: holds failed", name)
                continue
            if answer:
                found.append(name)
        return found
