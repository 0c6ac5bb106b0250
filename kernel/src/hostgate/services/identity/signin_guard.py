"""Nobody locks everyone out: a settings change must leave some administrator a way in.

An administrator is a user whose role holds ``settings.manage`` (who could turn a
login method back on). A way in is a login method that is on under the changed
settings and that this account can use: a local password for a local account with
one (``auth.local_enabled``), and whatever each login pack's ``can_sign_in`` says
(a registered passkey, an LDAP or OIDC account while that method is on). A change
after which no administrator has one is refused, naming the settings; a change made
while nobody had one already (the state ``hostgate settings set`` repairs) is let
through, since it cannot make things worse.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlmodel import col, select

from ...db.models.identity import Role, User
from ...errors import Conflict

if TYPE_CHECKING:
    from ...contract import KernelAPI
    from ...db.engine import Database
    from ...descriptors import LoginMethod
    from ..settings import Settings

log = logging.getLogger("hostgate.settings")

ADMIN_PERMISSION = "settings.manage"
LOCAL_SETTING = "auth.local_enabled"


class SignInGuard:
    """Refuses a settings change after which no administrator could sign in."""

    def __init__(
        self,
        *,
        db: Database,
        settings: Settings,
        login_methods: Mapping[str, LoginMethod],
        kernel: KernelAPI,
    ) -> None:
        self.db = db
        self.settings = settings
        self.login_methods = login_methods
        self.kernel = kernel

    async def administrators(self) -> Sequence[User]:
        """Every user whose role may change settings and who is not suspended."""
        async with self.db.session() as session:
            roles = (await session.exec(select(Role))).all()
            admin_roles = [role.id for role in roles if ADMIN_PERMISSION in role.permissions]
            if not admin_roles:
                return []
            query = select(User).where(
                col(User.role_id).in_(admin_roles), col(User.suspended).is_(False)
            )
            return list((await session.exec(query)).all())

    async def ways_in(self, user: User, setting: Callable[[str], Any]) -> list[str]:
        """The login methods ``user`` could sign in with under ``setting``."""
        methods: list[str] = []
        if setting(LOCAL_SETTING) and user.auth_provider == "local" and user.password_hash:
            methods.append("local")
        for name, method in sorted(self.login_methods.items()):
            if method.can_sign_in is None:
                continue
            try:
                answer = method.can_sign_in(self.kernel, setting, user)
                if inspect.isawaitable(answer):
                    answer = await answer
            except Exception:
                # a broken pack's check counts as no way in: the change is refused, not let by
                log.exception("login method %s: can_sign_in failed", name)
                continue
            if answer:
                methods.append(name)
        return methods

    async def methods_in_use(self, setting: Callable[[str], Any]) -> set[str]:
        """The login methods some administrator could sign in with under ``setting``."""
        found: set[str] = set()
        for user in await self.administrators():
            found.update(await self.ways_in(user, setting))
        return found

    async def check(self, clean: Mapping[str, Any]) -> None:
        """Refuse (409 ``would_lock_out``) ``clean`` if it leaves no administrator a way in."""
        if not clean:
            return

        def after(key: str) -> Any:
            return clean[key] if key in clean else self.settings.get(key)

        if await self.methods_in_use(after):
            return
        before = await self.methods_in_use(self.settings.get)
        if not before:
            return  # nobody could before either: a repair is never refused
        raise Conflict(
            f"Refused: after changing {', '.join(sorted(clean))} no administrator (a user "
            f"with {ADMIN_PERMISSION}) could sign in. Keep on a login method an "
            f"administrator can use now: {', '.join(sorted(before))}",
            code="would_lock_out",
        )

    async def check_suspension(self, user_id: str) -> None:
        """Refuse (409 ``would_lock_out``) suspending the last administrator with a way in."""
        before = False
        for user in await self.administrators():
            if not await self.ways_in(user, self.settings.get):
                continue
            if user.id != user_id:
                return
            before = True
        if before:
            raise Conflict(
                f"Refused: no other administrator (a user with {ADMIN_PERMISSION}) could "
                "sign in while this account is suspended. Give another user a way in first.",
                code="would_lock_out",
            )
