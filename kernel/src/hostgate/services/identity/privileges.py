"""The privilege rules of user and role administration: nobody climbs above their own role.

Holding ``users.manage`` or ``roles.manage`` lets a caller administer others, but
only below or beside themselves: they may not grant a role holding a permission
they do not hold (creating a user, changing a user's role, their own included,
creating or editing a role), and they may not act on a user or a role whose
permissions exceed their own (reset, delete, unlock, change). A peer, holding
the same permissions, may be administered. The recovery CLI (``actor`` None)
runs with the machine's authority and is not bound by these rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ...errors import PermissionDenied

if TYPE_CHECKING:
    from .identity import Caller

ESCALATION = "privilege_escalation"
OUTRANKED = "target_outranks_you"


def missing(actor: Caller, permissions: Iterable[str]) -> list[str]:
    """The permissions in ``permissions`` the actor does not hold, in the given order."""
    return [p for p in dict.fromkeys(permissions) if not actor.can(p)]


def check_grant(actor: Caller | None, permissions: Iterable[str], *, what: str) -> None:
    """403 when ``what`` (a role being granted or written) holds a permission the actor lacks."""
    if actor is None:
        return
    lacking = missing(actor, permissions)
    if lacking:
        raise PermissionDenied(
            f"You cannot grant {what}: it holds permissions you do not hold yourself "
            f"({', '.join(lacking)})",
            code=ESCALATION,
        )


def check_target(
    actor: Caller | None, permissions: Iterable[str], *, action: str, kind: str = "user"
) -> None:
    """403 when the target of ``action``, a user or a role, holds a permission the actor lacks."""
    if actor is None:
        return
    lacking = missing(actor, permissions)
    if lacking:
        raise PermissionDenied(
            f"You cannot {action}: that {kind}'s permissions exceed your own "
            f"({', '.join(lacking)})",
            code=OUTRANKED,
        )
